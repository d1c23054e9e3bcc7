"""Simultaneous inference for a family of comparisons that share their reference, their
training runs or their trained models: the max-t critical value of each comparison and its
adjusted p-value, from the comparisons' joint distribution rather than Bonferroni's bound.

Why: every arm is compared with one reference (a many-to-one family, Dunnett's case), and
one trained run is evaluated in several settings, so the comparisons' statistics are
correlated; Bonferroni's alpha/m ignores that and widens every interval. The statistics
t_i = D_i / SE_i are taken to be jointly multivariate t with the correlation of the D_i
(estimated from the runs) and each comparison's own degrees of freedom (Hasler and Hothorn's
approximation for heteroscedastic many-to-one contrasts). The distribution of max |t| is
drawn by Monte Carlo from a fixed seed, so a report is reproducible to the last digit and a
comparison's interval leaves out 0 exactly when its adjusted p is below the level.
"""

from __future__ import annotations

import math

import numpy as np

DRAWS = 100_000  # Monte Carlo draws of max |t| (the 95% quantile to about 0.01)


def correlation(cov: np.ndarray) -> np.ndarray:
    """The correlation matrix of ``cov``, made positive semi-definite (negative eigenvalues
    of an estimate from few runs set to zero); NaN rows (no variance) become independent."""
    cov = np.asarray(cov, dtype=np.float64)
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    ok = np.isfinite(sd) & (sd > 0)
    r = np.eye(len(cov))
    if ok.sum() > 1:
        sub = cov[np.ix_(ok, ok)] / np.outer(sd[ok], sd[ok])
        sub = np.nan_to_num((sub + sub.T) / 2, nan=0.0)
        vals, vecs = np.linalg.eigh(sub)
        fixed = (vecs * np.clip(vals, 0.0, None)) @ vecs.T
        scale = np.sqrt(np.clip(np.diag(fixed), 1e-12, None))
        r[np.ix_(ok, ok)] = fixed / np.outer(scale, scale)
    return r


def max_t(cov: np.ndarray, dfs: np.ndarray, stats: np.ndarray, level: float = 0.95,
          draws: int = DRAWS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(critical value, adjusted two-sided p) of each comparison of a family: ``cov`` the
    covariance of the differences, ``dfs`` each one's degrees of freedom, ``stats`` its t
    statistic. A family of one is the t test itself."""
    dfs = np.asarray(dfs, dtype=np.float64)
    stats = np.abs(np.asarray(stats, dtype=np.float64))
    m = len(stats)
    crit, p_adj = np.full(m, np.nan), np.full(m, np.nan)
    live = np.isfinite(stats) & ~np.isnan(dfs)
    if m == 0 or not live.any():
        return crit, p_adj
    if live.sum() == 1:
        from scipy.stats import norm, t

        i = int(np.flatnonzero(live)[0])
        q = 0.5 + level / 2
        crit[i] = float(norm.ppf(q) if not np.isfinite(dfs[i]) else t.ppf(q, dfs[i]))
        p_adj[i] = float(2 * (norm.sf(stats[i]) if not np.isfinite(dfs[i])
                              else t.sf(stats[i], dfs[i])))
        return crit, p_adj
    index = np.flatnonzero(live)
    r = correlation(np.asarray(cov, dtype=np.float64)[np.ix_(index, index)])
    gen = np.random.default_rng(seed)
    vals, vecs = np.linalg.eigh(r)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    largest = np.abs(gen.standard_normal((draws, len(index))) @ root.T).max(axis=1)
    for n, df in enumerate(np.unique(dfs[index])):
        if np.isfinite(df):  # each df its own chi-square draws, from the same seed
            chi = np.random.default_rng([seed, n + 1]).chisquare(df, draws)
            scaled = largest / np.sqrt(chi / df)
        else:
            scaled = largest
        mine = index[dfs[index] == df]
        crit[mine] = float(np.quantile(scaled, level))
        p_adj[mine] = [float(np.mean(scaled >= s)) for s in stats[mine]]
    # never below the comparison's own p (the draws cannot resolve the far tail)
    from scipy.stats import norm, t

    own = np.where(np.isfinite(dfs), 2 * t.sf(stats, np.where(np.isfinite(dfs), dfs, 1.0)),
                   2 * norm.sf(stats))
    p_adj[live] = np.maximum(p_adj[live], own[live])
    return crit, p_adj


def fixed_sequence(p_values: list[float], alpha: float = 0.05) -> list[bool]:
    """Which hypotheses of an ordered sequence are rejected: each at the full ``alpha``
    while every one before it was (the family-wise error stays at ``alpha``)."""
    out, going = [], True
    for p in p_values:
        going = going and math.isfinite(p) and p < alpha
        out.append(going)
    return out


def holm_rejects(p_values: list[float], alpha: float = 0.05) -> list[bool]:
    """Holm's step-down rejections at family-wise ``alpha``."""
    order = sorted(range(len(p_values)), key=lambda i: (not math.isfinite(p_values[i]),
                                                        p_values[i]))
    out, m = [False] * len(p_values), len(p_values)
    for rank, i in enumerate(order):
        if not (math.isfinite(p_values[i]) and p_values[i] < alpha / (m - rank)):
            break
        out[i] = True
    return out
