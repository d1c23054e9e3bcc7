"""A batched driver's waits, taken off its thread: ended episodes' scoring, and tool calls
that wait on a process.

A batched driver (the embedded sampler, :func:`hscale.train.lm.drive`) waits for nothing
but its model, yet scoring an ended episode can wait: a reward script starts in its sandbox
(about 60 ms, of which 6 are CPU: namespaces and an interpreter), a rubric asks a judge over
HTTP. Scored inline, every such wait holds up the whole batch. :class:`Finisher` runs
:meth:`TurnEngine.finish` in a few threads instead, so the batch goes on while checkers
wait; what an episode scores, and which episodes share a forward call, does not change.
Likewise a wave of turns whose tool calls run shell commands (each in a sandbox of its own)
costs its slowest command under :func:`submit_all`, not the sum of them.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import cache

from hscale.harness._engine import Episode, Generation, TurnEngine

THREADS = 4  # checkers mostly wait (a sandbox's start, a judge's reply), not compute
TOOL_THREADS = 8  # shell commands side by side: a sandbox's start is mostly waiting


@cache
def _pool(pid: int, purpose: str = "finish", threads: int = THREADS) -> ThreadPoolExecutor:
    """The process's threads for ``purpose``, started once (a forked child, whose ``pid``
    differs, starts its own): each keeps a worker for callable checkers
    (hscale.harness.tasks._timeout), which a pool per batch would leave behind."""
    return ThreadPoolExecutor(threads, thread_name_prefix=f"hscale-{purpose}")


class Finisher:
    """Finishes ended episodes in background threads. A driver calls :meth:`wait` when its
    batch ends, and also when it was interrupted: every episode handed over is then scored
    and its workspace deleted, so an interrupted driver loses none that had ended."""

    def __init__(self) -> None:
        self._pending: dict[Hashable, Future[Episode]] = {}

    def submit(self, key: Hashable, engine: TurnEngine) -> None:
        """Score ``engine``'s episode and delete its workspace, in the background."""
        self._pending[key] = _pool(os.getpid()).submit(engine.finish)

    def ready(self) -> dict[Hashable, Episode]:
        """The episodes scored since the last call, in the order they were submitted."""
        return {key: self._pending.pop(key).result()
                for key, future in list(self._pending.items()) if future.done()}

    def wait(self) -> dict[Hashable, Episode]:
        """Every episode still being scored, once all are, in the order submitted (the
        first error of a finish is raised only after every other has ended)."""
        pending, self._pending = self._pending, {}
        wait(list(pending.values()))
        return {key: future.result() for key, future in pending.items()}


def submit_all(engines: Sequence[TurnEngine], generations: Sequence[Generation]) -> list[bool]:
    """:meth:`TurnEngine.submit` of each engine's generation, in order, with the tool calls
    that wait on a process (:meth:`Env.waits`: the shell's ``run``) run side by side; True
    for each episode that has ended. Each episode sees what submitting them one after
    another gives: parsing and observing stay on this thread, in order. Every call has
    ended when this returns or raises (an error, or Ctrl-C)."""
    calls = [engine.take(gen) for engine, gen in zip(engines, generations, strict=True)]
    waiting = [i for i, call in enumerate(calls)
               if call is not None and engines[i].env.waits(call)]
    results = {}
    if len(waiting) > 1:
        pool, futures = _pool(os.getpid(), "tool", TOOL_THREADS), {}
        try:
            for i in waiting:
                futures[i] = pool.submit(engines[i].env.execute, calls[i])
            wait(list(futures.values()))
        except BaseException:  # Ctrl-C: the commands end (each by its limit) before the
            wait(list(futures.values()))  # driver deletes their workspaces
            raise
        results = {i: future.result() for i, future in futures.items()}
    ended = []
    for i, (engine, call) in enumerate(zip(engines, calls, strict=True)):
        if call is None:
            ended.append(engine.done)
        else:
            result = results[i] if i in results else engine.env.execute(call)
            ended.append(engine.observe(call, result))
    return ended


__all__ = ["Finisher", "submit_all"]
