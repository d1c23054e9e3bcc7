"""An append-only journal of rows, one JSON object a line, for work that must survive its
process being killed: each row is written and flushed to the operating system as it is
appended, so SIGTERM or SIGKILL of the writer loses nothing already appended; ``fsync``
runs at most every ``sync_every_s`` seconds (a machine that loses power may lose that
last interval). A line cut short by a kill is dropped on reading and cut off before the
next append, so a resumed writer never glues two rows together.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any


class Journal:
    """Rows appended to ``path`` (created with its folder on the first append)."""

    def __init__(self, path: str | Path, sync_every_s: float = 1.0) -> None:
        self.path, self.sync_every_s = Path(path), sync_every_s
        self._handle: Any = None
        self._synced = 0.0
        self._lock = threading.Lock()  # rows from several threads stay whole

    def append(self, row: dict[str, Any]) -> None:
        line = (json.dumps(row, ensure_ascii=False, default=_plain) + "\n").encode()
        with self._lock:
            if self._handle is None:
                self._handle = _open_for_append(self.path)
            self._handle.write(line)
            self._handle.flush()
            if time.monotonic() - self._synced >= self.sync_every_s:
                os.fsync(self._handle.fileno())
                self._synced = time.monotonic()

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                with contextlib.suppress(OSError):
                    self._handle.flush()
                    os.fsync(self._handle.fileno())
                self._handle.close()
                self._handle = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_journal(path: str | Path) -> list[dict[str, Any]]:
    """The whole rows of a journal, in order (none when it is missing); a last line cut
    short by a kill, or any line that is not a JSON object, is left out."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return []
    rows = []
    for line in data.split(b"\n")[:data.count(b"\n")]:  # the newline-ended lines
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _open_for_append(path: Path) -> Any:
    """``path`` open for appending, a torn last line (no newline) cut off first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+b")  # noqa: SIM115 -- held open by the journal
    size = handle.seek(0, os.SEEK_END)
    if size:
        handle.seek(max(0, size - 65536))
        tail = handle.read()
        if not tail.endswith(b"\n"):
            cut = tail.rfind(b"\n")
            if cut < 0 and size > len(tail):  # one line longer than the tail: find its start
                data = path.read_bytes()
                keep = data.rfind(b"\n") + 1
            else:
                keep = size - len(tail) + cut + 1
            handle.truncate(keep)
    return handle


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers; anything else JSON lacks as its text."""
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)


__all__ = ["Journal", "read_journal"]
