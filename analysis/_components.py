"""The one statistical model of a paired Pass@1 difference: its variance components, the
variance of the mean difference at any design, and that variance's degrees of freedom.

Why one model: the report's intervals and tests, its minimum detectable effects and
``hscale power`` answer the same question ("how precise is this difference?"), so they must
use the same sources of variance. In RL the training run is the unit of replication (Agarwal
et al. 2021; Henderson et al. 2018): a study with three seeds per arm knows little about
training randomness, however many episodes each seed plays.

Model. Arms 0 (the reference) .. k are evaluated on the same cells (seed label s,
evaluation run r, harness h, task t). Arm j's success is

    y[j,s,r,h,t] = mu_j + u[j,s] + (cell effects) + b_j[t] + c_j[h] + ab_j[s,t] + w_j[s,r] + e

Cell effects (the task's, the harness's, the rotation a seed label evaluates) are shared by
the arms and cancel in the paired difference d = y_j - y_0. u[j,s] is what training run
(j, s) learned: arms' seeds are independent runs, so a seed label pairs two independent
training runs, and what pairs for real is the task, harness and evaluation run they play.
b and c are the arm's interactions with task and harness, ab what one run learned of a
task, w one evaluation run's shift, e the binary outcome. The difference's parts are

    d[s,r,h,t] = delta + a[s] + b[t] + c[h] + ab[s,t] + w[s,r] + e[s,r,h,t]

with a = u_j - u_0 and so on, all independent with mean 0, so the mean difference over N
paired cells has

    Var(D) = s2_seed/n_seed + s2_task/n_task + s2_harness/n_harness
             + s2_seed_task/n_seed_task + s2_run/n_run + s2_residual/N

where each n is the effective number of levels, N^2 / sum of squared level sizes (S seeds,
T tasks, ... in a balanced design). Tasks and harnesses count as draws from populations, so
an answer generalises to other tasks and harnesses as well as to other seeds.

Estimation, in two stages as for any crossed design with few replicates of its top level.
(1) Everything that varies from one training run to the next (a, ab, w, e) is read off the
training runs themselves: each run's mean difference on its seed label's cells, put in the
arms x seeds table (the reference's row 0), fitted by least squares with arm and seed-label
effects; the residual mean square is the variance of one run's mean, pooled over the arms
of the family, with k (S - 1) degrees of freedom (one-way ANOVA's pooled error, as Dunnett's
many-to-one comparisons and a mixed model with one run-level variance use it). (2) The arm's
interactions with tasks and harnesses, shared by all runs of the arm, come from moments of
the cell differences: two cells that share exactly the set G of {seed, task, harness, run}
have E[(d_i - d_j)^2 / 2] = the sum of the components they do not share; the mean per G is
fitted by non-negative least squares. With one seed per arm nothing estimates training
randomness: the within-run parts come from the moments too, and the interval covers tasks
and evaluation noise only, which the report says.

Degrees of freedom: Var(D) is a sum of terms, each estimated with its own degrees of freedom
(training runs: k (S - 1); tasks: T - 1; harnesses: H - 1; ...); the t interval and test use
the fewest among the terms that matter (:func:`combined_df`), so where training randomness
dominates, the interval is as wide as the seeds deserve.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

COMPONENTS = ("seed", "task", "harness", "seed_task", "run", "residual")
LABELS = {"seed_task": "seed×task"}
# atoms a pair of cells may share: seed, task, harness, run (run within seed)
_S, _T, _H, _R = 1, 2, 4, 8
NEED = {"seed": _S, "task": _T, "harness": _H, "seed_task": _S | _T, "run": _S | _R,
        "residual": _S | _T | _H | _R}
# aliased component -> the one it is counted in, tried in this order
FOLD = ("run", "seed_task")
RUN_LEVEL = ("seed", "seed_task", "run", "residual")  # what differs between training runs


@dataclass(frozen=True)
class StudySize:
    """Sizes of one comparison: per arm ``seeds``; ``episodes`` paired per seed and run
    (None: every task x harness)."""

    seeds: int
    tasks: int
    harnesses: int
    runs: int
    episodes: int | None = None
    arms: int = 2  # arms whose training runs pool one variance (the family's)

    def per_run(self) -> int:
        return self.episodes or self.tasks * self.harnesses

    def counts(self) -> dict[str, float]:
        """The divisor of each component in Var(D)."""
        s, t, h, r, e = self.seeds, self.tasks, self.harnesses, self.runs, self.per_run()
        n = s * r * e
        return {"seed": s, "task": min(t, n), "harness": min(h, n),
                "seed_task": s * min(t, r * e), "run": s * r, "residual": n}

    def dfs(self) -> dict[str, float]:
        """The degrees of freedom each component's estimate has at this size; ``runs``: the
        training runs' pooled variance (what the report reads a run's parts off)."""
        s, t, h, r = self.seeds, self.tasks, self.harnesses, self.runs
        counts = self.counts()
        t_seen = min(t, counts["task"])
        runs = (max(self.arms, 2) - 1) * (s - 1)
        return {"runs": runs, "seed": runs, "task": t_seen - 1,
                "harness": min(h, counts["harness"]) - 1,
                "seed_task": (s - 1) * (t_seen - 1), "run": s * (r - 1),
                "residual": counts["residual"] - s * r}


def variance(values: Mapping[str, float], counts: Mapping[str, float]) -> float:
    """Var(D) of the module docstring; NaN when a component that matters is unknown."""
    total = 0.0
    for name in COMPONENTS:
        v = values.get(name, 0.0)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return math.nan
        if v > 0:
            total += v / counts[name]
    return total


def design_terms(values: Mapping[str, float], design: StudySize,
                 crossed: Sequence[str] = ("task", "harness")) -> list[tuple[float, float]]:
    """Var(D) at ``design`` as the report estimates it: (variance, degrees of freedom) of
    the training runs' term (every part that differs between runs, one term read off the
    runs with k (S - 1) degrees of freedom; with one seed, its parts apiece) and of each
    crossed factor's."""
    counts, dfs = design.counts(), design.dfs()
    present = {k: float(values.get(k, 0.0) or 0.0) for k in COMPONENTS}
    runs = [(present[k] / counts[k], dfs[k]) for k in RUN_LEVEL if present[k] > 0]
    if design.seeds >= 2:
        runs = [(sum(v for v, _ in runs), dfs["runs"])]
    return runs + [(present[k] / counts[k], dfs[k]) for k in crossed if present[k] > 0]


SHARE = 0.1  # a term of Var(D) this large a share decides its degrees of freedom


def satterthwaite(terms: Sequence[tuple[float, float]]) -> float:
    """Satterthwaite's degrees of freedom of a sum of variance terms (value, its df): how
    heavy the tails of t = D / SE are (power uses it; the test uses :func:`combined_df`)."""
    live = [(v, df) for v, df in terms if v > 0]
    if not live:
        return math.inf
    if any(df < 1 for _, df in live):
        return math.nan
    total = sum(v for v, _ in live)
    return total * total / sum(v * v / df for v, df in live)


def welch_df(terms: Sequence[tuple[float, float]]) -> float:
    """Degrees of freedom of a sum of independent variance terms (value, its df), each an
    arm's run variance over its runs or a crossed part: Satterthwaite's, but no more than
    df_i / share_i for any term (share_i: its part of the sum). Why the cap: with a few
    seeds an arm whose runs diverge has its variance underestimated as often as not, and
    Satterthwaite's df then rises exactly when the statistic is inflated; the cap keeps the
    df near the dominant term's own, where Welch's test rejects a true null too often (5.9%
    at 5% with 3 seeds a side and a 36-fold variance ratio; 5.2% with the cap, 3.4% vs
    2.8% at equal variances: hscale.analysis._planted's studies, benchmarks/calibration.py)."""
    live = [(v, df) for v, df in terms if v > 0]
    if not live:
        return math.inf
    satt = satterthwaite(live)
    total = sum(v for v, _ in live)
    return float(min(satt, *(df * total / v for v, df in live)))


def combined_df(terms: Sequence[tuple[float, float]]) -> float:
    """Degrees of freedom of a sum of variance terms (value, its df): the fewest of any term
    holding at least :data:`SHARE` of the sum. Why not Satterthwaite's (sum v)^2 / sum(v^2 /
    df): computed from estimates, it grows exactly when the scarce term (training runs)
    happens to come out small, and its tests reject a true null too often (7-8% at 5% with
    three seeds in the planted studies); the fewest degrees of freedom among the terms that
    matter holds the level (hscale.analysis._calibration). Inf when nothing varies; NaN when
    a term that matters has nothing to estimate it with."""
    live = [(v, df) for v, df in terms if v > 0]
    if not live:
        return math.inf
    total = sum(v for v, _ in live)
    deciding = [df for v, df in live if v >= SHARE * total]
    if any(df < 1 for df in deciding):
        return math.nan
    return float(min(deciding))


@dataclass
class Components:
    """Variances of the paired difference (proportion scale), NaN where unknown, with the
    sizes and degrees of freedom of the cells they came from."""

    values: dict[str, float]
    counts: dict[str, float] = field(default_factory=dict)  # the cells' effective divisors
    notes: list[str] = field(default_factory=list)
    cells: int = 0
    dfs: dict[str, float] = field(default_factory=dict)
    seeds: int = 0

    def variance(self, counts: Mapping[str, float] | None = None) -> float:
        return variance(self.values, self.counts if counts is None else counts)


# -- estimation ----------------------------------------------------------------------------

def codes_of(diffs: pd.DataFrame) -> dict[int, np.ndarray]:
    """Integer codes of each atom (seed, task, harness, run within seed) of paired cells."""
    def group(cols: list[str]) -> np.ndarray:
        return diffs.groupby(cols, observed=True, sort=False).ngroup().to_numpy()

    task = ["benchmark", "task_id"] if "benchmark" in diffs.columns else ["task_id"]
    return {_S: group(["seed"]), _T: group(task), _H: group(["harness"]),
            _R: group(["seed", "run"])}


def _key(codes: dict[int, np.ndarray], atoms: int, n: int) -> np.ndarray:
    key = np.zeros(n, dtype=np.int64)
    for bit, code in codes.items():
        if atoms & bit:
            key = pd.factorize(key * (int(code.max()) + 1) + code)[0]
    return key


def _moments(d: np.ndarray, codes: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per set G of shared atoms: sum of (d_i - d_j)^2 / 2 and count over ordered pairs that
    share exactly G (inclusion-exclusion over 'share at least G')."""
    least_sum, least_cnt = np.zeros(16), np.zeros(16)
    for g in range(16):
        key = _key(codes, g, len(d))
        n = np.bincount(key).astype(np.float64)
        s, q = np.bincount(key, d), np.bincount(key, d * d)
        least_sum[g], least_cnt[g] = np.sum(n * q - s * s), np.sum(n * n - n)
    exact_sum, exact_cnt = np.zeros(16), np.zeros(16)
    for g in range(16):
        for sup in range(16):
            if sup & g == g:
                sign = -1.0 if bin(sup ^ g).count("1") % 2 else 1.0
                exact_sum[g] += sign * least_sum[sup]
                exact_cnt[g] += sign * least_cnt[sup]
    return exact_sum, exact_cnt


def _identifiable(x: np.ndarray, j: int) -> bool:
    rank = np.linalg.matrix_rank
    return rank(x) > rank(np.delete(x, j, axis=1)) if x.shape[1] > 1 else rank(x) == 1


def _effective(codes: dict[int, np.ndarray], n: int) -> dict[str, float]:
    out = {}
    for name, atoms in NEED.items():
        sizes = np.bincount(_key(codes, atoms, n)).astype(np.float64)
        out[name] = n * n / float(np.sum(sizes * sizes)) if name != "residual" else float(n)
    return out


def _dfs(codes: dict[int, np.ndarray], n: int) -> dict[str, float]:
    """Degrees of freedom from the levels the cells hold (as StudySize.dfs, unbalanced too)."""
    levels = {name: len(np.unique(_key(codes, atoms, n))) for name, atoms in NEED.items()}
    s, t, h, r = (len(np.unique(codes[bit])) for bit in (_S, _T, _H, _R))
    return {"seed": s - 1, "task": t - 1, "harness": h - 1,
            "seed_task": max(levels["seed_task"] - s - t + 1, 0), "run": r - s,
            "residual": n - 1}  # less the others the cells estimate: estimate_arrays


def estimate_arrays(d: np.ndarray, codes: dict[int, np.ndarray]) -> Components:
    """Components from paired differences ``d`` and integer codes per atom (see codes_of)."""
    from scipy.optimize import nnls

    d = np.asarray(d, dtype=np.float64)
    values = dict.fromkeys(COMPONENTS, math.nan)
    if len(d) < 3:
        return Components(values, notes=["too few paired cells"], cells=len(d))
    seeds = len(np.unique(codes[_S]))
    sums, cnts = _moments(d, codes)
    rows = [g for g in range(15) if cnts[g] > 0.5]
    x = np.array([[float(NEED[k] & g != NEED[k]) for k in COMPONENTS] for g in rows])
    m = sums[rows] / cnts[rows]
    active, notes = list(COMPONENTS), []
    dfs = _dfs(codes, len(d))
    for name in FOLD:
        j = active.index(name)
        if not _identifiable(x[:, [COMPONENTS.index(a) for a in active]], j):
            col = x[:, COMPONENTS.index(name)]
            twin = [a for a in active if a != name and np.array_equal(
                x[:, COMPONENTS.index(a)], col)]
            active.remove(name)
            values[name] = 0.0
            notes.append(f"{LABELS.get(name, name)} is not separable from "
                         f"{LABELS.get(twin[0], twin[0]) if twin else 'the rest'} in these "
                         "cells; counted in it")
    for name in list(active):
        cols = [COMPONENTS.index(a) for a in active]
        if not _identifiable(x[:, cols], active.index(name)):
            active.remove(name)
            if name == "seed":
                notes.append("one seed per arm: training randomness is not covered")
            else:
                notes.append(f"{LABELS.get(name, name)}: not estimable from these cells")
    if active:
        cols = [COMPONENTS.index(a) for a in active]
        w = np.sqrt(cnts[rows] / cnts[rows].max())[:, None]  # pairs weigh in by their count
        fit, _ = nnls(x[:, cols] * w, m * w[:, 0])
        values.update(zip(active, map(float, fit), strict=True))
    dfs["residual"] = max(len(d) - 1 - sum(dfs[k] for k in active if k != "residual"), 1)
    return Components(values, _effective(codes, len(d)), notes, len(d), dfs, seeds)


def estimate(diffs: pd.DataFrame, value: str = "diff") -> Components:
    """Components from a paired-differences frame (hscale.analysis._stats.paired_differences)."""
    if diffs.empty:
        return Components(dict.fromkeys(COMPONENTS, math.nan), notes=["no paired cells"])
    return estimate_arrays(diffs[value].to_numpy(dtype=np.float64), codes_of(diffs))


def pooled(parts: Sequence[Components]) -> Components:
    """The mean of several comparisons' components (a steadier planning value)."""
    values = {k: float(np.mean([p.values[k] for p in parts])) for k in COMPONENTS}
    notes = list(dict.fromkeys(n for p in parts for n in p.notes))
    first = parts[0] if parts else Components(values)
    return Components(values, first.counts, notes,
                      int(np.mean([p.cells for p in parts])) if parts else 0, first.dfs,
                      first.seeds)


# -- a family of comparisons ---------------------------------------------------------------

@dataclass
class Contrast:
    """One arm against the reference: the mean difference (proportion), its standard error
    and degrees of freedom, and the components behind them (``seed`` from the training runs'
    pooled variance, for planning)."""

    diff: float
    se: float
    df: float  # the test's (combined_df)
    components: Components
    seeds: int
    notes: list[str] = field(default_factory=list)
    spread_df: float = math.inf  # the statistic's tails (satterthwaite), for power


def contrasts(blocks: Mapping[str, pd.DataFrame], crossed: Sequence[str] = ("task", "harness"),
              levels: bool = False) -> dict[str, Contrast]:
    """Every arm of one family (one reference, one setting) from its paired differences
    with the reference (``diff``, ``seed`` and the cell columns): stage (1) and (2) of the
    module docstring. ``crossed``: the shared factors drawn from a population (tasks; the
    harnesses of a space's held-out sample). Named harnesses (the base harness, Claude
    Code) are fixed: the answer is about them, and their interaction is no error term.
    ``levels``: ``diff`` holds each arm's own outcomes, and each arm's mean level is
    estimated (no reference; the runs' variance pooled over the arms the same way)."""
    fits = {name: estimate(block) for name, block in blocks.items()}
    runs = pd.concat([block.groupby("seed", observed=True)["diff"].mean().rename(name)
                      for name, block in blocks.items()], axis=1)
    means, var_runs, df_runs, pooled_var = _runs_anova(runs, reference=not levels)
    out = {}
    for j, name in enumerate(blocks):
        comp, block = fits[name], blocks[name]
        seeds = int(runs[name].notna().sum())
        notes = list(comp.notes)
        shared = [(comp.values[k] / comp.counts[k], comp.dfs[k]) for k in crossed
                  if comp.counts and comp.values[k] > 0]
        if df_runs >= 1 and seeds >= 2:
            diff, terms = means[j], [(var_runs[j], df_runs), *shared]
            comp = comp if levels else _with_seed(comp, pooled_var, seeds)
            notes = [n for n in notes if "seed" not in n]
        else:
            diff = float(block["diff"].mean())
            terms = [*[(comp.values[k] / comp.counts[k], comp.dfs[k]) for k in RUN_LEVEL
                       if k != "seed" and comp.counts and comp.values[k] > 0], *shared]
            if seeds < 2 and not any("one seed" in n for n in notes):
                notes.append("one seed per arm: training randomness is not covered")
        variance_ = sum(v for v, _ in terms)
        se = math.sqrt(variance_) if comp.counts and variance_ > 0 else math.nan
        if comp.counts and variance_ == 0:  # every paired cell the same: no interval to draw
            notes.append("the paired cells do not vary: no interval can be estimated")
        out[name] = Contrast(diff, se, combined_df(terms), comp, seeds, notes,
                             satterthwaite(terms))
    return out


def _runs_anova(runs: pd.DataFrame, reference: bool = True
                ) -> tuple[np.ndarray, np.ndarray, int, float]:
    """Least squares on the seed labels x arms table of run means: each arm's estimate and
    its variance, the residual degrees of freedom and mean square (one run's variance,
    pooled over the arms). ``reference``: the columns are differences from a reference arm,
    which enters as a row of zeros (its run means shift each seed label's column, which
    seed-label effects absorb), and the estimates are the contrasts; else each arm's mean
    level over its seeds (arm effects alone: one-way)."""
    values = runs.to_numpy(dtype=np.float64)
    seeds = np.flatnonzero(~np.isnan(values).all(axis=1))
    k = values.shape[1] + int(reference)
    y, arm, seed = [], [], []
    for i, s in enumerate(seeds):
        if reference:
            y.append(0.0), arm.append(0), seed.append(i)
        for j in np.flatnonzero(~np.isnan(values[s])):
            y.append(values[s, j]), arm.append(j + int(reference)), seed.append(i)
    n, y = len(y), np.asarray(y)
    # a level has no reference to pair with: its runs' spread, seed labels and all
    x = np.zeros((n, k + (max(len(seeds) - 1, 0) if reference else 0)))
    x[:, 0] = 1.0
    for row, (a, s) in enumerate(zip(arm, seed, strict=True)):
        if a:
            x[row, a] = 1.0
        if s and reference:
            x[row, k - 1 + s] = 1.0
    fit, *_ = np.linalg.lstsq(x, y, rcond=None)
    # what each estimate is: the arm's effect (a contrast), or the arm's fitted level
    # averaged over the seed labels it ran
    picks = np.zeros((values.shape[1], x.shape[1]))
    for j in range(values.shape[1]):
        a = j + int(reference)
        mine = x[np.asarray(arm) == a]
        picks[j] = np.eye(x.shape[1])[a] if reference else mine.mean(axis=0)
    df = n - int(np.linalg.matrix_rank(x))
    if df < 1:
        return picks @ fit, np.full(values.shape[1], np.nan), 0, math.nan
    ms = float(np.sum((y - x @ fit) ** 2) / df)
    cov = np.linalg.pinv(x.T @ x) * ms
    return picks @ fit, np.einsum("ij,jk,ik->i", picks, cov, picks), df, ms


def _with_seed(comp: Components, run_var: float, seeds: int) -> Components:
    """``comp`` with its seed component derived from the runs' pooled variance: what a run's
    mean difference varies by (twice one run's variance) less what its cells explain."""
    within = sum(comp.values[k] * seeds / comp.counts[k] for k in RUN_LEVEL
                 if k != "seed" and comp.counts and comp.values[k] > 0)
    values = {**comp.values, "seed": max(0.0, 2 * run_var - within)}
    return Components(values, comp.counts, comp.notes, comp.cells, comp.dfs, comp.seeds)
