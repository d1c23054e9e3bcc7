"""Harness-S on veRL: zero-signal GRPO groups rescued inside veRL's own rollout worker.

veRL's TransferQueue trainer runs all ``n`` sessions of a prompt in one rollout worker
(``AgentLoopWorkerTQ._run_prompt``) and stores each session's outputs as it finishes. This
extension, loaded by veRL through ``actor_rollout_ref.rollout.agent.agent_loop_manager_class``
(no copy of veRL's trainer), holds a training prompt's sessions back until the group is
complete. If every session failed (reward 0: a zero-signal group, no gradient), the router
named in the row picks ``n`` sibling harnesses from its frozen pool and the same policy,
through the same servers, samples one rollout under each from the task's initial state; that
rescue group is stored under the original group's keys, so GRPO, the replay buffer and the
actor only ever see the rescue. Groups with any success, and validation rows, pass untouched.

The Harness-S correction w = clip(pi_old / q, 0, 2) is veRL's own rollout correction (token
level importance weights, truncated at 2: ``algorithm.rollout_correction``), which the veRL
backend turns on for rescue arms.

A row of a rescue arm carries ``extra_info["rescue"]``: the router, the pool, the base
harness, the space's factors, a seed, and for the ``rule`` and ``profile`` routers the tasks
they measure on (see :func:`rescue_info`). Those routers rank siblings by the policy's greedy
success on them per task category, measured by the worker through the same servers when it
first rescues (``rule``) or again after every evaluation checkpoint (``profile``); the picks
are reproducible from the seed, the row's index and the scores. The ``profiles`` router
(hscale.train.harness_s._profiles) measures the base harness too, with the trajectories, and its
first judge writes the siblings' profiles from them; its judges' votes pick the rescue; and
its Rank-1 routing validation rows (``extra_info["route"]``) run under the sibling voted
first for their task, said back as ``routed_to`` (its index in the pool) in every row.
Importing this module is cheap: veRL is imported when the manager class is first looked up.
"""

from __future__ import annotations

import asyncio
import os
import zlib
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from hscale.contracts import EXTRA_INFO, RescueInfo, RowInfo
from hscale.errors import HscaleError
from hscale.train.harness_s import PROFILES_ENV
from hscale.train.planning import harness_space

RESCUING = "_hscale_rescuing"  # keyword that marks a rescue rollout inside the worker
MANAGER_PATH = f"{__name__}.RescueManager"


def rescue_info(manifest: Any) -> RescueInfo:
    """What a rescue arm's rows carry for the worker to rescue their group; a described
    space, or one with composed harnesses (an evolved pool's children), rides with them (the
    siblings are its labels and harnesses)."""
    from hscale.train.planning import ROUTER_TASKS

    a, space = manifest.assignment, harness_space(manifest)
    return RescueInfo(router=a.router or "original", pool=tuple(a.pool or ()),
                      base=manifest.train_harnesses[0], factors=dict(manifest.space.factors),
                      seed=int(manifest.rng("rescue").integers(2**31)),
                      benchmark=manifest.benchmark.model_dump(mode="json"),
                      count=ROUTER_TASKS,
                      every=int(manifest.evaluation.every or manifest.budget.steps),
                      space=space.to_json() if space.described or space.outside else None)


def check_rescue(manifests: Sequence[Any]) -> None:
    """A rescue group replaces the failed one session for session: on veRL both have
    ``rollouts`` members; a profiles router has its judges."""
    from hscale.train.harness_s import require_judges

    require_judges(manifests, " where veRL's rollout workers run")
    for m in manifests:
        a = m.assignment
        if a.mode == "rescue" and a.group != m.budget.rollouts_per_task:
            raise HscaleError(f"arm {m.arm}: a rescue group of {a.group} cannot replace a group "
                              f"of {m.budget.rollouts_per_task} rollouts on veRL",
                              f"set assignment.group to {m.budget.rollouts_per_task}")


def router_for(info: RescueInfo, index: int) -> Any:
    """The row's router (hscale.train.harness_s), its generator seeded by the run and the row."""
    import numpy as np

    from hscale.design import Factor, FactorSpace
    from hscale.harness.verl_agent_loop import row_space
    from hscale.train.harness_s import Router

    space = FactorSpace(tuple(Factor(k, tuple(v)) for k, v in info.factors.items()))
    rng = np.random.default_rng([info.seed, zlib.crc32(f"rescue-{index}".encode())])
    return Router(info.router, list(info.pool), info.base, space, rng, row_space(info.space))


def measure_tasks(info: RescueInfo) -> list[Any]:
    from hscale.contracts import BenchmarkRecord
    from hscale.train.planning import router_pool

    return router_pool(BenchmarkRecord.model_validate(info.benchmark))[:info.count]


def _info(kwargs: Mapping[str, Any]) -> RowInfo:
    return RowInfo.read(kwargs.get(EXTRA_INFO))


def _final_reward(output: Any) -> float:
    final = output[-1] if isinstance(output, list) else output
    return float(final.reward_score or 0.0)


class _RescueWorker:
    """Mixed into veRL's TransferQueue rollout worker (see :func:`_classes`)."""

    def _groups(self) -> dict[str, dict[str, Any]]:
        if not hasattr(self, "_hscale_groups"):
            self._hscale_groups: dict[str, dict[str, Any]] = {}
        return self._hscale_groups

    def _held(self, kwargs: Mapping[str, Any], validate: bool) -> bool:
        return not validate and not kwargs.get(RESCUING) and _info(kwargs).rescue is not None

    async def _run_agent_loop(self, sampling_params: dict[str, Any], trajectory: dict[str, Any],
                              *, agent_name: str, trace: bool = True, **kwargs: Any) -> Any:
        if trajectory["validate"] and _info(kwargs).route is not None:  # Rank-1 routing
            kwargs = await self._routed(kwargs, trajectory, agent_name)
        if not self._held(kwargs, trajectory["validate"]):
            return await super()._run_agent_loop(sampling_params, trajectory,
                                                 agent_name=agent_name, trace=trace, **kwargs)
        group = self._groups().setdefault(kwargs["uid"], {
            "n": int(self.config.actor_rollout_ref.rollout.n), "done": {}, "errors": 0})
        group["call"] = (sampling_params, trajectory, agent_name)
        try:
            return await super()._run_agent_loop(sampling_params, trajectory,
                                                 agent_name=agent_name, trace=trace, **kwargs)
        except BaseException:
            group["errors"] += 1  # never leave the group waiting for a session that died
            await self._settle(kwargs["uid"], trajectory["validate"])
            raise

    async def _agent_loop_postprocess(self, output: Any, validate: bool, **kwargs: Any) -> Any:
        if kwargs.get(RESCUING):
            return output  # the group puts it, under the failed session's key
        if not self._held(kwargs, validate):
            return await super()._agent_loop_postprocess(output, validate, **kwargs)
        self._groups()[kwargs["uid"]]["done"][kwargs["session_id"]] = (output, kwargs)
        await self._settle(kwargs["uid"], validate)
        return None

    async def _settle(self, uid: str, validate: bool) -> None:
        """When the group is complete: rescue it if it has no success, then store it."""
        group = self._groups().get(uid)
        if group is None or len(group["done"]) + group["errors"] < group["n"]:
            return
        del self._groups()[uid]
        sessions = group["done"]
        if not group["errors"] and all(_final_reward(o) <= 0 for o, _ in sessions.values()):
            sessions = await self._rescue(group) or sessions
        for _, (output, kwargs) in sorted(sessions.items()):
            await super()._agent_loop_postprocess(output, validate, **kwargs)

    async def _rescue(self, group: dict[str, Any]) -> dict[int, tuple[Any, dict]] | None:
        """One rollout under each routed sibling, from the task's initial state."""
        from hscale.harness.verl_agent_loop import row_task

        sampling_params, trajectory, agent_name = group["call"]
        sessions = sorted(group["done"].items())
        info = _info(sessions[0][1][1])
        rescue = RescueInfo.read(info.rescue)
        router = router_for(rescue, info.index)
        if router.measures:
            router.score, router.profiles = await self._scores(rescue, trajectory,
                                                               agent_name, router)
        task = row_task(info)
        # the profiles router's judges answer over the network: off the event loop
        siblings = await asyncio.to_thread(router.pick, task, len(sessions))

        async def one(label: str, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
            mine = _info(kwargs)
            row = {**kwargs, EXTRA_INFO: mine.replace(harness=label,
                                                      rescued_from=mine.harness).write()}
            output = await super(_RescueWorker, self)._run_agent_loop(
                sampling_params, trajectory, agent_name=agent_name, trace=False,
                **row, **{RESCUING: True})
            for out in output if isinstance(output, list) else [output]:
                out.extra_fields["hscale_rescued"] = 1
            return output, row

        try:
            done = await asyncio.gather(*[one(label, kwargs)
                                          for label, (_, (_, kwargs)) in zip(siblings, sessions,
                                                                             strict=True)])
        except Exception:  # a failed rescue keeps the failed group (no signal, but no loss)
            return None
        return {sid: result for (sid, _), result in zip(sessions, done, strict=True)}

    async def _routed(self, kwargs: dict[str, Any], trajectory: dict[str, Any],
                      agent_name: str) -> dict[str, Any]:
        """A routing row under the sibling the judges vote first for its task, with the
        profiles of this checkpoint's policy (re-anchored as the rescues' are); the pick is
        the same for every run of a task (its router is seeded by the task)."""
        from hscale.harness.verl_agent_loop import row_task

        info = _info(kwargs)
        task = row_task(info)
        route = RescueInfo.read(info.route)
        router = router_for(route, zlib.crc32(task.task_id.encode()))
        router.score, router.profiles = await self._scores(route, trajectory, agent_name,
                                                           router)
        label = (await asyncio.to_thread(router.pick, task, 1))[0]
        return {**kwargs, EXTRA_INFO: info.replace(
            harness=label, routed_to=list(route.pool).index(label)).write()}

    async def _scores(self, info: RescueInfo, trajectory: dict[str, Any],
                      agent_name: str, router: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """The policy's greedy success per pool harness and task category (rule: measured
        once; profile: again after every evaluation checkpoint), measured once per worker;
        for the profiles router the base harness's trajectories too, and the profiles its
        first judge writes from them (hscale.train.harness_s._profiles): (scores, profiles)."""
        from hscale.harness.verl_agent_loop import TRANSCRIPT, row_space, to_verl_rows

        step = int(trajectory.get("step") or 0)
        every = max(info.every, 1)
        epoch = router.epoch(step, every)
        key = (info.router, info.pool, epoch)
        cache = self.__dict__.setdefault("_hscale_scores", {})
        lock = self.__dict__.setdefault("_hscale_lock", asyncio.Lock())
        async with lock:
            if key not in cache:
                tasks = measure_tasks(info)
                labels = router.measured()
                rows = [{k: v for k, v in row.items() if k != "agent_name"} for row in
                        to_verl_rows(tasks, labels, "router",
                                     space=row_space(info.space)).to_dict("records")]
                greedy = {"temperature": 0.0, "top_p": 1.0, "top_k": -1, "logprobs": True}
                outputs = await asyncio.gather(*[
                    super(_RescueWorker, self)._run_agent_loop(
                        greedy, trajectory, agent_name=agent_name, trace=False, **row,
                        **{RESCUING: True, TRANSCRIPT: router.reads_trajectories})
                    for row in rows])
                by_row = {(RowInfo.read(r[EXTRA_INFO]).harness,
                           RowInfo.read(r[EXTRA_INFO]).task_id): o
                          for r, o in zip(rows, outputs, strict=True)}
                episodes = [_episode(by_row[(label, t.task_id)]) for label in labels
                            for t in tasks]
                # the judges are asked over the network: off the event loop
                await asyncio.to_thread(router.absorb, tasks, episodes, epoch * every,
                                        os.environ.get(PROFILES_ENV))
                cache[key] = (router.score, router.profiles)
        return cache[key]


def _episode(output: Any) -> Any:
    """A measured rollout as the router reads an episode: its success and, when the agent
    loop handed them back, its messages."""
    from types import SimpleNamespace

    from hscale.harness import Message
    from hscale.harness.verl_agent_loop import TRANSCRIPT

    final = output[-1] if isinstance(output, list) else output
    turns = final.extra_fields.get(TRANSCRIPT) or []
    return SimpleNamespace(success=_final_reward(output) >= 1.0,
                           messages=[Message(role, content) for role, content in turns])


@cache
def _classes() -> tuple[type, type]:
    """veRL's TransferQueue worker and manager with the rescue mixed in (imports veRL)."""
    import ray
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

    worker = type("RescueWorker", (_RescueWorker, AgentLoopWorkerTQ.__ray_actor_class__),
                  {"__module__": __name__, "__qualname__": "RescueWorker"})

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        AgentLoopManagerTQ.__init__(self, *args, **kwargs)
        self.agent_loop_workers_class = ray.remote(worker)

    manager = type("RescueManager", (AgentLoopManagerTQ,),
                   {"__module__": __name__, "__qualname__": "RescueManager",
                    "__init__": __init__,
                    "__doc__": "veRL's TransferQueue manager whose workers rescue "
                               "zero-signal groups (harness.verl_rescue)."})
    return worker, manager


def __getattr__(name: str) -> Any:
    """``RescueWorker`` and ``RescueManager`` are built on first lookup (veRL is heavy)."""
    if name in ("RescueWorker", "RescueManager"):
        return dict(zip(("RescueWorker", "RescueManager"), _classes(), strict=True))[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
