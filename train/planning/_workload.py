"""What a planned run plays, from its manifest alone: one typed plan (:class:`RunPlan`) that
every driver consumes (the embedded trainer, the scripted backend, veRL's inputs and dump
import, ``hscale evaluate``): the tasks it trains on, every episode one evaluation plays in
the one order every driver keeps (:class:`EvalJob`: setting, harness, task, run, decoding,
Rank-1 routing), the tasks its Harness-S router measures siblings on, and the router itself
(hscale.train.harness_s._routers), whose kind no driver tests. A driver hands each played
episode to the run's recorder (hscale.train.planning._recorder), which writes it. Planning
(hscale.train.planning._manifest) writes the manifest all this comes from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

from hscale.contracts import (
    POOL_SETTING,
    ROUTED_SETTING,
    BenchmarkRecord,
    Manifest,
    is_blackbox,
)

if TYPE_CHECKING:
    import numpy as np

    from hscale.design import FactorSpace
    from hscale.harness import Harness, HarnessSpace
    from hscale.harness.tasks import Task
    from hscale.train.harness_s import Router


def factor_space(manifest: Manifest) -> FactorSpace:
    """The run's factor space rebuilt from the manifest alone."""
    from hscale.design import Factor, FactorSpace

    return FactorSpace(tuple(Factor(n, tuple(levels))
                             for n, levels in manifest.space.factors.items()),
                       name=manifest.space.name)


def harness_space(manifest: Manifest) -> HarnessSpace:
    """The run's HarnessSpace (hscale.harness._spaces): its plugins loaded, each refused when
    its code changed since planning."""
    from hscale.harness import from_record

    return from_record(manifest.space.model_dump(mode="json"))


def harness_of(manifest: Manifest, label: str) -> Harness:
    """The harness a label of the run names, in its space (a preset name such as
    ``oos/shell`` outside it): one template a process, which episodes copy."""
    from hscale.harness import harness_named

    return harness_named(label, harness_space(manifest))


def eval_tasks(manifest: Manifest) -> dict[str, list[Task]]:
    """The held-out tasks every evaluation of the run draws from, by benchmark column (each
    benchmark's eval split, checked disjoint from training at planning)."""
    from hscale.harness import benchmark_of

    return {b.column: benchmark_of(b).tasks(b.tasks, b.seed, "eval")
            for b in manifest.evaluation.sources(manifest.benchmark)}


def train_tasks(manifest: Manifest) -> dict[str, Task]:
    """The tasks a run trains on, by id."""
    from hscale.harness import benchmark_of

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
    from hscale.harness import benchmark_of

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


DECODINGS = ("greedy", "sampled")  # a greedy pass over run 0's episodes, then sampled runs


class EvalJob(NamedTuple):
    """One evaluated episode: run ``run`` of ``harness`` on ``task`` in ``setting`` of
    ``benchmark`` (its column name), decoded ``decoding``; ``routed``: a Rank-1 routing
    episode, under the base harness until the run's router picks its sibling."""

    run: int
    setting: str
    harness: str
    task: Task
    benchmark: str
    decoding: str = "sampled"
    routed: bool = False

    @property
    def greedy(self) -> bool:
        return self.decoding == "greedy"

    @property
    def key(self) -> tuple[str, int, str, str, str, str]:
        """What tells it from every other episode of one evaluation (its row's identity)."""
        return (self.decoding, self.run, self.benchmark, self.setting, self.harness,
                self.task.task_id)


def eval_jobs(manifest: Manifest, tasks: Mapping[str, Sequence[Task]] | None = None,
              runs: Iterable[int] | None = None, decoding: str = "sampled") -> list[EvalJob]:
    """One decoding's episodes of an evaluation, the same for every backend: run ``r`` (of
    ``evaluation.runs``, or of ``runs``) plays each benchmark's settings' pairs at rotation
    ``seed * runs + r``, so seeds and runs move harnesses across tasks. ``tasks``:
    :func:`eval_tasks`, when the caller has them already."""
    ev = manifest.evaluation
    tasks = eval_tasks(manifest) if tasks is None else tasks
    chosen = list(range(ev.runs) if runs is None else runs)
    jobs = [EvalJob(run, setting, label, task, bench, decoding)
            for run in chosen
            for bench, pool in tasks.items()
            for setting, labels in manifest.eval_sets.items() if setting != POOL_SETTING
            for label, task in eval_pairs(labels, pool, ev.episodes,
                                          manifest.seed * ev.runs + run)]
    siblings = manifest.eval_sets.get(POOL_SETTING)
    if siblings:  # every sibling on every validation task: the pool properties pair them
        column = manifest.benchmark.column
        jobs += [EvalJob(run, POOL_SETTING, label, task, column, decoding) for run in chosen
                 for label in siblings for task in router_tasks(manifest)]
    return jobs


def routes(manifest: Manifest) -> bool:
    """Whether the run evaluates with Rank-1 routing: a rescue arm whose router routes
    evaluation (hscale.train.harness_s._routers, the profiles router)."""
    from hscale.train.harness_s import ROUTERS

    a = manifest.assignment
    return a.mode == "rescue" and ROUTERS.get(a.router or "original").routes


def routed_jobs(manifest: Manifest, tasks: Mapping[str, Sequence[Task]] | None = None,
                decodings: Sequence[str] = DECODINGS) -> list[EvalJob]:
    """Rank-1 routing's episodes, the same on every driver: every held-out task once
    greedily (run 0) and once a sampled run, each under the sibling its router puts first
    for it (``harness`` here is the base harness, until the router picks)."""
    if not routes(manifest):
        return []
    base = manifest.train_harnesses[0]
    tasks = eval_tasks(manifest) if tasks is None else tasks
    pairs = [(column, task) for column, pool in tasks.items() for task in pool]
    runs = {"greedy": [0], "sampled": range(manifest.evaluation.runs)}
    return [EvalJob(run, ROUTED_SETTING, base, task, column, decoding, routed=True)
            for decoding in decodings for run in runs[decoding] for column, task in pairs]


class RunPlan:
    """What one planned run plays, built once from its manifest, the same for every driver:
    ``decodings`` of each evaluation (both unless the manifest records others: ``hscale
    evaluate --decoding``), read from the manifest so a driver never chooses them."""

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.decodings = tuple(manifest.evaluation.decodings or DECODINGS)

    @cached_property
    def eval_tasks(self) -> dict[str, list[Task]]:
        return eval_tasks(self.manifest)

    @cached_property
    def train_tasks(self) -> dict[str, Task]:
        return train_tasks(self.manifest)

    @cached_property
    def router_tasks(self) -> list[Task]:
        return router_tasks(self.manifest)

    @property
    def rescues(self) -> bool:
        """Whether zero-signal groups are rescued under routed siblings (Harness-S)."""
        return self.manifest.assignment.mode == "rescue"

    @property
    def profiles(self) -> bool:
        """Whether the run's router has judges write the siblings' behaviour profiles
        (router_profiles.jsonl)."""
        from hscale.train.harness_s import ROUTERS

        return self.rescues and ROUTERS.get(self.manifest.assignment.router or "original").profiles

    @property
    def eval_steps(self) -> list[int]:
        """The checkpoints evaluated: every ``evaluation.every`` steps, and the last."""
        steps, every = self.manifest.budget.steps, self.manifest.evaluation.every
        points = set(range(0, steps, every)) if every else set()
        return sorted(points | {steps})

    def evaluation(self) -> list[EvalJob]:
        """Every episode one evaluation plays, in the one order: the greedy pass over run
        0's episodes, the sampled runs, then Rank-1 routing's (greedy, then each sampled
        run) when the run's router routes evaluation."""
        jobs = []
        for decoding in self.decodings:
            runs = [0] if decoding == "greedy" else None
            jobs += eval_jobs(self.manifest, self.eval_tasks, runs, decoding)
        return jobs + routed_jobs(self.manifest, self.eval_tasks, self.decodings)

    def router(self, rng: np.random.Generator | None = None) -> Router:
        """The run's router (hscale.train.harness_s._routers): rescue picks, sibling measurement,
        Rank-1 routing; ``rng`` (default: the manifest's ``router`` draws) for its choices."""
        from hscale.train.harness_s import Router

        a = self.manifest.assignment
        return Router(a.router or "original", a.pool or [],
                      self.manifest.train_harnesses[0] if self.rescues else "",
                      factor_space(self.manifest),
                      self.manifest.rng("router") if rng is None else rng,
                      harness_space(self.manifest))

    def harness(self, label: str) -> Harness:
        """The harness a label of the run names (:func:`harness_of`)."""
        return harness_of(self.manifest, label)


def harness_labels(manifests: Iterable[Manifest]) -> list[str]:
    """Every harness of hscale's own that the runs train, evaluate or rescue under (sorted,
    once each): a black-box CLI's prompt is its own, measured by nothing here."""
    labels: set[str] = set()
    for m in manifests:
        labels |= set(m.train_harnesses) | {h for hs in m.eval_sets.values() for h in hs}
        labels |= set(m.assignment.pool or ())
    return sorted(label for label in labels if not is_blackbox(label))
