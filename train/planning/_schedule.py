"""Assignment schedules: which task runs under which harness at each training step.

Each task gets K harnesses used in K successive steps. A batch of ``tasks_per_step`` tasks
therefore occupies K steps: at step ``b * K + slot`` every task of batch ``b`` runs under its
``slot``-th harness. The modes differ only in how a task's K harnesses are chosen:

- ``locality``: an anchor drawn uniformly from the training set, then the K-1 other training
  configurations nearest to it in Hamming distance (ties broken by the seeded generator);
- ``repeat``: the anchor K times (Repeat-K);
- ``random``: the anchor, then K-1 other training configurations drawn uniformly;
- ``rescue`` (Harness-S): every slot is the base harness, the rescue arm's whole training set.
  Its sibling pool, router and group size travel in the manifest's ``assignment``: siblings
  are chosen by the trainer only when a group fails, so they are not scheduled here.

Weighted distance and adaptive K (``locality`` only). When the space carries component
weights (the manifest's ``space.weights``, hscale.design._weights), partners are ranked by the
weighted distance, which sums the weights of the differing components. With a ``radius`` R
(``assignment: {mode: locality, k: 4, radius: 1.5}``) K is a cap: a task's partners are the
training configurations within (weighted) distance R of its anchor, nearest first, at most
K-1 of them, so the task trains under K_x <= K distinct harnesses, K_x - 1 being the number
of its anchor's neighbours within R. K stays the length of a step group, so batches still
line up and every arm keeps the same budget of rollouts: the K - K_x slots left over repeat
the anchor (as Repeat-K does), and an anchor with no neighbour within R fills all K slots.
Without weights and radius the schedule is the one hscale always made, byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hscale.contracts import (
    SCHEDULE,
    SCHEDULE_COLUMNS,
    Manifest,
    check_schedule,
    schedule_frame,
)
from hscale.design import FactorSpace
from hscale.errors import HscaleError
from hscale.files import write_parquet
from hscale.harness import is_blackbox
from hscale.train.planning._workload import factor_space
from hscale.train.spec import ASSIGNMENTS


def assign(train: np.ndarray, n_tasks: int, k: int, mode: str, rng: np.random.Generator,
           weights: Sequence[float] | None = None, radius: float | None = None) -> np.ndarray:
    """Row indices into ``train`` of shape (n_tasks, k): slot 0 is each task's anchor.
    ``weights`` and ``radius`` reach a ``by_distance`` mode; other modes take no radius."""
    rule = ASSIGNMENTS.get(mode)
    n = len(train)
    if k < 1:
        raise HscaleError(f"K must be at least 1, got {k}")
    if radius is not None and not rule.by_distance:
        raise HscaleError(f"{mode} assignment takes no radius (adaptive K picks partners by "
                          "distance)", "drop radius, or use mode: locality")
    if rule.distinct and k > n:
        raise HscaleError(f"{mode} assignment with K={k} needs at least {k} training "
                          f"configurations, the training set has {n}",
                          "lower K, or use repeat assignment")
    anchors = rng.integers(n, size=n_tasks)
    out = np.empty((n_tasks, k), dtype=np.int64)
    out[:, 0] = anchors
    if k > 1:
        extra = {"weights": weights, "radius": radius} if rule.by_distance else {}
        out[:, 1:] = rule.partners(train, anchors, k, rng, **extra)
    return out


def build_schedule(space: FactorSpace, train_labels: Sequence[str], task_ids: Sequence[str],
                   steps: int, tasks_per_step: int, k: int, mode: str,
                   rng: np.random.Generator, weights: Sequence[float] | None = None,
                   radius: float | None = None) -> pd.DataFrame:
    """One row per (step, task, harness); tasks are drawn without replacement, epoch by epoch.
    ``weights`` (per factor) and ``radius`` (adaptive K): see the module's docstring.

    ``steps`` must be a multiple of K so that every task's K harnesses fit in the budget;
    0 steps (a reference run, evaluated before any training) schedule nothing.
    """
    if steps == 0:
        return schedule_frame(pd.DataFrame(columns=list(SCHEDULE_COLUMNS)))
    if steps < 1 or tasks_per_step < 1:
        raise HscaleError(f"steps and tasks_per_step must be positive, got {steps} and "
                          f"{tasks_per_step}")
    if steps % k:
        raise HscaleError(f"{steps} steps do not split into groups of K={k} successive steps",
                          f"use a number of steps divisible by {k}")
    if not task_ids:
        raise HscaleError("no tasks to schedule", "give a benchmark with at least one task")
    if mode == "rescue" and len(train_labels) != 1:
        raise HscaleError(f"rescue assignment trains under the base harness alone, not "
                          f"{len(train_labels)} training configurations",
                          "use train: single; the siblings go in assignment.pool")
    outside = [label for label in train_labels if is_blackbox(label)]
    if outside and len(train_labels) > 1:
        raise HscaleError(f"a black-box harness ({outside[0]}) trains alone, not beside "
                          f"{len(train_labels) - 1} other training configurations")
    # a black-box harness is no point of the space: its one row is never measured against
    train = (np.zeros((1, space.n_factors), dtype=np.int64) if outside
             else space.parse_labels(list(train_labels)))
    batches = steps // k
    n_tasks = batches * tasks_per_step
    pool = np.asarray(task_ids, dtype=object)
    epochs = -(-n_tasks // len(pool))
    order = np.concatenate([rng.permutation(len(pool)) for _ in range(epochs)])[:n_tasks]
    chosen = assign(train, n_tasks, k, mode, rng, weights, radius)
    batch = np.repeat(np.arange(batches), tasks_per_step)
    labels = np.asarray(list(train_labels), dtype=object)
    frame = pd.DataFrame({
        "step": (batch[:, None] * k + np.arange(k)[None, :]).ravel(),
        "task_id": np.repeat(pool[order], k),
        "harness": labels[chosen].ravel(),
        "anchor": np.repeat(labels[chosen[:, 0]], k),
        "slot": np.tile(np.arange(k), n_tasks),
    })
    frame = frame.sort_values(["step", "slot"], kind="stable").reset_index(drop=True)
    return schedule_frame(frame)


@cache
def _task_ids(record: Any) -> tuple[str, ...]:
    """The training task ids of a benchmark record (frozen, so a cache key)."""
    from hscale.harness import benchmark_of

    return tuple(benchmark_of(record).task_ids(record.tasks, record.seed))


@dataclass(frozen=True)
class Schedule:
    """A run's schedule: step -> [(task id, harness label)], from its manifest alone."""

    frame: pd.DataFrame  # schedule.parquet's rows, ordered by step and slot

    @classmethod
    def for_manifest(cls, manifest: Manifest) -> Schedule:
        bench, budget = manifest.benchmark, manifest.budget
        return cls(build_schedule(
            factor_space(manifest), manifest.train_harnesses,
            _task_ids(bench), budget.steps,
            budget.tasks_per_step, manifest.assignment.k, manifest.assignment.mode,
            manifest.rng("schedule"), manifest.space.weight_vector(),
            manifest.assignment.radius))

    @classmethod
    def read(cls, run_dir: str | Path) -> Schedule:
        path = Path(run_dir) / SCHEDULE
        if not path.is_file():
            raise HscaleError(f"{path}: no such file", "plan the run first (hscale plan)")
        return cls(check_schedule(pd.read_parquet(path), str(path)))

    def write(self, run_dir: str | Path) -> None:
        write_parquet(Path(run_dir) / SCHEDULE, self.frame)

    def steps(self) -> list[int]:
        return sorted({int(s) for s in self.frame.step})

    def at(self, step: int) -> list[tuple[str, str]]:
        """The (task id, harness label) pairs trained at ``step``, in slot order."""
        rows = self.frame[self.frame.step == step]
        return list(zip(rows.task_id.tolist(), rows.harness.tolist(), strict=True))
