"""Task lists on disk: loading tasks from a folder of ClawGym task folders, a ``.jsonl`` or a
``.parquet`` list (rejecting duplicate ids), and writing ``.jsonl``/``.parquet`` lists
atomically."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from harness.tasks.clawgym import load_task_folder
from harness.tasks.rows import JSON_FIELDS, task_from_row, task_to_row
from harness.tasks.specs import FOLDER_HINT
from harness.tasks.task import Task
from hscale.errors import HscaleError


def load_tasks(path: str | Path) -> list[Task]:
    """Load tasks from a folder of ClawGym task folders (or one), a .jsonl or a .parquet list."""
    path = Path(path)
    if path.is_dir():
        if (path / "data_entry.json").is_file():
            return [load_task_folder(path)]
        folders = sorted(p for p in path.iterdir() if (p / "data_entry.json").is_file())
        if not folders:
            raise HscaleError(f"{path}: no task folders (none holds data_entry.json)",
                              FOLDER_HINT)
        return [load_task_folder(p) for p in folders]
    if not path.is_file():
        raise HscaleError(f"{path}: no such file or folder",
                          "give a folder of task folders, a .jsonl or a .parquet task list")
    if path.suffix == ".jsonl":
        rows = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((f"{path}: line {lineno}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise HscaleError(f"{path}: line {lineno}: not valid JSON ({exc.msg})",
                                  "write one JSON object per line") from None
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path).to_pylist()
        except Exception as exc:  # any reader failure: a bad file
            raise HscaleError(f"{path}: cannot read parquet ({exc})") from None
        rows = [(f"{path}: row {i}", row) for i, row in enumerate(table)]
    else:
        raise HscaleError(f"{path}: unknown task list format {path.suffix!r}",
                          "use .jsonl, .parquet or a folder of ClawGym task folders")
    tasks = [task_from_row(row, where, base=path.parent) for where, row in rows]
    seen: set[str] = set()
    for task in tasks:
        if task.task_id in seen:
            raise HscaleError(f"{path}: task id {task.task_id!r} appears twice")
        seen.add(task.task_id)
    return tasks


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
