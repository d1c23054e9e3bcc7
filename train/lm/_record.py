"""The record of a serving endpoint: one row per request, on disk before its reply is sent.

Each server appends its rows to a journal of its own (``_requests-*.jsonl`` in the record
folder, :class:`hscale.journal.Journal`: written and flushed to the operating system row by
row), so SIGTERM or SIGKILL of the server loses no answered request; only a machine that
loses power may lose the last second. A server that stops cleanly compacts its journal into
one parquet part (``requests-*.parquet``, written atomically, then the journal removed); the
next server to record into the folder compacts the journals of servers that were killed
(a journal whose writer still holds its lock is left alone).

:func:`read_record` reads it all back, parts and journals, oldest first.
``pandas.read_parquet(folder)`` reads the compacted parts (it skips names starting with
``_``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hscale.journal import Journal, read_journal

# ``api``: chat, responses or messages; ``session``: the client's session (a header such as
# x-claude-code-session-id); ``tools``: the names offered (``tool_specs``: with their
# descriptions and parameters); ``tool_calls``, ``token_ids`` of
# the reply, ``prompt_ids`` the model was given and the reply's ``logprobs``, as JSON text
# ("" where the model does not say); ``by``: model, or server for a text it wrote itself
RECORD_COLUMNS = ("time", "request_id", "path", "method", "api", "status", "model", "session",
                  "messages", "params", "tools", "tool_specs", "reply", "tool_calls",
                  "token_ids",
                  "prompt_ids", "logprobs", "by", "finish_reason", "prompt_tokens",
                  "completion_tokens", "seconds", "error")
JOURNAL_PREFIX, PART_PREFIX = "_requests-", "requests-"


class Recorder:
    """Rows of one server, appended to its journal as they come (thread-safe)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        compact_abandoned(self.folder)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        self.name = f"{stamp}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.path = self.folder / f"{JOURNAL_PREFIX}{self.name}.jsonl"
        self._journal = Journal(self.path)
        self._lock_fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)  # held while this server writes
        self._closed = False

    def add(self, row: dict[str, Any]) -> None:
        """Append ``row``; it is on disk when this returns (a row after close still is)."""
        stamp = row.get("time")
        self._journal.append({**row, "time": stamp.isoformat()
                              if isinstance(stamp, datetime) else stamp})

    def close(self) -> None:
        """Compact the journal into a parquet part and remove it."""
        if self._closed:
            return
        self._closed = True
        self._journal.close()
        _compact(self.path)
        os.close(self._lock_fd)


def compact_abandoned(folder: Path) -> None:
    """Turn the journals of servers that are gone into parquet parts."""
    for path in sorted(folder.glob(f"{JOURNAL_PREFIX}*.jsonl")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # its server is still writing
            os.close(fd)
            continue
        try:
            _compact(path)
        finally:
            os.close(fd)


def _compact(journal: Path) -> None:
    rows = read_journal(journal)
    if rows:
        from hscale.files import write_parquet

        part = journal.with_name(f"{PART_PREFIX}{journal.stem[len(JOURNAL_PREFIX):]}.parquet")
        write_parquet(part, _frame(rows))
    with contextlib.suppress(FileNotFoundError):
        journal.unlink()


def _frame(rows: list[dict[str, Any]]) -> Any:
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(RECORD_COLUMNS))
    text = [c for c in RECORD_COLUMNS if c not in ("time", "status", "prompt_tokens",
                                                   "completion_tokens", "seconds")]
    frame[text] = frame[text].fillna("").astype(str)  # rows of an older server lack some
    frame["time"] = pd.to_datetime(frame["time"], utc=True, format="ISO8601")
    return frame


def read_record(folder: str | Path) -> Any:
    """Every recorded request of ``folder`` (compacted parts and live or abandoned
    journals), oldest first, as a pandas DataFrame."""
    import pandas as pd

    folder = Path(folder)
    frames = [_frame(pd.read_parquet(p).to_dict("records"))
              for p in sorted(folder.glob(f"{PART_PREFIX}*.parquet"))]
    frames += [_frame(rows) for p in sorted(folder.glob(f"{JOURNAL_PREFIX}*.jsonl"))
               if (rows := read_journal(p))]
    if not frames:
        return _frame([])
    return pd.concat(frames, ignore_index=True).sort_values("time", kind="stable"
                                                            ).reset_index(drop=True)


__all__ = ["RECORD_COLUMNS", "Recorder", "compact_abandoned", "read_record"]
