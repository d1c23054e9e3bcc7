"""A wall-clock limit for in-process calls (callable checkers, and the tools in hscale.harness).

A Python call cannot be killed from outside, so each calling thread keeps one worker thread and
walks away from it when a call runs too long; this module owns that bookkeeping.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any


class _Worker:
    """A daemon thread that runs jobs for one calling thread, one at a time.

    Starting a thread per call cost more than most tools do; a stuck job cannot be killed, so
    its worker is abandoned (it is a daemon) and the caller's next call gets a fresh one.
    """

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True, name="hscale-limited").start()

    def _loop(self) -> None:
        while True:
            fn, done, box = self.jobs.get()
            try:
                box["value"] = fn()
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc
            done.set()


_workers = threading.local()


def call_with_timeout(fn: Callable[[], Any], seconds: float) -> Any:
    """Run ``fn`` on this thread's worker; raise TimeoutError if it runs past ``seconds``."""
    worker = getattr(_workers, "worker", None)
    if worker is None:
        worker = _workers.worker = _Worker()
    done, box = threading.Event(), {}
    worker.jobs.put((fn, done, box))
    if not done.wait(seconds):
        _workers.worker = None  # abandon the stuck worker
        raise TimeoutError(f"still running after {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]
