"""Planted studies of every shape a user's data takes, whose truth is known: arms of unequal
stability (one arm's training runs diverge), unequal seeds, an arm whose runs each learn
their own harness effects, heavy-tailed run outcomes, arms that interact with harnesses and
tasks, two settings evaluated on the same trained runs. :func:`plant` draws the evaluation
rows of one study; :func:`check` runs many through the report's own comparisons and counts
how often a family falsely resolves a true null, how often its intervals hold the truth, and
how often it resolves a true difference.

Each run's Pass@1 in a setting is the arm's rate plus the run's training effect (normal, or
Student t for heavy tails, with the arm's own sd), plus shared task and harness difficulty,
plus the arm's interactions with tasks and harnesses, plus each run's own harness effects;
each episode is a Bernoulli draw of that probability. Cells rotate as hscale's evaluation
rotates them: each seed label and evaluation run plays its own tasks under every harness.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from hscale.contracts import Setting


@dataclass(frozen=True)
class Arm:
    """One arm of a planted study; sizes in percentage points of Pass@1."""

    name: str
    effect: float = 0.0  # true difference from the reference's rate
    seeds: int = 3
    run_sd: float = 5.0  # a trained run's Pass@1 around the arm's
    tails: float = math.inf  # degrees of freedom of the run effects (inf: normal)
    harness_sd: float = 0.0  # the arm's interaction with harnesses (fixed across its runs)
    task_sd: float = 0.0  # ... with tasks
    run_harness_sd: float = 0.0  # each run's own harness effects (mean 0)
    out_shift: float = 0.0  # the arm's extra difference out of space


@dataclass(frozen=True)
class Study:
    """A planted study: its arms (the first is the reference) and evaluation."""

    arms: tuple[Arm, ...]
    tasks: int = 36
    harnesses: int = 18
    runs: int = 3
    per_run: int = 36  # in-space episodes a run plays (a rotation of tasks x harnesses)
    rate: float = 35.0  # the reference's Pass@1 (pp)
    task_sd: float = 15.0  # tasks' difficulty, shared by every arm
    harness_sd: float = 5.0  # harnesses' difficulty, shared
    out_of_space: bool = False  # also evaluate two named out-of-space harnesses
    out_corr: float = 0.7  # how much of a run's training effect carries out of space
    labels: tuple[str, ...] = ()  # the in-space harnesses' names (default h0, h1, ...)

    @property
    def reference(self) -> str:
        return self.arms[0].name

    def truth(self, setting: str = Setting.IN_SPACE) -> dict[str, float]:
        """Each arm's true difference from the reference (pp)."""
        ref = self.arms[0]
        shift = (lambda a: a.out_shift) if setting == Setting.OUT_OF_SPACE else (lambda a: 0.0)
        return {a.name: a.effect + shift(a) - ref.effect - shift(ref) for a in self.arms[1:]}


def _rotation(seed: int, runs: int, harnesses: int, per_run: int, tasks: int
              ) -> list[tuple[int, int, int]]:
    """(run, harness, task) of one seed label's evaluation, rotated as hscale rotates it."""
    per = max(1, math.ceil(per_run / harnesses))
    out = []
    for run in range(runs):
        rot = seed * runs + run
        start = rot * per * harnesses + rot
        out += [(run, h, (start + h * per + i) % tasks) for h in range(harnesses)
                for i in range(per)]
    return out


def plant(study: Study, rng: np.random.Generator | int | Sequence[int] = 0) -> pd.DataFrame:
    """Evaluation rows of ``study`` at the final step, in the shape hscale.analysis._load
    gives them (one experiment group; settings in_space, and out_of_space if asked)."""
    gen = np.random.default_rng(rng)
    task = gen.normal(0, study.task_sd, study.tasks)
    harness = gen.normal(0, study.harness_sd, study.harnesses)
    out_h = gen.normal(0, study.harness_sd, 2)
    frames = []
    for arm in study.arms:
        inter_t = gen.normal(0, arm.task_sd, study.tasks)
        inter_h = gen.normal(0, arm.harness_sd, study.harnesses)
        for seed in range(arm.seeds):
            draw = gen.standard_t(arm.tails) if math.isfinite(arm.tails) else \
                gen.standard_normal()
            if math.isfinite(arm.tails) and arm.tails > 2:  # the same sd as the normal's
                draw *= math.sqrt((arm.tails - 2) / arm.tails)
            u = arm.run_sd * draw
            own_h = gen.normal(0, arm.run_harness_sd, study.harnesses)
            cells = np.array(_rotation(seed, study.runs, study.harnesses, study.per_run,
                                       study.tasks))
            run, h, t = cells.T
            p = (study.rate + arm.effect + u + task[t] + harness[h] + inter_t[t] + inter_h[h]
                 + own_h[h]) / 100
            won = gen.random(len(p)) < np.clip(p, 0, 1)
            names = study.labels or tuple(f"h{j}" for j in range(study.harnesses))
            frames.append(_rows(arm.name, seed, run, [names[j] for j in h],
                                [f"t{j}" for j in t], Setting.IN_SPACE, won))
            if study.out_of_space:
                u_out = study.out_corr * u + math.sqrt(1 - study.out_corr ** 2) * \
                    arm.run_sd * gen.standard_normal()
                rows = [(r, o, i) for r in range(study.runs) for o in range(2)
                        for i in range(math.ceil(study.per_run / 2))]
                run, o, i = np.array(rows).T
                t = (seed * study.runs * study.per_run + run * study.per_run + i) % study.tasks
                p = (study.rate - 8 + arm.effect + arm.out_shift + u_out + task[t] + out_h[o]
                     + inter_t[t]) / 100
                frames.append(_rows(arm.name, seed, run, [f"oos/{j}" for j in o],
                                    [f"t{j}" for j in t], Setting.OUT_OF_SPACE,
                                    gen.random(len(p)) < np.clip(p, 0, 1)))
    frame = pd.concat(frames, ignore_index=True)
    for col in ("method", "arm", "harness", "task_id", "setting"):
        frame[col] = frame[col].astype("category")
    return frame


def _rows(arm: str, seed: int, run: np.ndarray, harness: list[str], task: list[str],
          setting: str, success: np.ndarray) -> pd.DataFrame:
    """Loaded episodes (the analysis's frame, as hscale.analysis.load_results gives it; no
    eval.parquet is written)."""
    return pd.DataFrame({
        "source": "measured", "experiment": "planted", "model": "m", "algorithm": "grpo",
        "method": arm, "arm": arm, "seed": seed, "run": run, "step": 1, "benchmark": "bench",
        "setting": setting, "harness": harness, "task_id": task}).assign(
        success=success, reward=success.astype(np.float64), turns=1)


def check(study: Study, n: int = 200, seed: int = 0, level: float = 0.95,
          settings: Sequence[str] | None = None) -> dict[str, float]:
    """Over ``n`` draws of ``study``, through hscale.analysis._stats.compare_arms: the share
    of families with any true null resolved (``false_any``), of true-null comparisons
    resolved (``false_each``), of families whose every simultaneous interval holds the truth
    (``cover_all``), of intervals that hold it (``cover_each``, and ``cover_own``: each
    comparison's own interval), of true differences resolved (``power``), and the mean
    interval half-width (pp) beside Welch's on run means (``width_ratio``)."""
    from hscale.analysis._stats import compare_arms

    settings = tuple(settings or ((Setting.IN_SPACE, Setting.OUT_OF_SPACE) if study.out_of_space
                                  else (Setting.IN_SPACE,)))
    truth = {(s, m): d for s in settings for m, d in study.truth(s).items()}
    counts = dict.fromkeys(("false_any", "false_each", "nulls", "cover_all", "cover_each",
                            "cover_own", "power", "effects", "rows", "width", "welch"), 0.0)
    for i in range(n):
        episodes = plant(study, [seed, i])
        found = compare_arms(episodes, study.reference, settings, level=level)
        true = np.array([truth[s, m] for s, m in zip(found["setting"], found["method"],
                                                     strict=True)])
        resolved = (found["lo"] > 0) | (found["hi"] < 0)
        null = true == 0
        counts["false_any"] += bool((resolved & null).any())
        counts["false_each"] += int((resolved & null).sum())
        counts["nulls"] += int(null.sum())
        holds = (found["lo"] <= true) & (true <= found["hi"])
        counts["cover_all"] += bool(holds.all())
        counts["cover_each"] += int(holds.sum())
        counts["cover_own"] += int(((found["lo_each"] <= true) & (true <= found["hi_each"]))
                                   .sum())
        counts["power"] += int((resolved & ~null).sum())
        counts["effects"] += int((~null).sum())
        counts["rows"] += len(found)
        counts["width"] += float(((found["hi_each"] - found["lo_each"]) / 2).sum())
        counts["welch"] += float(sum(_welch_half(episodes, s, m, study.reference, level)
                                     for s, m in zip(found["setting"], found["method"],
                                                     strict=True)))
    rows = max(counts["rows"], 1)
    return {"studies": n, "false_any": counts["false_any"] / n,
            "false_each": counts["false_each"] / max(counts["nulls"], 1),
            "cover_all": counts["cover_all"] / n, "cover_each": counts["cover_each"] / rows,
            "cover_own": counts["cover_own"] / rows,
            "power": counts["power"] / counts["effects"] if counts["effects"] else math.nan,
            "width_ratio": counts["width"] / counts["welch"] if counts["welch"] else math.nan}


def _welch_half(episodes: pd.DataFrame, setting: str, method: str, reference: str,
                level: float) -> float:
    """The half-width (pp) of Welch's interval on the two arms' run means (the yardstick)."""
    from scipy.stats import t

    own = episodes[episodes["setting"] == setting]
    means = own.groupby(["method", "seed"], observed=True)["success"].mean() * 100
    a, b = means[method], means[reference]
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return float(t.ppf(0.5 + level / 2, df) * math.sqrt(va + vb))


def run_variance(study: Study, arm: int = 0, draws: int = 300) -> float:
    """One run's Pass@1 variance (proportion scale) of ``study``'s ``arm``-th arm, measured on
    ``draws`` planted runs: what a power plan's run variance stands for."""
    wide = replace(study, arms=(replace(study.arms[arm], seeds=draws),))
    return float(plant(wide, 99).groupby("seed")["success"].mean().var(ddof=1))


def effect_for_power(var: float, seeds: dict[str, int], target: float) -> float:
    """The difference (proportion) at which ``hscale power`` predicts ``target`` power for
    ``other`` against ``ref``, each run of variance ``var``, at ``seeds`` (bisection)."""
    from hscale.analysis._planning import Question, plan_power

    question = Question("other", "ref", var, var, family=None)
    lo, hi = 0.0, 1.0
    for _ in range(40):
        mid = (lo + hi) / 2
        if plan_power([question], seeds, mid).power[question.key] < target:
            lo = mid
        else:
            hi = mid
    return hi


def binomial_interval(hits: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson interval of a rate ``hits`` (a share) over ``n`` trials."""
    from scipy.stats import binomtest

    found = binomtest(int(round(hits * n)), n).proportion_ci(level)
    return float(found.low), float(found.high)


# the shapes of study the calibration runs (benchmarks/calibration.py, the tests)
def scenarios() -> dict[str, Study]:
    five = tuple(Arm(f"arm{j}") for j in range(5))
    return {
        "alike": Study(five),
        "unequal stability": Study((five[0], Arm("unstable", run_sd=30.0), *five[2:])),
        "unequal seeds": Study((Arm("ref", seeds=3), Arm("more", seeds=5),
                                Arm("fewer", seeds=2))),
        "per-run harness effects": Study(tuple(replace(a, run_harness_sd=8.0) for a in five)),
        "arm x harness": Study(tuple(replace(a, harness_sd=6.0, task_sd=4.0) for a in five)),
        "heavy tails": Study(tuple(replace(a, tails=3.0, run_sd=8.0) for a in five)),
        "two settings": Study(five, out_of_space=True),
    }
