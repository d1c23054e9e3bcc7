"""What the harness components do to Pass@1, with training runs as the replicates.

Each run (an arm's seed) plays the in-space harnesses of the eval set, an orthogonal array.
Per run, its Pass@1 on each harness is regressed on the components' levels (effect coding:
a factor's level effects sum to zero; a linear probability model, so a level that always
fails or always succeeds is an effect like any other, never a separation that breaks a
fit). Each run so gives one vector of effects; the arm's effects are their mean, and their
uncertainty is how much they differ from run to run (pooled over the arms of an experiment:
every run is a replicate of its arm's effects), so a run that learned its own harness
effects is noise, not a finding.

A term (a factor's main effect, or a pair's interaction) is tested with Hotelling's T^2 of
its coefficients over the arm's runs against the pooled covariance, an F test that can never
be negative. Interactions are tested only where the eval set separates them from the main
effects; how much each main effect is aliased with two-factor interactions is stated from the
design, since a strength-2 array of 18 runs mixes them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from hscale.analysis._effects import _coding, with_levels
from hscale.analysis._stats import GROUP, holm
from hscale.contracts import Setting

EFFECT_COLUMNS = ["factor", "level", "effect", "lo", "hi", "runs"]
TEST_COLUMNS = ["term", "kind", "df1", "df2", "F", "p", "p_holm", "runs", "note"]


def _design(configs: pd.DataFrame, factors: Sequence[str], counts: dict[str, int],
            pairs: Sequence[tuple[str, str]] = ()) -> tuple[np.ndarray, dict[str, slice]]:
    blocks, spans, at = [np.ones((len(configs), 1))], {}, 1
    coded = {f: _coding(configs[f].to_numpy(), counts[f]) for f in factors}
    for f in factors:
        blocks.append(coded[f])
        spans[f] = slice(at, at + coded[f].shape[1])
        at += coded[f].shape[1]
    for a, b in pairs:
        block = np.einsum("ni,nj->nij", coded[a], coded[b]).reshape(len(configs), -1)
        blocks.append(block)
        spans[f"{a}:{b}"] = slice(at, at + block.shape[1])
        at += block.shape[1]
    return np.hstack(blocks), spans


def _rates(part: pd.DataFrame) -> pd.DataFrame:
    """runs x harnesses: each run's Pass@1 on each harness."""
    return (part.groupby(["seed", "harness"], observed=True)["success"].mean()
            .unstack("harness"))


def _coefficients(rates: pd.DataFrame, x: np.ndarray, harnesses: list[str]) -> np.ndarray:
    """One row of coefficients a run (NaN where its harnesses do not identify them)."""
    out = np.full((len(rates), x.shape[1]), np.nan)
    for i, (_, row) in enumerate(rates.reindex(columns=harnesses).iterrows()):
        seen = row.notna().to_numpy()
        if np.linalg.matrix_rank(x[seen]) == x.shape[1]:
            out[i] = np.linalg.lstsq(x[seen], row.to_numpy()[seen], rcond=None)[0]
    return out


def _hotelling(mean: np.ndarray, cov: np.ndarray, runs: int, dof: float
               ) -> tuple[float, float, float, float]:
    """(F, df1, df2, p) of Hotelling's T^2 for ``mean`` (a term's coefficients averaged over
    ``runs`` runs) against a pooled covariance ``cov`` of one run's coefficients with
    ``dof`` degrees of freedom."""
    from scipy.stats import f as fisher

    if not cov.size or not np.isfinite(cov).all() or not np.isfinite(mean).all():
        return math.nan, float(len(mean)), math.nan, math.nan
    q = int(np.linalg.matrix_rank(cov))
    if q < 1 or dof - q + 1 < 1:
        return math.nan, float(q), math.nan, math.nan
    t2 = float(runs * mean @ np.linalg.pinv(cov) @ mean)
    df2 = dof - q + 1
    stat = max(t2 * df2 / (q * dof), 0.0)
    return stat, float(q), float(df2), float(fisher.sf(stat, q, df2))


def aliasing(configs: pd.DataFrame, factors: Sequence[str], counts: dict[str, int]
             ) -> dict[str, float]:
    """Per factor: the largest alias coefficient of its main-effect columns with any
    two-factor interaction column not involving it (0: orthogonal, as in a full factorial
    or a resolution-V design)."""
    pairs = list(combinations(factors, 2))
    x1, spans1 = _design(configs, factors, counts)
    x2, spans2 = _design(configs, factors, counts, pairs)
    inter = {k: v for k, v in spans2.items() if ":" in k}
    alias = np.linalg.pinv(x1) @ x2
    out = {}
    for f in factors:
        cols = [c for k, s in inter.items() if f not in k.split(":")
                for c in range(s.start, s.stop)]
        out[f] = float(np.abs(alias[spans1[f]][:, cols]).max()) if cols else 0.0
    return out


def component_effects(episodes: pd.DataFrame, by: Sequence[str] = (*GROUP, "method"),
                      settings: Sequence[str] = (Setting.IN_SPACE,), level: float = 0.95,
                      interactions: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(effects, tests): each arm's level effects (pp, with intervals over its runs) and
    the F tests of each term, Holm-adjusted within the arm."""
    from scipy.stats import t as student

    ep, factors = with_levels(episodes, settings)
    effects, tests = [], []
    if ep.empty or not factors:
        return (pd.DataFrame(columns=[*by, *EFFECT_COLUMNS]),
                pd.DataFrame(columns=[*by, *TEST_COLUMNS]))
    outer = [c for c in by if c != "method"]
    for _, group in (ep.groupby(outer, observed=True, sort=False) if outer else [((), ep)]):
        configs = group.drop_duplicates("harness").set_index("harness")[factors]
        configs.index = configs.index.astype(str)
        harnesses = list(configs.index)
        counts = {f: int(configs[f].max()) + 1 for f in factors}
        x, spans = _design(configs, factors, counts)
        arms = {str(m): _coefficients(_rates(p), x, harnesses)
                for m, p in group.groupby("method", observed=True, sort=False)}
        cov, dof = _pooled(arms)
        pairs = _pairs(configs, factors, counts, x.shape[1]) if interactions else {}
        fitted = {}
        for pair, (px, _) in pairs.items():
            if px is not None:
                per = {m: _coefficients(_rates(p), px, harnesses)
                       for m, p in group.groupby("method", observed=True, sort=False)}
                fitted[pair] = (per, *_pooled(per))
        alias = aliasing(configs, factors, counts)
        for method, coef in arms.items():
            ident = {**{c: str(group[c].iloc[0]) for c in outer}, "method": method}
            runs = int(np.isfinite(coef).all(axis=1).sum())
            mean = np.nanmean(coef, axis=0) if runs else np.full(x.shape[1], np.nan)
            half = student.ppf(0.5 + level / 2, dof) if dof >= 1 else math.nan
            for f in factors:
                for lv in range(counts[f]):
                    c = np.zeros(x.shape[1])
                    c[spans[f]] = -1.0 if lv == counts[f] - 1 else np.eye(counts[f] - 1)[lv]
                    se = math.sqrt(max(c @ cov @ c, 0.0) / runs) if runs and dof >= 1 \
                        else math.nan
                    effect = 100 * float(c @ mean)
                    effects.append({**ident, "factor": f, "level": lv, "effect": effect,
                                    "lo": effect - 100 * half * se,
                                    "hi": effect + 100 * half * se, "runs": runs})
            rows = []
            for f in factors:
                span = spans[f]
                found = _hotelling(mean[span], cov[span, span], runs, dof) if runs else \
                    (math.nan, float(span.stop - span.start), math.nan, math.nan)
                note = _note(runs, dof, found)
                if alias[f] > 1e-9:
                    note = "; ".join(filter(None, [note, f"partially aliased with two-factor "
                                                   f"interactions (largest alias "
                                                   f"{alias[f]:.2f})"]))
                rows.append({"term": f, "kind": "main", "df1": found[1], "df2": found[2],
                             "F": found[0], "p": found[3], "runs": runs, "note": note})
            for pair, (px, pspan) in pairs.items():
                if px is None:
                    rows.append({"term": pair, "kind": "interaction", "df1": float(pspan),
                                 "df2": math.nan, "F": math.nan, "p": math.nan, "runs": runs,
                                 "note": "aliased with the main effects in this eval set: "
                                         "not separable"})
                    continue
                per, pooled_p, dof_p = fitted[pair]
                coef_p = per[method]
                kept = np.isfinite(coef_p).all(axis=1)
                mean_p = coef_p[kept].mean(axis=0) if kept.any() else \
                    np.full(px.shape[1], np.nan)
                found = _hotelling(mean_p[pspan], pooled_p[pspan, pspan], int(kept.sum()),
                                   dof_p) if kept.any() else (math.nan, 0.0, math.nan,
                                                              math.nan)
                rows.append({"term": pair, "kind": "interaction", "df1": found[1],
                             "df2": found[2], "F": found[0], "p": found[3],
                             "runs": int(kept.sum()),
                             "note": _note(int(kept.sum()), dof_p, found)
                             or "fitted beside the main effects"})
            adjusted = holm([r["p"] for r in rows])
            tests += [{**ident, **r, "p_holm": p} for r, p in zip(rows, adjusted, strict=True)]
    return (pd.DataFrame(effects, columns=[*by, *EFFECT_COLUMNS]),
            pd.DataFrame(tests, columns=[*by, *TEST_COLUMNS]))


def _pairs(configs: pd.DataFrame, factors: Sequence[str], counts: dict[str, int],
           main: int) -> dict[str, tuple]:
    """pair -> (its design with the main effects, its columns' slice) where the eval set
    separates it from them (with a degree of freedom to spare), else (None, its width)."""
    out: dict[str, tuple] = {}
    for a, b in combinations(factors, 2):
        x, spans = _design(configs, factors, counts, [(a, b)])
        span = spans[f"{a}:{b}"]
        separable = np.linalg.matrix_rank(x) == x.shape[1] and x.shape[0] > x.shape[1]
        out[f"{a}:{b}"] = (x, span) if separable else (None, span.stop - span.start)
    return out


def _pooled(arms: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
    """The covariance of one run's coefficients, pooled over arms (each run a deviation
    from its own arm's mean), and its degrees of freedom."""
    devs, dof = [], 0
    for coef in arms.values():
        kept = coef[np.isfinite(coef).all(axis=1)]
        if len(kept) >= 2:
            devs.append(kept - kept.mean(axis=0))
            dof += len(kept) - 1
    if not devs:
        width = next(iter(arms.values())).shape[1] if arms else 0
        return np.full((width, width), np.nan), 0.0
    stacked = np.vstack(devs)
    return stacked.T @ stacked / dof, float(dof)


def _note(runs: int, dof: float, found: tuple) -> str:
    if runs < 1:
        return "no run evaluated every harness this term needs"
    if dof < 1:
        return "one seed an arm: runs are the replicates, so nothing to test against"
    if math.isnan(found[0]):
        return f"too few runs ({int(dof)} degrees of freedom pooled) for a term of " \
               f"{int(found[1])} coefficients"
    return ""
