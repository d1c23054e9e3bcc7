"""Intervals and tests that respect how the numbers were produced.

Episodes of one task are correlated (an easy task is easy under every harness and run), so
intervals resample whole tasks (a cluster bootstrap) and paired tests treat the task as the
unit: differences between two arms are formed on the same task x harness x seed x run, then
averaged within each task before a sign-flip permutation test or a Wilcoxon signed-rank test.
Several comparisons are adjusted together with Holm's step-down method.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from hscale.analysis.naming import default_reference, is_base_model, order_methods
from hscale.analysis.passk import final_step

CLUSTER = ("benchmark", "task_id")
PAIR = ("benchmark", "setting", "harness", "task_id", "seed", "run")
GROUP = ("source", "experiment", "model", "algorithm")


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
    sums = agg["sum"].unstack(list(by), fill_value=0.0)
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
    """Holm step-down adjusted p-values (NaNs stay NaN and do not count as tests)."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="holm")[1]
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


def sign_flip_tests(x: np.ndarray, n_resamples: int = 9999, seed: int = 0) -> np.ndarray:
    """Two-sided p-values of paired sign-flip permutation tests of mean = 0, one per column.

    Exact (all 2^n sign patterns) when that is no more than ``n_resamples``, else Monte Carlo
    with the (1 + hits) / (1 + resamples) correction, as scipy.stats.permutation_test does.
    Columns share the sign patterns, so many tests cost one matrix product.
    """
    x = np.atleast_2d(np.asarray(x, dtype=np.float64).T).T
    n = x.shape[0]
    observed = np.abs(x.mean(axis=0))
    tol = 1e-12 * np.maximum(1.0, observed)
    if 2**n <= n_resamples:
        signs = 1.0 - 2.0 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
        return np.mean(np.abs(signs @ x) / n >= observed - tol, axis=0)
    gen = np.random.default_rng(seed)
    hits = np.zeros(x.shape[1])
    total = x.sum(axis=0)
    for start in range(0, n_resamples, 4000):  # batches keep memory at 4000 x n
        size = min(4000, n_resamples - start)
        raw = gen.integers(0, 256, size=(size, (n + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(raw, axis=1, count=n).astype(np.float64)  # fair coin flips
        flipped = 2.0 * (bits @ x) - total  # sums of +-x, one BLAS call
        hits += np.sum(np.abs(flipped) / n >= observed - tol, axis=0)
    return (hits + 1) / (n_resamples + 1)


def sign_flip_test(x: np.ndarray, n_resamples: int = 9999, seed: int = 0) -> float:
    """One paired sign-flip test (see :func:`sign_flip_tests`)."""
    return float(sign_flip_tests(np.asarray(x, dtype=np.float64)[:, None], n_resamples, seed)[0])


def paired_test(cluster_means: np.ndarray, test: str = "permutation", n_resamples: int = 9999,
                seed: int = 0) -> float:
    """Two-sided p-value that the mean per-task difference is zero."""
    x = np.asarray(cluster_means, dtype=np.float64)
    if len(x) < 2 or np.allclose(x, 0):
        return 1.0 if len(x) else float("nan")
    if test == "wilcoxon":
        from scipy.stats import wilcoxon

        return float(wilcoxon(x, zero_method="wilcox").pvalue)
    if test != "permutation":
        raise ValueError(f"test must be 'permutation' or 'wilcoxon', not {test!r}")
    return sign_flip_test(x, n_resamples, seed)


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


def compare_arms(episodes: pd.DataFrame, reference: str | None = None,
                 settings: Sequence[str] = ("in_space",), test: str = "permutation",
                 value: str = "success", n_boot: int = 2000, n_resamples: int = 9999,
                 seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Every arm against the reference, per experiment group and setting, Holm-adjusted.

    ``diff`` is the mean paired difference in percentage points with a cluster-bootstrap
    interval over tasks; ``p`` comes from the per-task differences; ``p_holm`` adjusts all
    rows of the returned table together. The base model (no RL) is not an arm: see
    :func:`rl_gains`.
    """
    return _compare(episodes, against_arm(reference), settings, test, value, n_boot,
                    n_resamples, seed, level)


def rl_gains(episodes: pd.DataFrame, settings: Sequence[str] = ("base", "in_space",
                                                                 "out_of_space"),
             test: str = "permutation", value: str = "success", n_boot: int = 2000,
             n_resamples: int = 9999, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """What RL added: every arm against its group's base model (the starting model evaluated
    on the same episodes at step 0), per setting, with the same intervals, tests and Holm
    adjustment as :func:`compare_arms`. Empty when no base-model run was evaluated."""
    return _compare(episodes, against_base_model, settings, test, value, n_boot, n_resamples,
                    seed, level)


def _compare(episodes: pd.DataFrame, pick: Pick, settings: Sequence[str], test: str, value: str,
             n_boot: int, n_resamples: int, seed: int, level: float) -> pd.DataFrame:
    """Paired comparisons per group x setting; ``pick(methods)`` -> (reference, compared)."""
    episodes = final_step(episodes)
    episodes = episodes[episodes["setting"].isin(list(settings))]
    rows = []
    for g, (key, part) in enumerate(episodes.groupby(list(GROUP), observed=True, sort=False)):
        ref, methods = pick(order_methods(part["method"].unique()))
        if ref is None or len(methods) < 2:
            continue
        diffs = paired_differences(part, ref, methods, value)
        per_task = diffs.groupby(["setting", "method", *CLUSTER], observed=True)["diff"].agg(
            ["sum", "count"])
        ident = {**dict(zip(GROUP, map(str, key), strict=True)), "reference": ref}
        for setting, block in per_task.groupby(level="setting", observed=True, sort=False):
            found = _compare_block(block.droplevel("setting"), test, n_boot, n_resamples,
                                   level, [seed, g])
            rows += [{**ident, "setting": str(setting), **row} for row in found]
    out = pd.DataFrame(rows, columns=[*GROUP, "setting", "method", "reference", "pairs",
                                      "tasks", "diff", "lo", "hi", "p"])
    out["p_holm"] = holm(out["p"].to_numpy()) if len(out) else []
    out["test"] = test
    return out


def _compare_block(block: pd.DataFrame, test: str, n_boot: int, n_resamples: int,
                   level: float, rng: list[int]) -> list[dict]:
    """All arms of one group x setting: per-task sums and counts, clusters as rows."""
    sums = block["sum"].unstack("method", fill_value=0.0)
    counts = block["count"].unstack("method", fill_value=0)
    est, lo, hi = cluster_bootstrap_many(sums.to_numpy(), counts.to_numpy(), n_boot, level, rng)
    means = (sums / counts.where(counts > 0)).to_numpy()
    complete = ~np.isnan(means).any(axis=0)
    p = np.full(means.shape[1], np.nan)
    if test == "permutation" and complete.any():
        batch = means[:, complete]
        zero = np.all(np.isclose(batch, 0), axis=0)
        p[complete] = np.where(zero, 1.0, sign_flip_tests(batch, n_resamples, rng[0]))
    for j in np.flatnonzero(np.isnan(p)):
        p[j] = paired_test(means[~np.isnan(means[:, j]), j], test, n_resamples, rng[0])
    return [{"method": str(name), "pairs": int(counts[name].sum()),
             "tasks": int((counts[name] > 0).sum()), "diff": est[j] * 100, "lo": lo[j] * 100,
             "hi": hi[j] * 100, "p": p[j]} for j, name in enumerate(sums.columns)]
