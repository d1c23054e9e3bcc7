"""Descriptive intervals of one arm's success: whole tasks resampled (a cluster bootstrap),
since an easy task is easy under every harness and run."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

CLUSTER = ("benchmark", "task_id")


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
