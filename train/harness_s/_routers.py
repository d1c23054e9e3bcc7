"""Harness-S routers: which sibling harnesses rescue a zero-signal group.

When all rollouts of a task fail under the base harness, a router picks ``k`` siblings from
the frozen pool and the policy samples one rollout under each from the task's initial state.

- ``original``: the base harness again (a plain re-sample: the control arm);
- ``random``: siblings drawn uniformly from the pool;
- ``nearest``: the siblings nearest to the base harness in Hamming distance, ties random;
- ``rule``: siblings ranked by the policy's success on validation tasks of the same
  category, measured once at the start;
- ``profile``: ``rule``, re-measured at every evaluation checkpoint (re-anchoring);
- ``profiles``: the paper's profile router (hscale.train.harness_s._profiles): judge-written
  (When, Behavior) profiles from paired trajectories, several judges' top-k votes,
  re-anchored at every checkpoint, Rank-1 routing at evaluation.

Routers are registered by name (``ROUTERS``), so a spec can name a user's own. Torch-free:
measuring success needs the policy, which the trainer does and hands over as scores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hscale.design import FactorSpace, distance_matrix
from hscale.errors import HscaleError
from hscale.registry import Registry

if TYPE_CHECKING:
    from hscale.harness.tasks import Task


@dataclass(frozen=True)
class RouterKind:
    """``order(router, task, keys)`` ranks the pool for a task (``keys``: one uniform draw per
    sibling, for random tie-breaks); None re-samples the base harness. ``measure`` says when
    the router needs success scores: never, once, or at every checkpoint. ``profiles``: it
    measures trajectories too, and judges write behaviour profiles from them; ``routes``:
    evaluation plays Rank-1 routing (each held-out task under the sibling picked first).
    Only :class:`Router` reads a kind: drivers call its methods."""

    order: Callable[[Router, Task, np.ndarray], np.ndarray] | None
    measure: Literal["never", "once", "checkpoints"] = "never"
    profiles: bool = False
    routes: bool = False


def _by_score(router: Router, task: Task, keys: np.ndarray) -> np.ndarray:
    score = router.score.get(task.category, np.zeros(len(router.pool)))
    return np.lexsort((keys, -score))


ROUTERS: Registry[RouterKind] = Registry("router")
ROUTERS.register("original", RouterKind(None))
ROUTERS.register("random", RouterKind(lambda router, task, keys: np.argsort(keys)))
ROUTERS.register("nearest", RouterKind(
    lambda router, task, keys: np.lexsort((keys, router.distance))))
ROUTERS.register("rule", RouterKind(_by_score, measure="once"))
ROUTERS.register("profile", RouterKind(_by_score, measure="checkpoints"))


def _by_votes(router: Router, task: Task, keys: np.ndarray) -> np.ndarray:
    from hscale.train.harness_s._profiles import vote

    points = vote(router.voters, task.user_query, task.category, router.profiles, router.asked_k,
                  router.tally)
    return np.lexsort((keys, -points))


ROUTERS.register("profiles", RouterKind(_by_votes, measure="checkpoints", profiles=True,
                                        routes=True))


def pool_distance(base: str, pool: Sequence[str], space: FactorSpace,
                  harnesses: Any = None) -> np.ndarray:
    """Each sibling's distance from the base harness: the Hamming distance for labels of the
    space, else (an evolved pool's children) the number of components whose realization or
    parameters differ, which is the same count for labels; ``harnesses`` (the run's
    HarnessSpace) builds the children."""
    if all(space.contains(label) for label in (base, *pool)):
        return distance_matrix(space.parse_labels([base, *pool]))[0, 1:].astype(float)
    if harnesses is None:
        raise HscaleError(f"the pool holds harnesses outside space {space.name}",
                          "give the run's harness space (its composed harnesses)")
    from hscale.harness import components_of

    ref = components_of(harnesses.harness(base))
    out = []
    for label in pool:
        mine = components_of(harnesses.harness(label))
        out.append(sum(ref.get(c) != mine.get(c) for c in set(ref) | set(mine)))
    return np.asarray(out, dtype=float)


class Router:
    """One run's router: its kind, the frozen pool, and what it has measured."""

    def __init__(self, kind: str, pool: Sequence[str], base: str, space: FactorSpace,
                 rng: np.random.Generator, harnesses: Any = None) -> None:
        self.kind = ROUTERS.get(kind)
        if not pool and self.kind.order is not None:
            raise HscaleError("a rescue arm needs a sibling pool", "give assignment.pool")
        self.pool, self.base, self.rng = list(pool), base, rng
        self.score: dict[str, np.ndarray] = {}  # category -> success per pool harness
        self.distance = np.zeros(len(self.pool))
        if self.pool and base:
            self.distance = pool_distance(base, self.pool, space, harnesses)
        # the profiles router's (hscale.train.harness_s._profiles): judges, profiles, what they did
        self.voters: list = []
        self.profiles: dict[str, tuple] = {}
        self.tally: Any = None
        self.asked_k = 1
        if self.kind.profiles:
            from hscale.train.harness_s._profiles import Tally, judges

            self.voters, self.tally = judges(), Tally()
            if not self.voters:
                raise HscaleError("router profiles needs judges: none is configured",
                                  "set HSCALE_JUDGE_URL and HSCALE_JUDGE_MODEL (and "
                                  "HSCALE_ROUTER_JUDGES=a,b,c for several voters)")

    def pick(self, task: Task, k: int) -> list[str]:
        if self.kind.order is None:
            return [self.base] * k
        n = len(self.pool)
        self.asked_k = min(k, n)
        keys = self.rng.random(n)  # random tie-breaks (and the random router's order)
        picks = [self.pool[i] for i in self.kind.order(self, task, keys)[:k]]
        while len(picks) < k:  # a pool smaller than the group cycles through again
            picks.append(picks[len(picks) % max(n, 1)])
        return picks

    @property
    def measures(self) -> bool:
        """Whether rescues wait for a measurement of the siblings on validation tasks."""
        return self.kind.measure != "never"

    def needs_scores(self, checkpoint: bool) -> bool:
        """Whether to measure sibling success now (at a checkpoint, or before a step)."""
        if self.kind.measure == "never":
            return False
        return not self.score or (checkpoint and self.kind.measure == "checkpoints")

    @property
    def reads_trajectories(self) -> bool:
        """Whether a measurement needs the episodes' messages (judges read them), not only
        their success."""
        return self.kind.profiles

    def measured(self) -> list[str]:
        """The harnesses a measurement plays greedily on the validation tasks: the pool, and
        the base harness last when judges write profiles from the paired trajectories."""
        return [*self.pool, self.base] if self.kind.profiles else list(self.pool)

    def measurement(self, checkpoint: bool) -> list[str]:
        """What to measure now (:meth:`measured`), or nothing when no measurement is due
        (at an evaluation checkpoint, or before a training step)."""
        return self.measured() if self.needs_scores(checkpoint) else []

    def epoch(self, step: int, every: int) -> int:
        """Which measurement the rescues of ``step`` use: one for the run (measured once), or
        the last evaluation checkpoint's (re-measured every ``every`` steps)."""
        return 0 if self.kind.measure == "once" else step // max(every, 1)

    def absorb(self, tasks: Sequence[Task], episodes: Sequence[Any], step: int,
               record: Any = None) -> None:
        """Take a measurement: ``episodes`` played :meth:`measured`'s harnesses on ``tasks``
        (each harness's tasks in order). Sibling success ranks the pool; when judges write
        profiles, the first writes them from the paired trajectories, recorded at checkpoint
        ``step`` in ``record`` (a path) when given."""
        n = len(tasks)
        success = np.array([e.success for e in episodes[:len(self.pool) * n]],
                           dtype=float).reshape(len(self.pool), n)
        self.set_scores(success, [t.category for t in tasks])
        if self.kind.profiles:
            from hscale.train.harness_s._profiles import re_anchor

            re_anchor(self, tasks, episodes, step, record)

    def set_scores(self, success: np.ndarray, categories: Sequence[str]) -> None:
        """``success[i, j]``: pool harness i on validation task j (of category j)."""
        labels = np.asarray(categories)
        self.score = {c: success[:, labels == c].mean(axis=1) for c in set(categories)}

    def route(self, jobs: Sequence[Any]) -> list[Any]:
        """Rank-1 routing: each routed evaluation job (hscale.train.planning.EvalJob) under
        the sibling picked first for its task, one pick a task shared by its runs; other
        jobs as they are."""
        picked: dict[str, str] = {}
        out = []
        for job in jobs:
            if job.routed:
                if job.task.task_id not in picked:
                    picked[job.task.task_id] = self.pick(job.task, 1)[0]
                job = job._replace(harness=picked[job.task.task_id])
            out.append(job)
        return out

    def metrics(self) -> dict[str, float]:
        """What its judges did so far (votes cast and lost), for train.parquet; {} for
        routers without judges."""
        return self.tally.as_dict() if self.tally else {}


def require_judges(manifests: Sequence[Any], where: str = "") -> None:
    """An arm whose router has judges stops before anything is written when no judge is
    configured (``where``: where the judges must be reachable, said in the hint)."""
    from hscale.train.harness_s._profiles import judges

    judged = [m for m in manifests if m.assignment.mode == "rescue"
              and ROUTERS.get(m.assignment.router or "original").profiles]
    if judged and not judges():
        raise HscaleError(f"arm {judged[0].arm}: router {judged[0].assignment.router} needs "
                          "judges, and none is configured", "set HSCALE_JUDGE_URL and "
                          "HSCALE_JUDGE_MODEL (HSCALE_ROUTER_JUDGES=a,b,c for several "
                          f"voters){where}")
