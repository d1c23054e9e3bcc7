"""Progress of long work, on a terminal and off one: a bar where someone watches, and plain
lines to stderr where the output goes to a log or a pipe (CI, nohup, a notebook), so a
log shows the work moving and how far it got."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

EVERY_S = 10.0  # off a terminal: a line at most this often, and at the end
QUIET_S = 6  # ... and, while nothing finishes, one every QUIET_S x EVERY_S (a real model's
# episode can take minutes: a silent log looks hung)


@contextmanager
def progress(what: str, console: Console | None = None,
             every_s: float = EVERY_S) -> Iterator[Callable[[int, int], None]]:
    """A ``(done, total)`` callback for ``what`` (``"episodes"``) while the block runs."""
    console = console or Console(stderr=True)
    if console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        with Progress("[progress.description]{task.description}", BarColumn(),
                      MofNCompleteColumn(), TimeRemainingColumn(), console=console,
                      transient=True) as bar:
            task = bar.add_task(what, total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)
        return
    began, said = time.monotonic(), {"at": -every_s, "line": "", "count": ""}
    lock, stop = threading.Lock(), threading.Event()

    def update(done: int, total: int) -> None:
        with lock:
            now = time.monotonic()
            said["count"] = f"{done}/{total}"
            if now - said["at"] < every_s and done < total:
                return
            spent = now - began
            left = f", about {spent / done * (total - done):.0f} s to go" \
                if 0 < done < total else ""
            line = f"{what}: {done}/{total} ({spent:.0f} s{left})"
            if line != said["line"]:
                print(line, file=sys.stderr, flush=True)
            said.update(at=now, line=line)

    def heartbeat() -> None:
        while not stop.wait(every_s):
            with lock:
                now = time.monotonic()
                if said["count"] and now - said["at"] >= QUIET_S * every_s:
                    print(f"{what}: {said['count']} ({now - began:.0f} s, working)",
                          file=sys.stderr, flush=True)
                    said["at"] = now

    beating = threading.Thread(target=heartbeat, daemon=True)
    beating.start()
    try:
        yield update
    finally:
        stop.set()
        beating.join()
