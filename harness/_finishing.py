"""Ended episodes scored off the driver's thread.

A batched driver (the embedded sampler, :func:`hscale.train.lm.drive`) waits for nothing
but its model, yet scoring an ended episode can wait: a reward script starts in its sandbox
(about 60 ms, of which 6 are CPU: namespaces and an interpreter), a rubric asks a judge over
HTTP. Scored inline, every such wait holds up the whole batch. :class:`Finisher` runs
:meth:`TurnEngine.finish` in a few threads instead, so the batch goes on while checkers
wait; what an episode scores, and which episodes share a forward call, does not change.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import cache

from hscale.harness._engine import Episode, TurnEngine

THREADS = 4  # checkers mostly wait (a sandbox's start, a judge's reply), not compute


@cache
def _pool(pid: int) -> ThreadPoolExecutor:
    """The process's finishing threads, started once (a forked child, whose ``pid``
    differs, starts its own): each keeps a worker for callable checkers
    (hscale.harness.tasks._timeout), which a pool per batch would leave behind."""
    return ThreadPoolExecutor(THREADS, thread_name_prefix="hscale-finish")


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


__all__ = ["Finisher"]
