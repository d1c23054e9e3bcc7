"""What a planned run works through, from its manifest alone: the tasks it trains on, every
episode one evaluation plays (the same on every backend), the tasks its Harness-S router
measures siblings on, and every harness it uses. Trainers, evaluators and backends read
these here; planning (hscale.train.manifest) writes the manifest they come from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from hscale.train.contracts import POOL_SETTING, ROUTED_SETTING, BenchmarkRecord, Manifest

if TYPE_CHECKING:
    from hscale.harness.tasks import Task


def eval_tasks(manifest: Manifest) -> dict[str, list[Task]]:
    """The held-out tasks every evaluation of the run draws from, by benchmark column (each
    benchmark's eval split, checked disjoint from training at planning)."""
    from hscale.harness.task_sources import benchmark_of

    return {b.column: benchmark_of(b).tasks(b.tasks, b.seed, "eval")
            for b in manifest.evaluation.sources(manifest.benchmark)}


def train_tasks(manifest: Manifest) -> dict[str, Task]:
    """The tasks a run trains on, by id."""
    from hscale.harness.task_sources import benchmark_of

    bench = manifest.benchmark
    return {t.task_id: t for t in benchmark_of(bench).tasks(bench.tasks, bench.seed)}


ROUTER_TASKS = 20  # training-split tasks past the training pool that routers measure on


def router_tasks(manifest: Manifest) -> list[Task]:
    """The tasks a Harness-S router measures sibling success on (rule / profile): training
    split, past every task the run trains on (a data benchmark trained on whole: its tasks
    in another order), the same on every backend."""
    return router_pool(manifest.benchmark)


def router_pool(bench: BenchmarkRecord) -> list[Task]:
    """:func:`router_tasks` of a run whose benchmark record is ``bench``."""
    from hscale.harness.task_sources import benchmark_of

    source = benchmark_of(bench)
    available = source.available("train")
    if available is not None and available <= bench.tasks:  # a data benchmark used whole
        return source.tasks(min(ROUTER_TASKS, available), bench.seed + 1)
    return source.tasks(bench.tasks + ROUTER_TASKS if available is None
                        else min(bench.tasks + ROUTER_TASKS, available), bench.seed)[bench.tasks:]


def eval_pairs(labels: Sequence[str], tasks: Sequence[Task], episodes: int | None,
               rotation: int = 0) -> list[tuple[str, Task]]:
    """(harness label, task) pairs of one setting for one run.

    With ``episodes`` set, each harness takes ``ceil(episodes / harnesses)`` consecutive
    tasks of the pool (categories rotate along it), and ``rotation`` (the run's index over
    seeds x runs) moves every harness on to other tasks, so over the runs each harness meets
    many tasks and no harness is tied to a task or category."""
    if not episodes:
        return [(label, task) for label in labels for task in tasks]
    per = min(max(1, math.ceil(episodes / len(labels))), len(tasks))
    start = rotation * per * len(labels) + rotation
    return [(label, tasks[(start + j * per + i) % len(tasks)])
            for j, label in enumerate(labels) for i in range(per)]


class EvalJob(NamedTuple):
    """One evaluated episode: sampled run ``run`` of ``harness`` on ``task`` in ``setting``
    of ``benchmark`` (its column name)."""

    run: int
    setting: str
    harness: str
    task: Task
    benchmark: str


def eval_jobs(manifest: Manifest, tasks: Mapping[str, Sequence[Task]] | None = None,
              runs: Iterable[int] | None = None) -> list[EvalJob]:
    """Every episode one evaluation of the run executes, the same for every backend: run
    ``r`` (of ``evaluation.runs``, or of ``runs``) plays each benchmark's settings' pairs at
    rotation ``seed * runs + r``, so seeds and runs move harnesses across tasks. ``tasks``:
    :func:`eval_tasks`, when the caller has them already."""
    ev = manifest.evaluation
    tasks = eval_tasks(manifest) if tasks is None else tasks
    chosen = list(range(ev.runs) if runs is None else runs)
    jobs = [EvalJob(run, setting, label, task, bench)
            for run in chosen
            for bench, pool in tasks.items()
            for setting, labels in manifest.eval_sets.items() if setting != POOL_SETTING
            for label, task in eval_pairs(labels, pool, ev.episodes,
                                          manifest.seed * ev.runs + run)]
    siblings = manifest.eval_sets.get(POOL_SETTING)
    if siblings:  # every sibling on every validation task: the pool properties pair them
        column = manifest.benchmark.column
        jobs += [EvalJob(run, POOL_SETTING, label, task, column) for run in chosen
                 for label in siblings for task in router_tasks(manifest)]
    return jobs


def routes(manifest: Manifest) -> bool:
    """Whether the run evaluates with Rank-1 routing (a rescue arm of the profiles router)."""
    a = manifest.assignment
    return a.mode == "rescue" and a.router == "profiles"


def routed_jobs(manifest: Manifest) -> list[tuple[str, EvalJob]]:
    """Rank-1 routing's episodes, the same on both drivers: every held-out task once
    greedily (run 0) and once a sampled run, each under the sibling its router puts first
    for it (``harness`` here is the base harness, until the router picks)."""
    if not routes(manifest):
        return []
    base = manifest.train_harnesses[0]
    pairs = [(column, task) for column, tasks in eval_tasks(manifest).items() for task in tasks]
    jobs = [("greedy", EvalJob(0, ROUTED_SETTING, base, task, column)) for column, task in pairs]
    return jobs + [("sampled", EvalJob(run, ROUTED_SETTING, base, task, column))
                   for run in range(manifest.evaluation.runs) for column, task in pairs]


def harness_labels(manifests: Iterable[Manifest]) -> list[str]:
    """Every harness of hscale's own that the runs train, evaluate or rescue under (sorted,
    once each): a black-box CLI's prompt is its own, measured by nothing here."""
    labels: set[str] = set()
    for m in manifests:
        labels |= set(m.train_harnesses) | {h for hs in m.eval_sets.values() for h in hs}
        labels |= set(m.assignment.pool or ())
    return sorted(label for label in labels if not label.startswith("bb/"))
