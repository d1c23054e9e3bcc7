"""Black-box episodes of an evaluation as Ray tasks: each task opens the model on its node (a
folder or preset the node has, or an upstream endpoint, which ``hscale serve`` then fronts
there), serves it on that node's loopback and plays its share of the episodes side by side
(:func:`hscale.train.blackbox._eval.played`); the driver hears of each share as it ends and
journals its rows, so an evaluation whose task or node dies resumes from what it kept, as a
local one does. The CLIs must be installed on every node (``hscale harness install``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hscale.errors import HscaleError
from hscale.harness.tasks import Task

SHARE = 4  # episodes a task: the model is opened once a task, its CLIs run side by side
TASK_NAME = "hscale-blackbox-episodes"


def play_on_ray(address: str, model: str, jobs: Sequence[tuple[str, Task]],
                done: Callable[[int, Any], None], *, greedy: Sequence[bool] | None = None,
                served_name: str | None = None, **kwargs: Any) -> None:
    """:func:`hscale.train.blackbox._eval.play` with the episodes spread over a Ray
    cluster, ``SHARE`` a task; ``done(index, episode)`` as each task's share comes back."""
    if not jobs:
        return
    from hscale.train.ray_cluster import connect

    connect(address)
    import ray

    remote = ray.remote(num_cpus=1, max_retries=0)(_share).options(name=TASK_NAME)
    flags = list(greedy) if greedy is not None else [None] * len(jobs)
    pending = {remote.remote(model, served_name, list(jobs[i:i + SHARE]),
                             flags[i:i + SHARE], kwargs): i
               for i in range(0, len(jobs), SHARE)}
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                start = pending.pop(ref)
                try:
                    episodes = ray.get(ref)
                except Exception as exc:  # a task's failure, as Ray wraps it
                    raise HscaleError(f"a black-box task on the cluster failed: "
                                      f"{_cause(exc)}", "finished episodes are kept: fix the "
                                      "node (is the harness installed there?) and rerun"
                                      ) from None
                for k, episode in enumerate(episodes):
                    done(start + k, episode)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)


def _share(model: str, served_name: str | None, jobs: list[tuple[str, Task]],
           greedy: list[bool | None], kwargs: dict[str, Any]) -> list[Any]:
    from hscale.train.blackbox import played
    from hscale.train.lm import served_model

    flags = None if any(g is None for g in greedy) else [bool(g) for g in greedy]
    return played(served_model(model, served_name), jobs, flags, concurrency=len(jobs),
                  served_name=served_name, **kwargs)


def _cause(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None) or exc
    if isinstance(cause, HscaleError):
        return cause.one_line()
    lines = [line for line in str(cause).strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else type(cause).__name__
