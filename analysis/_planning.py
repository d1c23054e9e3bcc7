"""Seeds where they resolve the question: how many training runs each arm needs for its
comparisons to detect a difference with the wanted power, at the least total number of runs.

The model is the report's (hscale.analysis._stats.compare): a difference between arm j and
its reference has variance v_j / S_j + v_0 / S_0 + c_j, where v is one training run's
variance (its Pass@1 around the arm's), S the arm's seeds and c the crossed part (the arms'
interactions with tasks and harnesses, which more seeds do not shrink), with Welch's degrees
of freedom (hscale.analysis._components.welch_df). An arm whose runs vary more, or the
reference every comparison shares, may need more seeds than the rest: the plan searches the
reference's seeds and gives each other arm the fewest that reach the power, so the
allocation is unequal exactly where that pays (the square-root rule of many-to-one designs
falls out of it).

A pilot's run variance is itself an estimate from few seeds: :func:`variance_interval` gives
the range it could be (chi-square, 80%), and a plan is made at both ends, so the reader sees
how uncertain the answer is. :func:`staged` gives a staged design's power and expected seeds
(O'Brien-Fleming-type looks, hscale.analysis._hypotheses.spending_levels).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from hscale.analysis._components import welch_df

MIN_SEEDS, MAX_SEEDS = 2, 40


@dataclass(frozen=True)
class Question:
    """A comparison to resolve: ``arm`` against ``reference``, one training run's variance
    on each side (proportion scale: a run's Pass@1 around its arm's), the crossed variance
    (already over its tasks and harnesses); one- or two-sided at ``alpha``; ``family``: the
    max-t family it is judged in (None: its own test, as a confirmatory hypothesis is)."""

    arm: str
    reference: str
    var_arm: float
    var_ref: float
    crossed: float = 0.0
    crossed_df: float = math.inf
    sides: int = 2
    alpha: float = 0.05
    family: str | None = "comparisons"
    label: str = ""

    @property
    def key(self) -> str:
        return self.label or f"{self.arm} vs {self.reference}"


@dataclass
class Plan:
    """Seeds an arm, each question's power and SE at them, and the total runs."""

    seeds: dict[str, int]
    power: dict[str, float] = field(default_factory=dict)
    se: dict[str, float] = field(default_factory=dict)
    reachable: bool = True

    @property
    def total(self) -> int:
        return sum(self.seeds.values())


def question_se(q: Question, seeds: Mapping[str, int]) -> tuple[float, float]:
    """The question's SE and Welch degrees of freedom at ``seeds``, as the report makes
    them (each side's variance over its runs, with runs - 1 degrees of freedom)."""
    terms = [(q.var_arm / seeds[q.arm], seeds[q.arm] - 1.0),
             (q.var_ref / seeds[q.reference], seeds[q.reference] - 1.0)]
    if q.crossed > 0:
        terms.append((q.crossed, q.crossed_df))
    return math.sqrt(sum(v for v, _ in terms)), welch_df(terms)


def critical(questions: Sequence[Question], seeds: Mapping[str, int]) -> dict[str, float]:
    """Each question's critical value at ``seeds``: its own t for a question of no family,
    else the max-t of its family (the shared reference correlates its members)."""
    from scipy.stats import t as student

    from hscale.analysis._families import max_t

    out = {}
    families: dict[str, list[Question]] = {}
    for q in questions:
        if q.family is None:
            out[q.key] = float(student.ppf(1 - q.alpha / q.sides, question_se(q, seeds)[1]))
        else:
            families.setdefault(q.family, []).append(q)
    for members in families.values():
        found = [question_se(q, seeds) for q in members]
        cov = np.zeros((len(members), len(members)))
        for i, a in enumerate(members):
            for k, b in enumerate(members):
                cov[i, k] = found[i][0] ** 2 if i == k else \
                    a.var_ref / seeds[a.reference] if a.reference == b.reference else 0.0
        crit, _ = max_t(cov, np.array([df for _, df in found]), np.zeros(len(members)),
                        1 - members[0].alpha, draws=10_000)
        out.update({q.key: float(c) for q, c in zip(members, crit, strict=True)})
    return out


def plan_power(questions: Sequence[Question], seeds: Mapping[str, int], effect: float) -> Plan:
    """Each question's power to detect ``effect`` (proportion) at ``seeds``: the share of
    draws of the report's own test that reject, each draw a study's run variances
    (chi-square about the true ones), their Welch degrees of freedom (capped, as the report
    caps them) and the critical value at those; a family's question at the per-comparison
    level its max-t value has. (A noncentral t at the true variances would promise power
    the report's test does not have with few seeds.)"""
    found = _plan_power(tuple(questions), tuple(sorted(seeds.items())), effect)
    return Plan(dict(seeds), dict(found.power), dict(found.se))


@functools.lru_cache(maxsize=4096)
def _plan_power(questions: tuple[Question, ...], seeds: tuple[tuple[str, int], ...],
                effect: float) -> Plan:
    """:func:`plan_power`, remembered: a search visits the same allocation many times."""
    from scipy.stats import t as student

    at = dict(seeds)
    crit = critical(questions, at)
    plan = Plan(at)
    for q in questions:
        se, df = question_se(q, at)
        level = float(student.sf(crit[q.key], df)) * q.sides if math.isfinite(df) else \
            q.alpha
        plan.power[q.key] = _simulated(q, at, effect, level)
        plan.se[q.key] = se
    return plan


def _simulated(q: Question, seeds: Mapping[str, int], effect: float, level: float,
               draws: int = 4_000) -> float:
    """The chance that the report's test of ``q`` rejects at ``level`` (per comparison,
    ``q.sides``-sided), averaged over ``draws`` simulated studies' variance estimates
    (chi-square about the true ones; the report's capped Welch df). Given the estimates the
    normal difference rejects with a known chance, so only the variance is simulated, and
    the t quantile is read off a grid in 1/df, along which it is smooth."""
    from scipy.stats import norm
    from scipy.stats import t as student

    gen = np.random.default_rng(
        [seeds[q.arm], seeds[q.reference], int(1e6 * abs(effect)) % 2**31])
    parts = [(q.var_arm / seeds[q.arm], seeds[q.arm] - 1.0),
             (q.var_ref / seeds[q.reference], seeds[q.reference] - 1.0)]
    if q.crossed > 0:
        parts.append((q.crossed, q.crossed_df))
    if any(df < 1 for _, df in parts):
        return math.nan
    true_se = math.sqrt(sum(v for v, _ in parts))
    est = np.column_stack([v * (gen.chisquare(df, draws) / df if math.isfinite(df)
                                else np.ones(draws)) for v, df in parts])
    dfs = np.array([df for _, df in parts])
    total = est.sum(axis=1)
    spread = (est ** 2 / np.where(np.isfinite(dfs), dfs, np.inf)).sum(axis=1)
    satt = np.where(spread > 0, total ** 2 / np.where(spread > 0, spread, 1), np.inf)
    cap = np.min(np.where(np.isfinite(dfs), dfs, np.inf) * total[:, None] / est, axis=1)
    inverse = 1 / np.clip(np.minimum(satt, cap), 1.0, 1e6)
    grid = np.linspace(inverse.min(), inverse.max(), 129)
    bound = np.interp(inverse, grid, student.isf(level / q.sides, 1 / grid)) * np.sqrt(total)
    chance = norm.sf((bound - effect) / true_se)
    if q.sides == 2:
        chance = chance + norm.cdf((-bound - effect) / true_se)
    return float(chance.mean())


def _quick_power(q: Question, seeds: Mapping[str, int], effect: float) -> float:
    """The noncentral t's power at the true variances (its own test): fast, and a little
    above the report's, for the search; :func:`plan_power` checks what the search finds."""
    from scipy.stats import nct
    from scipy.stats import t as student

    se, df = question_se(q, seeds)
    if not (se > 0) or math.isnan(df):
        return math.nan
    df = min(df, 1e6)
    c = float(student.isf(q.alpha / q.sides, df))
    shift = effect / se
    upper = float(nct.sf(c, df, shift))
    return upper if q.sides == 1 else upper + float(nct.cdf(-c, df, shift))


def plan_seeds(questions: Sequence[Question], effect: float, power: float = 0.8,
               others: Mapping[str, int] | None = None, low: int = MIN_SEEDS,
               high: int = MAX_SEEDS) -> Plan:
    """The fewest runs in all at which every question detects ``effect`` with ``power``:
    for each number of reference seeds, each other arm the fewest that suffice (a fast
    noncentral-t search), then the weakest question's arm raised until the report's own
    test (:func:`plan_power`, the family's max-t included) reaches the power. Arms no
    question names keep ``others`` (their seeds)."""
    named = list(dict.fromkeys(n for q in questions for n in (q.arm, q.reference)))
    refs = list(dict.fromkeys(q.reference for q in questions))
    rest = {n: s for n, s in (others or {}).items() if n not in named}
    candidates = []
    for s_ref in range(low, high + 1):
        seeds = {**rest, **dict.fromkeys(named, low), **dict.fromkeys(refs, s_ref)}
        for q in questions:
            if q.arm in refs:
                continue
            while seeds[q.arm] < high and not _quick_power(q, seeds, effect) >= power:
                seeds[q.arm] += 1
        if all(_quick_power(q, seeds, effect) >= power for q in questions):
            candidates.append(seeds)
    candidates.sort(key=lambda s: sum(s.values()))
    best: Plan | None = None
    for seeds in candidates[:3]:  # the cheapest few, checked by the report's own test
        found = plan_power(questions, seeds, effect)
        while min(found.power.values()) < power:
            weakest = next(q for q in questions if q.key == min(found.power,
                                                                key=found.power.get))
            grow = weakest.arm if weakest.arm not in refs else weakest.reference
            if found.seeds[grow] >= high:
                break
            found = plan_power(questions, {**found.seeds, grow: found.seeds[grow] + 1},
                               effect)
        if min(found.power.values()) >= power and (best is None or found.total < best.total):
            best = found
    equal = equal_plan(questions, effect, power, others, low, high)
    if equal.reachable and (best is None or equal.total < best.total):
        best = equal
    if best is None:
        best = plan_power(questions, {**rest, **dict.fromkeys(named, high)}, effect)
        best.reachable = False
        return best
    shrunk = True
    while shrunk:  # no arm keeps a seed the power does not need
        shrunk = False
        for name in named:
            if best.seeds[name] > low:
                trial = {**best.seeds, name: best.seeds[name] - 1}
                mine = [q for q in questions if name in (q.arm, q.reference)]
                if min(_quick_power(q, trial, effect) for q in mine) < power - 0.1:
                    continue  # far short: not worth the report's own test
                fewer = plan_power(questions, trial, effect)
                if min(fewer.power.values()) >= power:
                    best, shrunk = fewer, True
    return best


def equal_plan(questions: Sequence[Question], effect: float, power: float = 0.8,
               others: Mapping[str, int] | None = None, low: int = MIN_SEEDS,
               high: int = MAX_SEEDS) -> Plan:
    """The same seeds for every arm a question names: the yardstick of :func:`plan_seeds`."""
    named = list(dict.fromkeys(n for q in questions for n in (q.arm, q.reference)))
    rest = {n: s for n, s in (others or {}).items() if n not in named}
    start = next((s for s in range(low, high + 1)
                  if all(_quick_power(q, {**rest, **dict.fromkeys(named, s)}, effect) >= power
                         for q in questions)), high)
    for s in range(start, high + 1):
        found = plan_power(questions, {**rest, **dict.fromkeys(named, s)}, effect)
        if min(found.power.values()) >= power:
            return found
    found.reachable = False
    return found


def scaled_questions(questions: Sequence[Question], factor: Mapping[str, float]) -> list[Question]:
    """The questions with each arm's run variance multiplied by ``factor[arm]`` (a pilot's
    variance at one end of its interval)."""
    return [replace(q, var_arm=q.var_arm * factor.get(q.arm, 1.0),
                    var_ref=q.var_ref * factor.get(q.reference, 1.0)) for q in questions]


def variance_interval(var: float, df: float, level: float = 0.8) -> tuple[float, float]:
    """Where a run variance estimated with ``df`` degrees of freedom could be (chi-square
    interval at ``level``): the pilot's uncertainty, said beside every plan made from it."""
    from scipy.stats import chi2

    if not (df >= 1 and math.isfinite(df)) or not var > 0:
        return var, var
    tail = (1 - level) / 2
    return var * df / chi2.ppf(1 - tail, df), var * df / chi2.ppf(tail, df)


def staged_design(se_full: float, df_full: float, stages: Sequence[int], effect: float,
           alpha: float = 0.05, sides: int = 1, draws: int = 100_000
           ) -> tuple[float, float]:
    """(power, expected seeds an arm) of a staged design whose last look has ``se_full``
    and ``df_full``: look l sees stages[l] seeds (SE as 1 / sqrt of them, degrees of freedom
    in proportion) and stops once its O'Brien-Fleming-type boundary (as a t quantile) is
    crossed. A normal approximation of the looks (the variance taken as known):
    benchmarks/calibration.py measures staged studies themselves."""
    from scipy.stats import t as student

    from hscale.analysis._hypotheses import spending_levels

    fractions = tuple(s / stages[-1] for s in stages)
    levels = np.asarray(spending_levels(fractions, alpha, sides == 2))
    t = np.asarray(fractions)
    dfs = np.maximum(df_full * t, 1.0) if math.isfinite(df_full) else np.full(len(t), 1e6)
    bounds = student.isf(levels / (2 if sides == 2 else 1), dfs)
    gen = np.random.default_rng(7)
    steps = np.diff(np.concatenate([[0.0], t]))
    paths = np.cumsum(gen.standard_normal((draws, len(t))) * np.sqrt(steps), axis=1)
    z = (paths + (effect / se_full) * t) / np.sqrt(t)
    crossed = (np.abs(z) if sides == 2 else z) >= bounds
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), len(t) - 1)
    return float(crossed.any(axis=1).mean()), float(np.asarray(stages)[first].mean())
