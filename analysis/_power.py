"""Power of a paired Pass@1 comparison: the minimum detectable effect of a design, the power
of a test, and the seeds x tasks x runs a wanted power needs.

Why: a pilot's intervals say how precise *its* differences are; planning needs the parts of
that imprecision, because seeds, tasks and runs cost differently and shrink different parts.
The parts, the variance of a difference at any design and its degrees of freedom are the
model of hscale.analysis._components, the same one the report's intervals and tests use, so a
report's MDE is exactly what ``hscale power`` says of the same comparison.

The test is the report's: t = D / SE with the Satterthwaite degrees of freedom, two-sided at
alpha / m (Bonferroni over the m comparisons of a family, the level of its simultaneous
intervals). Power is the noncentral t's; the MDE is the difference detected with the wanted
power (about (t_{df, 1-alpha/(2m)} + t_{df, power}) * SE).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

import pandas as pd

from hscale.analysis._components import (  # noqa: F401  (the model, re-exported for planning)
    COMPONENTS,
    LABELS,
    Components,
    StudySize,
    combined_df,
    design_terms,
    estimate,
    pooled,
    satterthwaite,
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


def design_se(values: Mapping[str, float], design: StudySize) -> tuple[float, float, float]:
    """(SE, the test's degrees of freedom, the statistic's) of an in-space difference at
    ``design`` under ``values``, as the report estimates it
    (hscale.analysis._components.design_terms)."""
    if any(isinstance(v, float) and math.isnan(v) for v in values.values()):
        return math.nan, math.nan, math.nan
    terms = design_terms(values, design)
    return math.sqrt(sum(v for v, _ in terms)), combined_df(terms), satterthwaite(terms)


def pilot_design(diffs: pd.DataFrame) -> StudySize:
    """The nominal sizes of a pilot's paired cells."""
    task = ["benchmark", "task_id"] if "benchmark" in diffs.columns else ["task_id"]
    s = int(diffs["seed"].nunique())
    t = int(diffs[task].drop_duplicates().shape[0])
    h = int(diffs["harness"].astype(str).nunique())
    r = max(1, int(round(diffs.groupby("seed", observed=True)["run"].nunique().median())))
    e = max(1, int(round(len(diffs) / (s * r))))
    return StudySize(s, t, h, r, None if e >= t * h else e)


# -- planning ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Costs:
    """What a seed of an arm costs beyond its in-space episodes: its training rollouts, the
    settings evaluated (each about as many episodes a run as in-space) and the greedy pass
    (one more run of episodes)."""

    train: float = 1024.0
    settings: int = 1
    greedy: bool = False


def cost(design: StudySize, costs: Costs | float) -> float:
    """Rollouts a design costs per arm: training runs plus every evaluation episode."""
    costs = costs if isinstance(costs, Costs) else Costs(float(costs))
    passes = design.runs + int(costs.greedy)
    return design.seeds * (costs.train + passes * design.per_run() * costs.settings)


def _row(change: str, d: StudySize, values: Mapping[str, float], effect: float, m: int,
         alpha: float, power: float, costs: Costs | float) -> dict:
    se, df, spread = design_se(values, d)
    return {"change": change, "seeds": d.seeds, "tasks": d.tasks, "runs": d.runs,
            "episodes": d.seeds * d.runs * d.per_run(), "cost": cost(d, costs),
            "se_pp": 100 * se, "df": df,
            "mde_pp": 100 * mde(se, m, alpha, power, df, spread),
            "power": power_at(effect, se, m, alpha, df, spread)}


def options(values: Mapping[str, float], current: StudySize, effect_pp: float, m: int = 1,
            alpha: float = 0.05, power: float = 0.8, train: Costs | float = 1024.0,
            cheapest: int = 3) -> pd.DataFrame:
    """Designs reaching ``power`` for ``effect_pp``: more seeds alone, more tasks alone,
    more runs alone (each the least that suffices), and the ``cheapest`` overall; the
    current design first. Cost: :func:`cost` per arm (``train``: its training rollouts a
    seed, or the whole :class:`Costs`)."""
    effect = effect_pp / 100
    args = (values, effect, m, alpha, power, train)
    rows = [_row("current", current, *args)]
    tasks = sorted({current.tasks, *(math.ceil(current.tasks * f) for f in (1.5, 2, 3, 4, 6))})
    alone = {"seeds": [replace(current, seeds=s) for s in range(current.seeds + 1, 21)],
             "tasks": [replace(current, tasks=t) for t in tasks if t > current.tasks],
             "runs": [replace(current, runs=r) for r in range(current.runs + 1, 11)]}
    for what, designs in alone.items():
        for d in designs:
            row = _row(f"more {what}", d, *args)
            if row["power"] >= power:
                rows.append(row)
                break
    grid = [_row("cheapest", StudySize(s, t, current.harnesses, r, current.episodes), *args)
            for s in range(2, 21) for t in tasks for r in range(1, 11)]
    ok = sorted((g for g in grid if g["power"] >= power), key=lambda g: (g["cost"], g["seeds"]))
    seen = {(r["seeds"], r["tasks"], r["runs"]) for r in rows}
    for g in ok:
        if len([r for r in rows if r["change"] == "cheapest"]) >= cheapest:
            break
        if (g["seeds"], g["tasks"], g["runs"]) not in seen:
            seen.add((g["seeds"], g["tasks"], g["runs"]))
            rows.append(g)
    return pd.DataFrame(rows)


def floor_se(values: Mapping[str, float], design: StudySize) -> float:
    """SE left with unlimited seeds and runs: the task and harness parts of this design."""
    return math.sqrt(values.get("task", 0.0) / design.tasks
                     + values.get("harness", 0.0) / design.harnesses)


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
