"""Power of one test: the minimum detectable effect at an SE, the power of a two-sided test
(the noncentral t's, with its degrees of freedom), and a spec's evaluation design. The
planning of seeds an arm is hscale.analysis._planning, on the report's own model.
"""

from __future__ import annotations

import math

from hscale.analysis._components import (  # noqa: F401  (the model, re-exported for planning)
    COMPONENTS,
    LABELS,
    Components,
    StudySize,
    estimate,
    pooled,
    variance,
)


def crit(m: int = 1, alpha: float = 0.05, df: float = math.inf) -> float:
    """Two-sided critical value of t at alpha/m (the simultaneous intervals' multiplier)."""
    from scipy.stats import norm, t

    q = 1 - alpha / (2 * max(int(m), 1))
    return float(norm.ppf(q) if not math.isfinite(df) else t.ppf(q, df))


def mde(se: float, m: int = 1, alpha: float = 0.05, power: float = 0.8,
        df: float = math.inf, spread_df: float | None = None,
        critical: float | None = None) -> float:
    """The smallest true difference the two-sided test detects with ``power`` (same unit as
    ``se``): the effect at which :func:`power_at` equals ``power``. The test rejects past
    ``critical`` (a family's max-t value), by default t at alpha/m."""
    from scipy.optimize import brentq

    if math.isnan(df) or not math.isfinite(se) or (critical is not None
                                                   and not math.isfinite(critical)):
        return math.nan
    if se <= 0:
        return 0.0

    def gap(x: float) -> float:
        return power_at(x, 1.0, m, alpha, df, spread_df, critical) - power

    hi = (critical or crit(m, alpha, df)) + 10.0
    while gap(hi) < 0:
        hi *= 2
    return se * brentq(gap, 0.0, hi, xtol=1e-10)


def power_at(effect: float, se: float, m: int = 1, alpha: float = 0.05,
             df: float = math.inf, spread_df: float | None = None,
             critical: float | None = None) -> float:
    """Probability that the two-sided test, with ``df`` degrees of freedom, detects a true
    ``effect``: the noncentral t's, whose tails are ``spread_df``'s (by default the test's),
    both tails. The test rejects past ``critical``, by default t at alpha/m."""
    from scipy.stats import nct, norm

    if not se > 0:
        return 1.0
    c, shift = (critical if critical is not None else crit(m, alpha, df)), abs(effect) / se
    tails = df if spread_df is None or math.isnan(spread_df) else spread_df
    if math.isfinite(tails) and tails < 1e4:
        upper, lower = float(nct.sf(c, tails, shift)), float(nct.cdf(-c, tails, shift))
        if math.isfinite(upper):  # the far tail underflows to NaN in scipy when negligible
            return upper + (lower if math.isfinite(lower) else 0.0)
    return float(norm.sf(c - shift) + norm.cdf(-c - shift))


def design_from_spec(spec) -> tuple[StudySize, list[str], float]:
    """(in-space design, arm names, training rollouts a run) of an ExperimentSpec."""
    ev = spec.evaluation
    benches = len(ev.benchmarks or [None])
    h = max(int(ev.in_space), 1)
    tasks = int(ev.tasks) * benches
    per = min(max(1, math.ceil(ev.episodes / h)), int(ev.tasks)) if ev.episodes else ev.tasks
    episodes = None if per >= ev.tasks else per * h * benches
    train = float(spec.steps * spec.algorithm.tasks_per_step * spec.algorithm.rollouts)
    return StudySize(len(spec.seeds), tasks, h, int(ev.runs), episodes), list(spec.arms), train
