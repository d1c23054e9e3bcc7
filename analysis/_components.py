"""The variance components of a paired Pass@1 difference, estimated from the paired cells.

The report's comparisons take training runs as the replicates (hscale.analysis._stats); what
a run's mean does not vary by, the arms' interactions with the tasks and harnesses they share,
comes from here, and so does the interval of a study of one seed an arm (tasks and
evaluation noise only).

Model. Arms 0 (the reference) and j are evaluated on the same cells (seed label s,
evaluation run r, harness h, task t); the difference of their outcomes in a cell is

    d[s,r,h,t] = delta + a[s] + b[t] + c[h] + ab[s,t] + w[s,r] + e[s,r,h,t]

a: what one training run learned beyond another, b and c the arms' interactions with task and
harness, ab what one run learned of a task, w one evaluation run's shift, e the binary
outcome; all independent with mean 0. The mean difference over N paired cells has variance
the sum of each component over its effective number of levels (N^2 / the sum of squared
level sizes). Two cells that share exactly the set G of {seed, task, harness, run} have
E[(d_i - d_j)^2 / 2] = the sum of the components they do not share: the mean per G is fitted
by non-negative least squares (:func:`estimate`). Components the cells cannot separate are
folded together and said so.

Degrees of freedom of a sum of such terms: :func:`welch_df` (runs on both sides, the
report's), :func:`combined_df` (one seed an arm: the fewest of the terms that matter).
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
    spread = sum(v * v / df for v, df in live)
    return total * total / spread if spread > 0 else math.inf


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
