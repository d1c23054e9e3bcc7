"""Task lists on disk: loading tasks from a folder of ClawGym task folders, a ``.jsonl`` or a
``.parquet`` list (rejecting duplicate ids), and writing ``.jsonl``/``.parquet`` lists
atomically."""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.harness.tasks._clawgym import load_task_folder
from hscale.harness.tasks._rows import JSON_FIELDS, task_from_row, task_to_row
from hscale.harness.tasks._specs import FOLDER_HINT
from hscale.harness.tasks._task import Task

MAX_TASK_LIST_BYTES = 256 << 20


def load_tasks(path: str | Path, left_out: list | None = None) -> list[Task]:
    """Load tasks from a folder of ClawGym task folders (or one), a .jsonl or a .parquet list.

    A list file must be a regular file of at most ``MAX_TASK_LIST_BYTES``; data nested too
    deeply for the JSON reader is an error naming the file (and line), never a traceback.
    With ``left_out`` a list, a task folder or row that cannot be loaded is appended to it as
    ``(where, one-line problem)`` and left out; else (and when no task loads) the first problem
    is raised.
    """
    path = Path(path)
    if path.is_dir():
        if os.path.lexists(path / "data_entry.json"):
            return [load_task_folder(path)]
        folders = sorted(p for p in path.iterdir() if os.path.lexists(p / "data_entry.json"))
        if not folders:
            raise HscaleError(f"{path}: no task folders (none holds data_entry.json)",
                              FOLDER_HINT)
        return _unique(path, gather(((str(p), lambda p=p: load_task_folder(p))
                                     for p in folders), left_out), left_out)
    if not path.exists():
        raise HscaleError(f"{path}: no such file or folder",
                          "give a folder of task folders, a .jsonl or a .parquet task list")
    if path.suffix == ".jsonl":
        rows = _jsonl_rows(path)
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        _check_list_file(path)
        try:
            table = pq.read_table(path).to_pylist()
        except Exception as exc:  # any reader failure: a bad file
            raise HscaleError(f"{path}: cannot read parquet ({exc})") from None
        rows = [(f"{path}: row {i}", row) for i, row in enumerate(table)]
    else:
        raise HscaleError(f"{path}: unknown task list format {path.suffix!r}",
                          "use .jsonl, .parquet or a folder of ClawGym task folders")
    return _unique(path, gather(((where, lambda w=where, r=row: _row_task(r, w, path))
                                 for where, row in rows), left_out), left_out)


def gather(loads: Iterable[tuple[str, Callable[[], Task]]], left_out: list | None,
           twin: Callable[[str, str, str], str] | None = None,
           errors: tuple[type[Exception], ...] = (HscaleError,)) -> list[Task]:
    """The tasks ``loads`` make. With ``left_out`` a list, one that fails (raises one of
    ``errors``) is appended to it as ``(where, one-line problem)``, the problem without its
    leading ``where``, and skipped; the first problem is raised when none loads. With None,
    the first problem is raised. ``twin`` ((where, earlier task's where, id) -> message) makes
    a task whose id an earlier one has a problem too, in the order the tasks come."""
    tasks, first, seen = [], None, {}
    for where, load in loads:
        try:
            task = load()
            if twin is not None and task.task_id in seen:
                raise HscaleError(twin(where, seen[task.task_id], task.task_id),
                                  "give every task its own id")
        except errors as exc:
            if left_out is None:
                raise
            problem = exc if isinstance(exc, HscaleError) else HscaleError(
                f"{where}: cannot read ({getattr(exc, 'strerror', None) or exc})",
                "check the file")
            first = first or problem
            left_out.append((where, without_where(problem.one_line(), where)))
            continue
        seen[task.task_id] = where
        tasks.append(task)
    if not tasks and first is not None:
        raise first
    return tasks


def without_where(line: str, where: str) -> str:
    """A one-line message without its leading ``where`` (``where:12:`` becomes ``line 12:``;
    ``where (id): ...`` keeps ``(id): ...``)."""
    rest = line[len(where):]
    if not line.startswith(where) or rest[:1].isdigit():  # "row 12" is not "row 1"
        return line
    number = re.match(r":(\d+):\s*", rest)
    return f"line {number.group(1)}: {rest[number.end():]}" if number else rest.lstrip(": ")


def _row_task(row: Any, where: str, path: Path) -> Task:
    try:
        return task_from_row(row, where, base=path.parent)
    except RecursionError:  # a field's JSON text nested too deeply
        raise HscaleError(f"{where}: nested too deeply",
                          "task rows hold flat data: text, lists and objects") from None


def _unique(path: Path, tasks: list[Task], left_out: list | None) -> list[Task]:
    """``tasks`` with distinct ids: a repeated id is an error (or, with ``left_out``, the later
    task is left out)."""
    seen: set[str] = set()
    kept = []
    for task in tasks:
        if task.task_id in seen:
            if left_out is None:
                raise HscaleError(f"{path}: task id {task.task_id!r} appears twice",
                                  "give every task its own id")
            left_out.append((str(path), f"task id {task.task_id!r} appears twice"))
            continue
        seen.add(task.task_id)
        kept.append(task)
    return kept


def _check_list_file(path: Path) -> None:
    """Refuse a task list that is not a regular file (a FIFO would block the read) or is
    larger than ``MAX_TASK_LIST_BYTES``."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise HscaleError(f"{path}: not a regular file", "give a task list file")
    if info.st_size > MAX_TASK_LIST_BYTES:
        raise HscaleError(f"{path}: {info.st_size} bytes, more than the {MAX_TASK_LIST_BYTES} "
                          "allowed for a task list", "split it into several lists")


def _jsonl_rows(path: Path) -> list[tuple[str, object]]:
    """``(where, row)`` for each non-blank line; lines end at "\n" only, as in JSON Lines
    (a U+2028 inside a JSON string is text, not a line break)."""
    _check_list_file(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TASK_LIST_BYTES + 1)
    except OSError as exc:
        raise HscaleError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_TASK_LIST_BYTES:
        raise HscaleError(f"{path}: more than the {MAX_TASK_LIST_BYTES} bytes allowed for a "
                          "task list", "split it into several lists")
    rows = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HscaleError(f"{path}: line {lineno}: not UTF-8 text ({exc.reason})",
                              "save the task list as UTF-8") from None
        if not line.strip():
            continue
        try:
            rows.append((f"{path}: line {lineno}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise HscaleError(f"{path}: line {lineno}: not valid JSON ({exc.msg})",
                              "write one JSON object per line") from None
        except RecursionError:
            raise HscaleError(f"{path}: line {lineno}: not valid JSON (nested too deeply)",
                              "write one JSON object per line") from None
    return rows


def write_tasks(tasks: Iterable[Task], path: str | Path) -> Path:
    """Write a .jsonl or .parquet task list atomically (nested fields as JSON in parquet)."""
    path = Path(path)
    rows = [task_to_row(t) for t in tasks]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        if path.suffix == ".jsonl":
            Path(tmp).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows),
                                 encoding="utf-8")
        elif path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            flat = [{k: json.dumps(v, sort_keys=True) if k in JSON_FIELDS else v
                     for k, v in r.items()} for r in rows]
            pq.write_table(pa.Table.from_pylist(flat), tmp)
        else:
            raise HscaleError(f"{path}: unknown task list format {path.suffix!r}",
                              "use .jsonl or .parquet")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
