"""Power of a paired Pass@1 comparison: variance components, MDE, and the design that is needed.

Why: a pilot's intervals say how precise *its* differences are; planning needs the parts of
that imprecision, because seeds, tasks and runs cost differently and shrink different parts.

Model. Two arms A and B are evaluated on the same cells (seed label s, evaluation run r,
harness h, task t). The paired difference of binary outcomes d = y_A - y_B is

    d[s,r,h,t] = delta + a[s] + b[t] + c[h] + ab[s,t] + w[s,r] + e[s,r,h,t]

Task and harness main effects are shared by the arms and cancel; b and c are their
interactions with the arm. Training seeds are independent per arm, so a = u_A[s] - u_B[s]
(likewise ab: what one seed learned of a task, w: one evaluation run's shift). e is the binary
outcome (about p_A(1-p_A) + p_B(1-p_B)). All are independent with mean 0, so the mean
difference D of S seeds per arm, T tasks, H harnesses, R runs and N = S*R*E paired episodes
(E per seed and run: T*H when every task meets every harness) has

    Var(D) = s2_seed/S + s2_task/T + s2_harness/H + s2_seed_task/(S*T) + s2_run/(S*R)
             + s2_residual/N

(on a pilot each divisor is its effective count N^2 / sum of squared level sizes). Tasks and
harnesses count as draws from their populations: stricter than the report's test over tasks,
which holds the seeds fixed. Estimation is by moments: two cells that share exactly the set G
of {seed, task, harness, run} have E[(d_i - d_j)^2 / 2] = the sum of the components they do
not share; the mean per G (group sums, O(N) each) is fitted by non-negative least squares,
each G weighted by its number of pairs.
A component the pilot cannot separate (one run per seed: run from seed) is counted with the
one it is aliased with, or left unknown (NaN: one seed per arm).

MDE = (z_{1-alpha/(2m)} + z_power) * sqrt(Var(D)): alpha/m is Holm's first, most stringent
step over m planned comparisons.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

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

    def per_run(self) -> int:
        return self.episodes or self.tasks * self.harnesses

    def counts(self) -> dict[str, float]:
        """The divisor of each component in Var(D)."""
        s, t, h, r, e = self.seeds, self.tasks, self.harnesses, self.runs, self.per_run()
        n = s * r * e
        return {"seed": s, "task": min(t, n), "harness": min(h, n),
                "seed_task": s * min(t, r * e), "run": s * r, "residual": n}


@dataclass
class Components:
    """Variances of the paired difference (proportion scale); NaN where unknown."""

    values: dict[str, float]
    counts: dict[str, float] = field(default_factory=dict)  # the pilot's effective divisors
    notes: list[str] = field(default_factory=list)
    cells: int = 0

    def variance(self, counts: Mapping[str, float] | None = None) -> float:
        return variance(self.values, self.counts if counts is None else counts)


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


def z_crit(m: int = 1, alpha: float = 0.05) -> float:
    """Two-sided critical value at alpha/m (Holm's first step)."""
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / (2 * max(int(m), 1))))


def mde(se: float, m: int = 1, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference detected with ``power`` (same unit as ``se``)."""
    from scipy.stats import norm

    return (z_crit(m, alpha) + float(norm.ppf(power))) * se


def power_at(effect: float, se: float, m: int = 1, alpha: float = 0.05) -> float:
    """Probability that a true ``effect`` is detected (the far tail is ignored)."""
    from scipy.stats import norm

    return float(norm.cdf(abs(effect) / se - z_crit(m, alpha))) if se > 0 else 1.0


# -- estimation ----------------------------------------------------------------------------

def _codes(diffs: pd.DataFrame) -> dict[int, np.ndarray]:
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


def estimate_arrays(d: np.ndarray, codes: dict[int, np.ndarray]) -> Components:
    """Components from paired differences ``d`` and integer codes per atom (see _codes)."""
    from scipy.optimize import nnls

    d = np.asarray(d, dtype=np.float64)
    values = dict.fromkeys(COMPONENTS, math.nan)
    if len(d) < 3:
        return Components(values, notes=["too few paired cells"], cells=len(d))
    sums, cnts = _moments(d, codes)
    rows = [g for g in range(15) if cnts[g] > 0.5]
    x = np.array([[float(NEED[k] & g != NEED[k]) for k in COMPONENTS] for g in rows])
    m = sums[rows] / cnts[rows]
    active, notes = list(COMPONENTS), []
    for name in FOLD:
        j = active.index(name)
        if not _identifiable(x[:, [COMPONENTS.index(a) for a in active]], j):
            col = x[:, COMPONENTS.index(name)]
            twin = [a for a in active if a != name and np.array_equal(
                x[:, COMPONENTS.index(a)], col)]
            active.remove(name)
            values[name] = 0.0
            notes.append(f"{LABELS.get(name, name)} is not separable from "
                         f"{LABELS.get(twin[0], twin[0]) if twin else 'the rest'} in this "
                         "pilot; counted in it")
    for name in list(active):
        cols = [COMPONENTS.index(a) for a in active]
        if not _identifiable(x[:, cols], active.index(name)):
            active.remove(name)
            notes.append(f"{LABELS.get(name, name)}: not estimable from this pilot")
    if active:
        cols = [COMPONENTS.index(a) for a in active]
        w = np.sqrt(cnts[rows] / cnts[rows].max())[:, None]  # pairs weigh in by their count
        fit, _ = nnls(x[:, cols] * w, m * w[:, 0])
        values.update(zip(active, map(float, fit), strict=True))
    return Components(values, _effective(codes, len(d)), notes, len(d))


def estimate(diffs: pd.DataFrame, value: str = "diff") -> Components:
    """Components from a paired-differences frame (hscale.analysis.stats.paired_differences)."""
    if diffs.empty:
        return Components(dict.fromkeys(COMPONENTS, math.nan), notes=["no paired cells"])
    return estimate_arrays(diffs[value].to_numpy(dtype=np.float64), _codes(diffs))


def pilot_design(diffs: pd.DataFrame) -> StudySize:
    """The nominal sizes of a pilot's paired cells."""
    task = ["benchmark", "task_id"] if "benchmark" in diffs.columns else ["task_id"]
    s = int(diffs["seed"].nunique())
    t = int(diffs[task].drop_duplicates().shape[0])
    h = int(diffs["harness"].astype(str).nunique())
    r = max(1, int(round(diffs.groupby("seed", observed=True)["run"].nunique().median())))
    e = max(1, int(round(len(diffs) / (s * r))))
    return StudySize(s, t, h, r, None if e >= t * h else e)


def pooled(parts: Sequence[Components]) -> Components:
    """The mean of several comparisons' components (a steadier planning value)."""
    values = {k: float(np.mean([p.values[k] for p in parts])) for k in COMPONENTS}
    notes = list(dict.fromkeys(n for p in parts for n in p.notes))
    return Components(values, parts[0].counts if parts else {}, notes,
                      int(np.mean([p.cells for p in parts])) if parts else 0)


def paired_blocks(episodes: pd.DataFrame, settings: Sequence[str] = ("in_space",),
                  reference: str | None = None) -> Iterator[tuple[dict, pd.DataFrame]]:
    """(identity, paired differences) of every arm against the reference, per experiment
    group and setting, the pairing hscale.analysis.stats.compare_arms uses."""
    from hscale.analysis.naming import order_methods
    from hscale.analysis.passk import final_step
    from hscale.analysis.stats import GROUP, paired_differences, pairing

    episodes = final_step(episodes)
    episodes = episodes[episodes["setting"].isin(list(settings))]
    pick = pairing(reference)
    for key, part in episodes.groupby(list(GROUP), observed=True, sort=False):
        ref, methods = pick(order_methods(part["method"].unique()))
        if ref is None:
            continue
        diffs = paired_differences(part, ref, methods)
        ident = {**dict(zip(GROUP, map(str, key), strict=True)), "reference": ref}
        for (setting, method), block in diffs.groupby(["setting", "method"], observed=True,
                                                      sort=False):
            yield {**ident, "setting": str(setting), "method": str(method)}, block


def comparison_mde(episodes: pd.DataFrame, comparisons: pd.DataFrame, alpha: float = 0.05,
                   power: float = 0.8) -> np.ndarray:
    """The MDE (pp) of each row of hscale.analysis.stats.compare_arms, from that comparison's own
    components at its own design; m = all rows (Holm adjusts them together). NaN if unknown."""
    out = np.full(len(comparisons), np.nan)
    if not len(comparisons):
        return out
    keys = ["source", "experiment", "model", "algorithm", "setting", "method", "reference"]
    index = {tuple(str(v) for v in row): i for i, row in
             enumerate(comparisons[keys].itertuples(index=False))}
    for ref in comparisons["reference"].astype(str).unique():
        blocks = paired_blocks(episodes, tuple(comparisons["setting"].astype(str).unique()), ref)
        for ident, diffs in blocks:
            i = index.get(tuple(ident[k] for k in keys))
            if i is None:
                continue
            try:
                se = math.sqrt(estimate(diffs).variance())
                out[i] = 100 * mde(se, len(comparisons), alpha, power)
            except (ValueError, KeyError, ZeroDivisionError, np.linalg.LinAlgError):
                continue
    return out


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
    se = math.sqrt(variance(values, d.counts()))
    return {"change": change, "seeds": d.seeds, "tasks": d.tasks, "runs": d.runs,
            "episodes": d.seeds * d.runs * d.per_run(), "cost": cost(d, costs),
            "se_pp": 100 * se, "mde_pp": 100 * mde(se, m, alpha, power),
            "power": power_at(effect, se, m, alpha)}


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


# -- simulation ----------------------------------------------------------------------------

def _cells(design: StudySize) -> tuple[np.ndarray, ...]:
    """(seed, run, harness, task) indices of every paired cell, the rotation of
    hscale.train.workload.eval_pairs when ``episodes`` is set."""
    s, r, h, t = np.meshgrid(*(np.arange(n) for n in (design.seeds, design.runs,
                                                       design.harnesses, design.tasks)),
                             indexing="ij")
    if design.episodes is None:
        return s.ravel(), r.ravel(), h.ravel(), t.ravel()
    per = min(max(1, math.ceil(design.episodes / design.harnesses)), design.tasks)
    out = []
    for seed in range(design.seeds):
        for run in range(design.runs):
            rot = seed * design.runs + run
            start = rot * per * design.harnesses + rot
            for j in range(design.harnesses):
                for i in range(per):
                    out.append((seed, run, j, (start + j * per + i) % design.tasks))
    return tuple(np.array(c) for c in zip(*out, strict=True))


def simulate(components: Mapping[str, float], design: StudySize, effect: float = 0.0,
             n_sims: int = 200, seed: int = 0, m: int = 1, alpha: float = 0.05,
             shared: float = 0.005) -> dict:
    """Draw binary outcomes of two arms with known components (linear probability, clipped
    to [0, 1]) and return the simulated SE of D, the mean estimated SE, and the power of the
    Wald test D / SE_hat at alpha/m, beside the predictions. ``effect`` is a proportion;
    ``shared`` the variance of task and harness main effects (they cancel in pairs). The
    mean success is chosen so the binary residual matches ``components['residual']``."""
    comp = {k: float(components.get(k, 0.0)) for k in COMPONENTS}
    spread = sum(v for k, v in comp.items() if k != "residual") / 2 + 2 * shared
    need = comp["residual"] / 2 + spread
    if need > 0.25:
        raise ValueError(f"residual {comp['residual']} is too large for a binary outcome with "
                         "these components (at most 0.5 minus the rest)")
    base = 0.5 - math.sqrt(0.25 - need)
    gen = np.random.default_rng(seed)
    s, r, h, t = _cells(design)
    codes = {_S: s, _T: t, _H: h, _R: s * design.runs + r}
    z = z_crit(m, alpha)
    means, ses = np.empty(n_sims), np.empty(n_sims)
    sizes = {"seed": (design.seeds,), "task": (design.tasks,), "harness": (design.harnesses,),
             "seed_task": (design.seeds, design.tasks), "run": (design.seeds, design.runs)}
    index = {"seed": (s,), "task": (t,), "harness": (h,), "seed_task": (s, t), "run": (s, r)}
    for i in range(n_sims):
        common = (gen.normal(0, math.sqrt(shared), design.tasks)[t]
                  + gen.normal(0, math.sqrt(shared), design.harnesses)[h])
        y = []
        for sign in (0.5, -0.5):
            p = base + sign * effect + common
            for name, shape in sizes.items():
                p = p + gen.normal(0, math.sqrt(comp[name] / 2), shape)[index[name]]
            y.append(gen.random(len(s)) < np.clip(p, 0, 1))
        d = y[0].astype(np.float64) - y[1]
        means[i] = d.mean()
        ses[i] = math.sqrt(estimate_arrays(d, codes).variance(design.counts()))
    se_pred = math.sqrt(variance(comp, design.counts()))
    with np.errstate(invalid="ignore", divide="ignore"):
        reject = np.abs(means) / ses > z
    return {"se_pred": se_pred, "se_sim": float(np.std(means, ddof=1)),
            "se_hat": float(np.nanmean(ses)), "mean": float(means.mean()),
            "power_pred": power_at(effect, se_pred, m, alpha),
            "power_sim": float(np.mean(reject[~np.isnan(ses)])), "base": base}
