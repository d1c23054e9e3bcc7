"""Intervals and tests that respect how the numbers were produced.

Arms are compared as training runs are: hscale.analysis._components models a paired
difference with training seeds, tasks, harnesses and evaluation runs as sources of variance,
and :func:`compare` reads each comparison's interval, t test and minimum detectable effect off
that one model. A family of comparisons (every arm against the reference; every arm against
the base model) is judged together with simultaneous intervals, so a verdict and the interval
drawn beside it never disagree.

Descriptive intervals of one arm's success (:func:`bootstrap_ci`) resample whole tasks (a
cluster bootstrap): an easy task is easy under every harness and run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from hscale.analysis._components import COMPONENTS
from hscale.analysis._naming import default_reference, is_base_model, order_methods
from hscale.analysis._passk import final_step

CLUSTER = ("benchmark", "task_id")
PAIR = ("benchmark", "setting", "harness", "task_id", "seed", "run")
GROUP = ("source", "experiment", "model", "algorithm")
# settings whose harnesses are a sample of a space (their interaction with the arm is an
# error term); the others name their harnesses (the base harness, out-of-space ones)
SAMPLED = ("in_space",)


def _resample_counts(clusters: int, n_boot: int, rng) -> np.ndarray:
    """(n_boot, clusters) multiplicities of clusters drawn with replacement."""
    gen = np.random.default_rng(rng)
    picks = gen.integers(0, clusters, size=(n_boot, clusters))
    picks += np.arange(n_boot)[:, None] * clusters
    return np.bincount(picks.ravel(), minlength=n_boot * clusters).reshape(n_boot, clusters)


def cluster_bootstrap_many(sums: np.ndarray, counts: np.ndarray, n_boot: int = 2000,
                           level: float = 0.95, rng: np.random.Generator | int | None = 0
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ratio estimates sum(sums)/sum(counts) per column, with percentile intervals.

    Rows are clusters (tasks); every resample draws clusters with replacement, so a cluster's
    rows stay together and the interval answers "what if another set of tasks had been
    drawn". All columns share the resamples (common random numbers): one matrix product.
    """
    sums = np.atleast_2d(np.asarray(sums, dtype=np.float64).T).T
    counts = np.atleast_2d(np.asarray(counts, dtype=np.float64).T).T
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = sums.sum(axis=0) / counts.sum(axis=0)
    nan = np.full(sums.shape[1], np.nan)
    if sums.shape[0] < 2 or n_boot < 1:
        return estimate, nan, nan.copy()
    weights = _resample_counts(sums.shape[0], n_boot, rng).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = (weights @ sums) / (weights @ counts)
    tail = (1.0 - level) / 2.0
    with np.errstate(all="ignore"):
        lo, hi = np.nanquantile(stats, [tail, 1.0 - tail], axis=0)
    return estimate, lo, hi


def cluster_bootstrap(sums: np.ndarray, counts: np.ndarray, n_boot: int = 2000,
                      level: float = 0.95, rng: np.random.Generator | int | None = 0
                      ) -> tuple[float, float, float]:
    """One ratio estimate and its cluster-bootstrap percentile interval."""
    est, lo, hi = cluster_bootstrap_many(np.asarray(sums, dtype=np.float64)[:, None],
                                         np.asarray(counts, dtype=np.float64)[:, None],
                                         n_boot, level, rng)
    return float(est[0]), float(lo[0]), float(hi[0])


def bootstrap_ci(episodes: pd.DataFrame, by: Sequence[str], value: str = "success",
                 cluster: Sequence[str] = CLUSTER, n_boot: int = 2000, level: float = 0.95,
                 seed: int = 0, scale: float = 100.0) -> pd.DataFrame:
    """Per ``by`` group: mean of ``value`` (x scale) with a cluster-bootstrap interval.

    Groups evaluated on the same clusters share one batch of resamples.
    """
    columns = [*by, "mean", "lo", "hi", "clusters"]
    agg = episodes.groupby([*by, *cluster], observed=True, sort=False)[value].agg(["sum", "count"])
    if agg.empty:
        return pd.DataFrame(columns=columns)
    sums = agg["sum"].astype(np.float64).unstack(list(by), fill_value=0.0)
    counts = agg["count"].unstack(list(by), fill_value=0)
    present = counts.to_numpy() > 0
    est, lo, hi = (np.full(sums.shape[1], np.nan) for _ in range(3))
    batches = pd.Series(range(sums.shape[1])).groupby([present[:, j].tobytes()
                                                       for j in range(sums.shape[1])])
    for i, (_, cols) in enumerate(batches):
        rows = present[:, cols.iloc[0]]
        est[cols], lo[cols], hi[cols] = cluster_bootstrap_many(
            sums.to_numpy()[rows][:, cols], counts.to_numpy()[rows][:, cols], n_boot, level,
            [seed, i])
    keys = sums.columns.to_frame(index=False).astype(str)
    keys.columns = list(by)
    return keys.assign(mean=est * scale, lo=lo * scale, hi=hi * scale,
                       clusters=present.sum(axis=0))[columns]


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (NaNs stay NaN and do not count as tests): sorted
    ascending, the i-th (from 0) times m - i, made monotone, capped at 1. Written out
    because statsmodels' ``multipletests(method="holm")`` runs ``gc.collect()`` on every
    call (a sixth of a second each with a report's objects alive)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if len(ok):
        order = ok[np.argsort(p[ok], kind="stable")]
        scaled = p[order] * (len(ok) - np.arange(len(ok)))
        out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def _factorize(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype(np.int64), pd.Index(column.cat.categories)
    codes, uniques = pd.factorize(column)
    return codes.astype(np.int64), pd.Index(uniques)


def paired_differences(episodes: pd.DataFrame, reference: str, others: Sequence[str],
                       value: str = "success") -> pd.DataFrame:
    """``other - reference`` on every task x harness x seed x run both arms evaluated.

    Integer codes and bincounts instead of a pivot: a million rows pair up in a blink.
    Repeated rows of one pair and arm are averaged first.
    """
    empty = pd.DataFrame(columns=[*PAIR, "method", "diff"])
    m_codes, m_names = _factorize(episodes["method"])
    m_names = [str(m) for m in m_names]
    if reference not in m_names:
        return empty
    parts = [_factorize(episodes[c]) for c in PAIR]
    dims = tuple(max(len(u), 1) for _, u in parts)
    pair_codes, pair_keys = pd.factorize(np.ravel_multi_index([c for c, _ in parts], dims))
    size = len(pair_keys) * len(m_names)
    flat = pair_codes * len(m_names) + m_codes
    values = episodes[value].to_numpy(dtype=np.float64)
    counts = np.bincount(flat, minlength=size).reshape(len(pair_keys), len(m_names))
    sums = np.bincount(flat, weights=values, minlength=size).reshape(counts.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    ref = means[:, m_names.index(reference)]
    keys = np.unravel_index(pair_keys, dims)
    out = []
    for name in others:
        if name == reference or name not in m_names:
            continue
        diff = means[:, m_names.index(name)] - ref
        ok = ~np.isnan(diff)
        cols = {c: _take(u, k[ok]) for c, (_, u), k in zip(PAIR, parts, keys, strict=True)}
        out.append(pd.DataFrame({**cols, "method": name, "diff": diff[ok]}))
    return pd.concat(out, ignore_index=True) if out else empty


def _take(uniques: pd.Index, codes: np.ndarray):
    if uniques.dtype == object or isinstance(uniques.dtype, pd.StringDtype):
        return pd.Categorical.from_codes(codes, uniques)
    return uniques.to_numpy()[codes]


Pick = Callable[[list[str]], tuple[str | None, list[str]]]


def against_arm(reference: str | None) -> Pick:
    """How a group's methods pair up in :func:`compare_arms`: every arm against
    ``reference`` when it is an arm of the group, else the default one; the base model (no
    RL) is not an arm. ``pick(methods)`` -> (reference, compared), (None, []) for none."""
    def pick(methods: list[str]) -> tuple[str | None, list[str]]:
        arms = [m for m in methods if not is_base_model(m)]
        if not arms:
            return None, []
        return (reference if reference in arms else default_reference(arms)), arms

    return pick


def against_base_model(methods: list[str]) -> tuple[str | None, list[str]]:
    """How a group's methods pair up in :func:`rl_gains`: every arm against the group's base
    model (no RL); (None, []) when it has none."""
    base = [m for m in methods if is_base_model(m)]
    return (base[0], methods) if base else (None, [])


def pairing(reference: str | None) -> Pick:
    """The pairing a comparison against ``reference`` uses: the base model's when it is
    one, else the arms'."""
    if reference is not None and is_base_model(reference):
        return against_base_model
    return against_arm(reference)



def comparison_blocks(episodes: pd.DataFrame, pick: Pick, settings: Sequence[str],
                      value: str = "success") -> Iterator[tuple[dict, pd.DataFrame]]:
    """(identity, paired differences) of every comparison ``pick`` makes, per experiment
    group and setting, at each run's final step."""
    episodes = final_step(episodes)
    episodes = episodes[episodes["setting"].isin(list(settings))]
    for key, part in episodes.groupby(list(GROUP), observed=True, sort=False):
        ref, methods = pick(order_methods(part["method"].unique()))
        if ref is None or len(methods) < 2:
            continue
        diffs = paired_differences(part, ref, methods, value)
        ident = {**dict(zip(GROUP, map(str, key), strict=True)), "reference": ref}
        for (setting, method), block in diffs.groupby(["setting", "method"], observed=True,
                                                      sort=False):
            yield {**ident, "setting": str(setting), "method": str(method)}, block


def paired_blocks(episodes: pd.DataFrame, settings: Sequence[str] = ("in_space",),
                  reference: str | None = None) -> Iterator[tuple[dict, pd.DataFrame]]:
    """(identity, paired differences) of every arm against ``reference`` (the base model's
    pairing when it is the base model), per experiment group and setting."""
    yield from comparison_blocks(episodes, pairing(reference), settings)


COLUMNS = [*GROUP, "setting", "method", "reference", "seeds", "tasks", "pairs", "diff", "se",
           "df", "df_spread", "p", "m", "p_adj", "lo", "hi", "lo_each", "hi_each", "mde",
           "note"]
VARIANCES = [f"var_{name}" for name in COMPONENTS]  # the model's parts, for hscale power


def compare(episodes: pd.DataFrame, pick: Pick, settings: Sequence[str],
            value: str = "success", level: float = 0.95, power: float = 0.8) -> pd.DataFrame:
    """One family of paired comparisons (hscale.analysis._components' model): every
    comparison's mean difference (pp), its SE and Satterthwaite degrees of freedom, the t
    test's p, and the family's simultaneous intervals.

    The m comparisons are judged together by Bonferroni's single step: ``p_adj`` = min(1,
    m p), ``lo``/``hi`` = diff -+ t_{df, 1-(1-level)/(2m)} SE, so an interval leaves out 0
    exactly when ``p_adj`` < 1 - level, and the interval drawn is the one the verdict uses
    (cut to [-100, +100] pp, where a difference of success rates lies).
    ``lo_each``/``hi_each`` are each comparison's own interval at ``level``; ``mde`` the
    smallest difference the family's test detects with ``power`` (``df_spread``: the
    statistic's Satterthwaite degrees of freedom, which power reads); ``var_*`` the variance
    components behind the SE (proportion scale; the seed part from the training runs).
    """
    from hscale.analysis._components import contrasts
    from hscale.analysis._power import crit, mde

    family: dict[tuple, dict[str, pd.DataFrame]] = {}
    for ident, block in comparison_blocks(episodes, pick, settings, value):
        family.setdefault(tuple(v for k, v in ident.items() if k != "method"), {})[
            ident["method"]] = block
    rows = []
    for key, blocks in family.items():
        ident = dict(zip([*GROUP, "reference", "setting"], key, strict=True))
        crossed = ("task", "harness") if ident["setting"] in SAMPLED else ("task",)
        for method, found in contrasts(blocks, crossed).items():
            block = blocks[method]
            rows.append({**ident, "method": method, "seeds": found.seeds, "pairs": len(block),
                         "tasks": int(block[list(CLUSTER)].drop_duplicates().shape[0]),
                         "diff": 100 * found.diff, "se": 100 * found.se, "df": found.df,
                         "df_spread": found.spread_df,
                         "p": _t_p(found.diff, found.se, found.df),
                         "note": "; ".join(found.notes),
                         **{f"var_{k}": v for k, v in found.components.values.items()}})
    out = pd.DataFrame(rows, columns=[c for c in [*COLUMNS, *VARIANCES] if c not in (
        "m", "p_adj", "lo", "hi", "lo_each", "hi_each", "mde")])
    m = max(len(out), 1)
    alpha = 1.0 - level
    out["m"] = len(out)
    out["p_adj"] = np.minimum(1.0, out["p"].to_numpy(dtype=np.float64) * m)
    for suffix, family in (("", m), ("_each", 1)):
        half = np.array([crit(family, alpha, df) * se if np.isfinite(se) else np.nan
                         for se, df in zip(out["se"], out["df"], strict=True)])
        # a difference of success rates lies in [-100, +100] pp: so does its interval
        out["lo" + suffix] = (out["diff"] - half).clip(lower=-100.0)
        out["hi" + suffix] = (out["diff"] + half).clip(upper=100.0)
    out["mde"] = [mde(se, m, alpha, power, df, spread) for se, df, spread in
                  zip(out["se"], out["df"], out["df_spread"], strict=True)]
    return out[[*COLUMNS, *VARIANCES]]


def _t_p(mean: float, se: float, df: float) -> float:
    """Two-sided p of t = mean / se with ``df`` degrees of freedom (normal when infinite)."""
    from scipy.stats import norm, t

    if not np.isfinite(se) or np.isnan(df):
        return float("nan")
    if se == 0:
        return 1.0 if mean == 0 else 0.0
    stat = abs(mean) / se
    return float(2 * (norm.sf(stat) if not np.isfinite(df) else t.sf(stat, df)))


def arm_intervals(episodes: pd.DataFrame, by: Sequence[str] = ("method", "setting"),
                  value: str = "success", level: float = 0.95) -> pd.DataFrame:
    """Per ``by`` group at the final step: mean of ``value`` (pp) with an interval from the
    comparisons' model (each arm's level, its runs' variance pooled over the arms of its
    setting): over training runs and tasks (and in-space harnesses), not tasks alone."""
    from hscale.analysis._components import contrasts
    from hscale.analysis._power import crit

    episodes = final_step(episodes).assign(diff=lambda e: e[value].astype(np.float64))
    outer = [c for c in by if c != "method"]
    rows = []
    for key, part in (episodes.groupby(outer, observed=True, sort=False) if outer
                      else [((), episodes)]):
        ident = dict(zip(outer, map(str, key if isinstance(key, tuple) else (key,)),
                         strict=True))
        blocks = {str(m): b for m, b in part.groupby("method", observed=True, sort=False)}
        crossed = ("task", "harness") if ident.get("setting") in SAMPLED else ("task",)
        for method, found in contrasts(blocks, crossed, levels=True).items():
            half = crit(1, 1 - level, found.df) * found.se
            rows.append({**ident, "method": method, "mean": 100 * found.diff,
                         "lo": 100 * (found.diff - half), "hi": 100 * (found.diff + half),
                         "seeds": found.seeds})
    return pd.DataFrame(rows, columns=[*by, "mean", "lo", "hi", "seeds"])


def compare_arms(episodes: pd.DataFrame, reference: str | None = None,
                 settings: Sequence[str] = ("in_space",), value: str = "success",
                 level: float = 0.95, power: float = 0.8) -> pd.DataFrame:
    """Every arm against the reference, per experiment group and setting: one family
    (:func:`compare`). The base model (no RL) is not an arm: see :func:`rl_gains`."""
    return compare(episodes, against_arm(reference), settings, value, level, power)


def rl_gains(episodes: pd.DataFrame, settings: Sequence[str] = ("base", "in_space",
                                                                 "out_of_space"),
             value: str = "success", level: float = 0.95, power: float = 0.8
             ) -> pd.DataFrame:
    """What RL added: every arm against its group's base model (the starting model evaluated
    on the same episodes at step 0), per setting, as one family (:func:`compare`). Empty when
    no base-model run was evaluated."""
    return compare(episodes, against_base_model, settings, value, level, power)
