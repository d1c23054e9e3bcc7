"""Harness-S routers: which sibling harnesses rescue a zero-signal group.

When all rollouts of a task fail under the base harness, a router picks ``k`` siblings from
the frozen pool and the policy samples one rollout under each from the task's initial state.

- ``original``: the base harness again (a plain re-sample: the control arm);
- ``random``: siblings drawn uniformly from the pool;
- ``nearest``: the siblings nearest to the base harness in Hamming distance, ties random;
- ``rule``: siblings ranked by the policy's success on validation tasks of the same
  category, measured once at the start;
- ``profile``: ``rule``, re-measured at every evaluation checkpoint (re-anchoring).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from design.hamming import distance_matrix
from design.space import FactorSpace
from harness.tasks import Task
from hscale.errors import HscaleError
from train.embedded.sampler import Sampler, harness_named

ROUTERS = ("original", "random", "nearest", "rule", "profile")


class Router:
    def __init__(self, kind: str, pool: Sequence[str], base: str, space: FactorSpace,
                 rng: np.random.Generator) -> None:
        if kind not in ROUTERS:
            raise HscaleError(f"unknown router {kind!r}", f"use one of {', '.join(ROUTERS)}")
        if not pool and kind != "original":
            raise HscaleError("a rescue arm needs a sibling pool", "give assignment.pool")
        self.kind, self.pool, self.base, self.rng = kind, list(pool), base, rng
        self.score: dict[str, np.ndarray] = {}  # category -> success per pool harness
        if kind == "nearest":
            configs = space.parse_labels([base, *self.pool])
            self.distance = distance_matrix(configs)[0, 1:].astype(float)

    def pick(self, task: Task, k: int) -> list[str]:
        if self.kind == "original":
            return [self.base] * k
        n = len(self.pool)
        keys = self.rng.random(n)  # random tie-breaks (and the random router's order)
        if self.kind == "random":
            order = np.argsort(keys)
        elif self.kind == "nearest":
            order = np.lexsort((keys, self.distance))
        else:
            score = self.score.get(task.category, np.zeros(n))
            order = np.lexsort((keys, -score))
        picks = [self.pool[i] for i in order[:k]]
        while len(picks) < k:  # a pool smaller than the group cycles through again
            picks.append(picks[len(picks) % max(n, 1)])
        return picks

    def needs_profile(self, checkpoint: bool) -> bool:
        return self.kind == "rule" and not self.score or self.kind == "profile" and (
            checkpoint or not self.score)

    def profile(self, sampler: Sampler, tasks: Sequence[Task],
                generator: torch.Generator) -> None:
        """Greedy success of every pool harness on every validation task, per category."""
        jobs = [(harness_named(label), task) for label in self.pool for task in tasks]
        episodes = sampler.run(jobs, greedy=True, generator=generator)
        success = np.array([e.success for e in episodes], dtype=float).reshape(
            len(self.pool), len(tasks))
        categories = np.array([t.category for t in tasks])
        self.score = {c: success[:, categories == c].mean(axis=1) for c in set(categories)}
