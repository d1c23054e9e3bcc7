"""What the harness components do to success, and how success falls with distance to training.

The held-out eval set is an orthogonal array, so every level of a component meets every level
of every other component equally often: a level's marginal mean is an unbiased main effect.
A logistic regression (effect coding: a factor's level effects sum to zero) gives the same
effects on the logit scale with Wald tests. Two-factor interactions are fitted all together
when the eval design separates them (a full factorial does), else one pair at a time beside
the main effects, and only where the design can separate that pair from them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from hscale.analysis._passk import final_step
from hscale.analysis._stats import CLUSTER, GROUP, bootstrap_ci, holm

PART = re.compile(r"([A-Za-z_]+)(\d+)")
MIN_CLUSTERS = 20  # below this, cluster-robust covariances are unreliable: quasi-binomial


def parse_harnesses(labels: Sequence[str]) -> pd.DataFrame:
    """Labels such as ``S0-T1-O2-C0-W1`` as a table of level indices (index: label).

    Labels that are not factor configurations (``oos/shell``) or name other factors than
    the first configuration label are left out.
    """
    rows, names = {}, None
    for label in dict.fromkeys(map(str, labels)):
        parts = [PART.fullmatch(p) for p in label.split("-")]
        if not all(parts):
            continue
        these = tuple(m.group(1) for m in parts)
        names = names or these
        if these == names:
            rows[label] = [int(m.group(2)) for m in parts]
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(names or ()))


def with_levels(episodes: pd.DataFrame, settings: Sequence[str] = ("in_space",)
                ) -> tuple[pd.DataFrame, list[str]]:
    """Final-step episodes of ``settings`` whose harness is a configuration, plus level columns."""
    ep = final_step(episodes)
    ep = ep[ep["setting"].isin(list(settings))]
    table = parse_harnesses(ep["harness"].astype(str).unique())
    ep = ep[ep["harness"].astype(str).isin(table.index)]
    codes = table.reindex(ep["harness"].astype(str).to_numpy())
    out = ep.reset_index(drop=True)
    for name in table.columns:
        out[name] = codes[name].to_numpy()
    return out, list(table.columns)


def main_effects(episodes: pd.DataFrame, by: Sequence[str] = (*GROUP, "method"),
                 settings: Sequence[str] = ("in_space",), n_boot: int = 2000,
                 seed: int = 0) -> pd.DataFrame:
    """Marginal success (%) of every level of every component, with intervals over tasks.

    ``effect`` is the level's mean minus the group's grand mean, in percentage points.
    """
    ep, factors = with_levels(episodes, settings)
    if ep.empty:
        return pd.DataFrame(columns=[*by, "factor", "level", "mean", "lo", "hi", "effect"])
    grand = ep.groupby(list(by), observed=True)["success"].mean().mul(100).rename("mean")
    grand = grand.reset_index().astype({c: str for c in by})
    parts = []
    for i, name in enumerate(factors):
        part = bootstrap_ci(ep, [*by, name], n_boot=n_boot, seed=seed + i)
        parts.append(part.rename(columns={name: "level"}).assign(factor=name))
    out = pd.concat(parts, ignore_index=True).merge(grand, on=list(by), suffixes=("", "_all"))
    out["effect"] = out["mean"] - out.pop("mean_all")
    out["level"] = out["level"].astype(int)
    return out[[*by, "factor", "level", "mean", "lo", "hi", "effect"]]


def _coding(levels: np.ndarray, count: int) -> np.ndarray:
    """Effect (sum-to-zero) coding: column l is +1 at level l, -1 at the last level."""
    cols = [(levels == lv).astype(float) - (levels == count - 1) for lv in range(count - 1)]
    return np.column_stack(cols) if cols else np.zeros((len(levels), 0))


def _design(frame: pd.DataFrame, factors: Sequence[str], counts: Mapping[str, int],
            pairs: Sequence[tuple[str, str]] = ()) -> tuple[np.ndarray, dict[str, slice]]:
    blocks, spans, at = [np.ones((len(frame), 1))], {}, 1
    for name in factors:
        blocks.append(_coding(frame[name].to_numpy(), counts[name]))
        spans[name] = slice(at, at + blocks[-1].shape[1])
        at += blocks[-1].shape[1]
    for pair in pairs:
        a, b = (blocks[1 + list(factors).index(f)] for f in pair)
        blocks.append(np.einsum("ni,nj->nij", a, b).reshape(len(frame), -1))
        spans[":".join(pair)] = slice(at, at + blocks[-1].shape[1])
        at += blocks[-1].shape[1]
    return np.hstack(blocks), spans


@dataclass
class _Cells:
    """Successes per harness x task: the data of one arm's fits."""

    configs: pd.DataFrame  # one row per harness: its levels
    harness: np.ndarray  # per cell: row of ``configs``
    cluster: np.ndarray  # per cell: task number
    y: np.ndarray  # per cell: successes
    n: np.ndarray  # per cell: episodes

    @property
    def clusters(self) -> int:
        return int(self.cluster.max()) + 1 if len(self.cluster) else 0


def _cells(part: pd.DataFrame, factors: Sequence[str]) -> _Cells:
    agg = (part.groupby(["harness", *CLUSTER], observed=True)["success"]
           .agg(["sum", "count"]).reset_index())
    configs = part.drop_duplicates("harness").set_index("harness")[list(factors)]
    configs.index = configs.index.astype(str)
    code = pd.Index(configs.index).get_indexer(agg["harness"].astype(str))
    cluster = agg.groupby(list(CLUSTER), observed=True).ngroup().to_numpy()
    return _Cells(configs.reset_index(drop=True), code, cluster,
                  agg["sum"].to_numpy(float), agg["count"].to_numpy(float))


def _fit(cells: _Cells, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """Binomial GLM on per-harness counts (statsmodels), then a covariance over tasks.

    The model has no task terms, so per-harness sums are sufficient for the estimates. The
    covariance is cluster-robust over tasks (sandwich with scores summed per task, G/(G-1)
    correction) when there are enough tasks, else quasi-binomial (Pearson scale over cells).
    """
    import statsmodels.api as sm

    y = np.bincount(cells.harness, cells.y, minlength=len(x))
    n = np.bincount(cells.harness, cells.n, minlength=len(x))
    result = sm.GLM(np.column_stack([y, n - y]), x, family=sm.families.Binomial()).fit()
    params, bread = np.asarray(result.params), np.asarray(result.cov_params())
    p = np.asarray(result.predict(x))[cells.harness]
    resid = cells.y - cells.n * p
    if cells.clusters >= MIN_CLUSTERS:
        scores = x[cells.harness] * resid[:, None]
        per_task = np.vstack([np.bincount(cells.cluster, scores[:, j], minlength=cells.clusters)
                              for j in range(x.shape[1])]).T
        g = cells.clusters
        return params, bread @ (per_task.T @ per_task) @ bread * g / (g - 1), "cluster(task)"
    dof = max(len(resid) - x.shape[1], 1)
    scale = float(np.sum(resid**2 / np.maximum(cells.n * p * (1 - p), 1e-12)) / dof)
    return params, bread * scale, "quasi-binomial"


def _wald(params: np.ndarray, vcov: np.ndarray, span: slice) -> tuple[float, int, float]:
    from scipy.stats import chi2

    b, v = params[span], vcov[span, span]
    stat = float(b @ np.linalg.pinv(v) @ b)
    return stat, len(b), float(chi2.sf(stat, len(b)))


def logit_effects(episodes: pd.DataFrame, by: Sequence[str] = (*GROUP, "method"),
                  settings: Sequence[str] = ("in_space",), interactions: bool = True
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Logit-scale level effects and Wald tests of main effects and two-factor interactions.

    Returns (effects: factor, level, coef, se per group; tests: term, kind, df, chi2, p,
    p_holm, cov, note per group). Holm adjusts the tests of each group together.
    """
    ep, factors = with_levels(episodes, settings)
    effects, tests = [], []
    for key, part in ep.groupby(list(by), observed=True, sort=False):
        ident = dict(zip(by, map(str, key if isinstance(key, tuple) else (key,)), strict=True))
        e, t = _group_effects(_cells(part, factors), factors, interactions)
        effects += [{**ident, **row} for row in e]
        tests += [{**ident, **row} for row in t]
    eff = pd.DataFrame(effects, columns=[*by, "factor", "level", "coef", "se"])
    out = pd.DataFrame(tests, columns=[*by, "term", "kind", "df", "chi2", "p", "cov", "note"])
    out["p_holm"] = out.groupby(list(by), sort=False)["p"].transform(
        lambda p: pd.Series(holm(p.to_numpy()), index=p.index)) if len(out) else []
    return eff, out


def _group_effects(cells: _Cells, factors: Sequence[str], interactions: bool
                   ) -> tuple[list[dict], list[dict]]:
    counts = {f: int(cells.configs[f].max()) + 1 for f in factors}
    x, spans = _design(cells.configs, factors, counts)
    try:
        params, vcov, cov = _fit(cells, x)
    except Exception as exc:  # separation or a singular design: say so, do not crash
        return [], [{"term": f, "kind": "main", "df": counts[f] - 1, "chi2": np.nan,
                     "p": np.nan, "cov": "", "note": f"fit failed: {exc}"} for f in factors]
    effects, tests = [], []
    for f in factors:
        effects += _level_effects(f, counts[f], spans[f], params, vcov)
        chi2, df, p = _wald(params, vcov, spans[f])
        tests.append({"term": f, "kind": "main", "df": df, "chi2": chi2, "p": p, "cov": cov,
                      "note": ""})
    if interactions:
        tests += _interactions(cells, factors, counts, x.shape[1])
    return effects, tests


def _level_effects(name: str, count: int, span: slice, params: np.ndarray,
                   vcov: np.ndarray) -> list[dict]:
    rows = []
    for level in range(count):
        c = np.zeros(len(params))
        c[span] = -1.0 if level == count - 1 else np.eye(count - 1)[level]
        rows.append({"factor": name, "level": level, "coef": float(c @ params),
                     "se": float(np.sqrt(max(c @ vcov @ c, 0.0)))})
    return rows


def _interactions(cells: _Cells, factors: Sequence[str], counts: Mapping[str, int],
                  main_columns: int) -> list[dict]:
    """All two-factor interactions in one model when the design separates them all (a full
    factorial does); otherwise each pair alone beside the main effects."""
    pairs = list(combinations(factors, 2))
    x, spans = _design(cells.configs, factors, counts, pairs)
    if np.linalg.matrix_rank(x) == x.shape[1]:
        try:
            params, vcov, cov = _fit(cells, x)
        except Exception as exc:
            return [_interaction_row(p, spans, note=f"fit failed: {exc}") for p in pairs]
        return [_interaction_row(p, spans, cov, _wald(params, vcov, spans[":".join(p)]),
                                 "fitted jointly with all pairs") for p in pairs]
    return [_interaction(cells, factors, counts, pair, main_columns) for pair in pairs]


def _interaction_row(pair: tuple[str, str], spans: Mapping[str, slice], cov: str = "",
                     test: tuple[float, int, float] | None = None, note: str = "") -> dict:
    term = ":".join(pair)
    df = spans[term].stop - spans[term].start
    chi2, df, p = test if test is not None else (np.nan, df, np.nan)
    return {"term": term, "kind": "interaction", "df": df, "chi2": chi2, "p": p, "cov": cov,
            "note": note}


def _interaction(cells: _Cells, factors: Sequence[str], counts: Mapping[str, int],
                 pair: tuple[str, str], main_columns: int) -> dict:
    x, spans = _design(cells.configs, factors, counts, [pair])
    rank = np.linalg.matrix_rank(x)
    if rank < x.shape[1]:
        df = spans[":".join(pair)].stop - spans[":".join(pair)].start
        return _interaction_row(pair, spans, note=(
            f"aliased in this eval design ({max(rank - main_columns, 0)} of {df} df "
            "separable from the main effects)"))
    try:
        params, vcov, cov = _fit(cells, x)
    except Exception as exc:
        return _interaction_row(pair, spans, note=f"fit failed: {exc}")
    return _interaction_row(pair, spans, cov, _wald(params, vcov, spans[":".join(pair)]),
                            "fitted alone beside the main effects")


def distance_to_training(episodes: pd.DataFrame,
                         train_sets: Mapping[tuple[str, str], Sequence[str]]) -> pd.Series:
    """Hamming distance from each row's harness to the nearest of its arm's training harnesses.

    NaN where the harness is not a configuration (out-of-space) or the arm's training set is
    unknown.
    """
    from hscale.design import distance_matrix

    keys = ["experiment", "method", "harness"]
    grouped = episodes.groupby(keys, observed=True, sort=False)
    combos = pd.DataFrame(list(grouped.groups), columns=keys).astype(str)
    found = parse_harnesses([*combos["harness"], *(h for s in train_sets.values() for h in s)])
    dist = np.full(len(combos), np.nan)
    for (exp, method), part in combos.groupby(["experiment", "method"]):
        train = [h for h in train_sets.get((exp, method), []) if h in found.index]
        rows = part[part["harness"].isin(found.index)]
        if train and len(rows):
            d = distance_matrix(found.loc[rows["harness"]].to_numpy(),
                                found.loc[train].to_numpy())
            dist[rows.index] = d.min(axis=1)
    codes = grouped.ngroup().to_numpy()
    return pd.Series(dist[codes], index=episodes.index, name="distance", dtype="float64")


def success_by_distance(episodes: pd.DataFrame,
                        train_sets: Mapping[tuple[str, str], Sequence[str]],
                        settings: Sequence[str] = ("base", "in_space"), n_boot: int = 2000,
                        seed: int = 0) -> pd.DataFrame:
    """Pass@1 (%) by Hamming distance to the nearest training configuration, per arm."""
    ep = final_step(episodes)
    ep = ep[ep["setting"].isin(list(settings))]
    ep = ep.assign(distance=distance_to_training(ep, train_sets)).dropna(subset=["distance"])
    by = [*GROUP, "method", "distance"]
    if ep.empty:
        return pd.DataFrame(columns=[*by, "harnesses", "mean", "lo", "hi", "clusters"])
    ep["distance"] = ep["distance"].astype(int)
    out = bootstrap_ci(ep, by, n_boot=n_boot, seed=seed)
    sizes = ep.groupby(by, observed=True)["harness"].nunique().rename("harnesses").reset_index()
    sizes[by] = sizes[by].astype(str)
    out = out.merge(sizes, on=by)
    out["distance"] = out["distance"].astype(int)
    return out[[*by, "harnesses", "mean", "lo", "hi", "clusters"]]
