"""JobBench tasks as hscale Tasks: occupational tasks an LLM judge grades against rubrics.

JobBench publishes a parquet file whose rows hold ``task_id, occupation, task_num, prompt,
reference_files, rubric_json, task_card``, with the tasks' files in ``dataset/<occupation>/
taskN/`` beside it. How a row maps:

- ``user_query`` is ``prompt``, ``category`` is ``occupation``, ``split`` is "eval" and
  ``grading_type`` "llm_judge"; ``occupation``, ``task_num`` and ``task_card`` go to metadata.
- ``task_id`` follows the safe-name rule as in :mod:`hscale.harness.tasks._pinchbench` (other
  characters become '-'; the original is kept in ``metadata["source_id"]``).
- ``reference_files`` is a list (or the JSON text of one) of paths relative to the parquet
  file's folder, e.g. ``dataset/Accountants/task1/ledger.xlsx``. Each becomes an input file
  named by its path below the task's folder (``ledger.xlsx``; a path not under
  ``dataset/<occupation>/<task>/`` keeps its whole name). Paths that leave the folder, symbolic
  links (the file or a folder on the way), FIFOs and devices are refused; binary files are kept
  exactly (bytes decoded with ``surrogateescape``). A file may hold up to ``max_asset_bytes``
  (default ``pinchbench.MAX_ASSET_BYTES``), all of a task's together the larger of that and
  ``clawgym.MAX_INPUT_TOTAL_BYTES``.
- ``rubric_json`` (JSON text, or the object itself) is ``{"rubrics": [{"rubric": text,
  "weight": number, "criterion": [text, ...]}, ...]}``. JobBench scores a rubric all or
  nothing: its weight counts only when the judge finds every one of its criteria met, and the
  reward is the met weight over the total. So the checker is a "weighted" spec with one part
  per rubric, each a "rubric" spec with ``scoring: all`` whose context is the prompt and the
  rubric's text, its criteria the judge's yes/no questions.

Every problem is one HscaleError naming the file, the row and the field;
``load_jobbench(..., left_out=[])`` leaves a bad row out instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path, PurePath
from typing import Any

from hscale.errors import HscaleError
from hscale.harness.tasks._clawgym import MAX_INPUT_TOTAL_BYTES
from hscale.harness.tasks._pinchbench import MAX_ASSET_BYTES, check_asset_limit, safe_task_id
from hscale.harness.tasks._specs import check_spec, is_finite_number, path_problem
from hscale.harness.tasks._task import Task
from hscale.harness.tasks._task_lists import gather

REQUIRED = ("task_id", "prompt", "rubric_json")
HINT = ("JobBench rows hold task_id, occupation, task_num, prompt, reference_files (paths into "
        "dataset/<occupation>/taskN/ beside the parquet file) and rubric_json "
        '({"rubrics": [{"rubric": ..., "weight": ..., "criterion": [...]}]})')
FILES_HINT = "put the task's files in dataset/<occupation>/taskN/ beside the parquet file"


def load_jobbench(path: str | Path, *, max_asset_bytes: int = MAX_ASSET_BYTES,
                  left_out: list | None = None) -> list[Task]:
    """Tasks from a JobBench parquet file; every problem is an HscaleError naming the row.

    With ``left_out`` a list, a row that cannot be loaded (or repeats an earlier row's task id)
    is skipped and appended to it as ``("<file>: row <i>", one-line message)`` (the message
    without that prefix); when every row is bad the first problem is raised all the same. With
    ``left_out=None`` the first problem is raised.
    """
    check_asset_limit(max_asset_bytes)
    path = Path(path)
    if not path.is_file():
        raise HscaleError(f"{path}: no such file", "give a JobBench .parquet file")
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # any reader failure: a bad file
        raise HscaleError(f"{path}: cannot read parquet ({exc})", HINT) from None
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        raise HscaleError(f"{path}: no column {', '.join(missing)}", HINT)
    rows = ((f"{path}: row {i}", row) for i, row in enumerate(table.to_pylist()))
    return gather(((where, lambda where=where, row=row: _task(row, where, path.parent,
                                                             max_asset_bytes))
                   for where, row in rows), left_out,
                  twin=lambda where, earlier, task_id: f"{where}: task id {task_id!r} is also "
                  f"row {earlier.rsplit(' ', 1)[1]}'s")


def _task(row: dict[str, Any], where: str, base: Path, limit: int) -> Task:
    raw_id = row.get("task_id")
    task_id = safe_task_id(raw_id) if raw_id not in (None, "") else ""
    if not task_id:
        raise HscaleError(f"{where}: field 'task_id' {raw_id!r} is missing or has no letter or "
                          "digit", HINT)
    where = f"{where} ({raw_id})"
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise HscaleError(f"{where}: field 'prompt' is missing or empty", HINT)
    checker = _checker(row.get("rubric_json"), prompt, where)
    files = _reference_files(row.get("reference_files"), base, where, limit)
    occupation = row.get("occupation")
    metadata: dict[str, Any] = {"occupation": occupation, "task_num": row.get("task_num"),
                                "task_card": row.get("task_card")}
    if str(raw_id) != task_id:
        metadata["source_id"] = str(raw_id)
    try:
        return Task(task_id=task_id, user_query=prompt,
                    category=str(occupation) if occupation else "general",
                    grading_type="llm_judge", input_files=files, checker=checker,
                    split="eval", metadata=_jsonable(metadata))
    except HscaleError as exc:
        raise HscaleError(f"{where}: {exc.message}", exc.hint) from None


def _json(value: object, field: str, where: str) -> object:
    """``value``, parsed when it is JSON text."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise HscaleError(f"{where}: field {field!r} is not valid JSON ({exc.msg})",
                          HINT) from None
    except RecursionError:
        raise HscaleError(f"{where}: field {field!r} is nested too deeply", HINT) from None


def _checker(raw: object, prompt: str, where: str) -> dict[str, Any]:
    """The weighted spec of a row's rubrics: one all-or-nothing rubric part per rubric."""
    value = _json(raw, "rubric_json", where)
    rubrics = value.get("rubrics") if isinstance(value, dict) else None
    if not isinstance(rubrics, list) or not rubrics:
        raise HscaleError(f"{where}: field 'rubric_json' holds no 'rubrics' list", HINT)
    parts = []
    for n, item in enumerate(rubrics):
        field = f"rubric_json rubric {n}"
        if not isinstance(item, dict):
            raise HscaleError(f"{where}: {field} is not an object", HINT)
        text, weight, criteria = item.get("rubric"), item.get("weight"), item.get("criterion")
        if not isinstance(text, str) or not text.strip():
            raise HscaleError(f"{where}: {field} has no 'rubric' text", HINT)
        if isinstance(weight, str):
            with contextlib.suppress(ValueError):  # else the check below names it
                weight = float(weight)
        if not is_finite_number(weight) or weight < 0:
            raise HscaleError(f"{where}: {field} has weight {weight!r}",
                              "rubric weights are finite numbers >= 0")
        if isinstance(criteria, str):
            criteria = [criteria]
        if (not isinstance(criteria, list) or not criteria
                or not all(isinstance(c, str) and c.strip() for c in criteria)):
            raise HscaleError(f"{where}: {field} needs a 'criterion' list of texts", HINT)
        parts.append({"weight": weight, "checker": {
            "kind": "rubric", "scoring": "all", "context": f"{prompt}\n\n## Rubric\n{text}",
            "criteria": [{"text": c, "weight": 1.0} for c in criteria]}})
    return check_spec({"kind": "weighted", "parts": parts}, f"{where}: rubric_json")


def _reference_files(raw: object, base: Path, where: str, limit: int) -> dict[str, str]:
    value = _json(raw, "reference_files", where)
    if value is None:
        return {}
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise HscaleError(f"{where}: field 'reference_files' must be a list of paths", HINT)
    files: dict[str, str] = {}
    total, total_limit = 0, max(MAX_INPUT_TOTAL_BYTES, limit)
    for rel in value:
        data = _read_reference(base, rel, where, limit)
        name = _input_name(rel)
        if name in files:
            raise HscaleError(f"{where}: reference file {rel!r} is named {name!r} in the "
                              "workspace, as an earlier one is", "give files distinct names")
        total += len(data)
        if total > total_limit:
            raise HscaleError(f"{where}: reference files are more than {total_limit} bytes in "
                              "all", "keep task inputs small, or raise max_asset_bytes")
        files[name] = data.decode("utf-8", "surrogateescape")
    return files


def _input_name(rel: str) -> str:
    """A reference file's name in the workspace: its path below ``dataset/<occupation>/
    <task>/``, or the whole path when it is not under such a folder."""
    parts = [p for p in PurePath(rel.replace("\\", "/")).parts if p != "."]
    if len(parts) > 3 and parts[0] == "dataset":
        parts = parts[3:]
    return "/".join(parts)


def _read_reference(base: Path, rel: str, where: str, limit: int) -> bytes:
    """The bytes of ``base/rel``: a regular file inside ``base``, reached through no symbolic
    link, at most ``limit`` bytes; refused (never opened) when it is a FIFO or device."""
    problem = path_problem(rel)
    if problem:
        raise HscaleError(f"{where}: reference file {rel!r}: {problem}",
                          "reference files are paths inside the parquet file's folder")
    current, info = base, None
    parts = [p for p in PurePath(rel.replace("\\", "/")).parts if p != "."]
    for n, part in enumerate(parts):
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            raise HscaleError(f"{where}: reference file {rel!r} not found in {base}",
                              FILES_HINT) from None
        except OSError as exc:
            raise HscaleError(f"{where}: reference file {rel!r}: cannot read "
                              f"({exc.strerror or exc})", FILES_HINT) from None
        if stat.S_ISLNK(info.st_mode):
            raise HscaleError(f"{where}: reference file {rel!r}: {current} is a symbolic link",
                              "copy the file instead of linking it")
        if n < len(parts) - 1 and not stat.S_ISDIR(info.st_mode):
            raise HscaleError(f"{where}: reference file {rel!r} not found in {base}",
                              FILES_HINT)
    if info is None or not stat.S_ISREG(info.st_mode):
        raise HscaleError(f"{where}: reference file {rel!r} is not a regular file (a folder, "
                          "FIFO, socket or device)", "reference files are plain files")
    if info.st_size > limit:
        raise HscaleError(f"{where}: reference file {rel!r} is {info.st_size} bytes, over the "
                          f"{limit} allowed", "raise max_asset_bytes, or keep task inputs small")
    try:
        fd = os.open(current, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise HscaleError(f"{where}: reference file {rel!r} is not a regular file",
                                  "reference files are plain files")
            data = handle.read(limit + 1)
    except OSError as exc:
        raise HscaleError(f"{where}: reference file {rel!r}: cannot read "
                          f"({exc.strerror or exc})",
                          "check the file and its permissions") from None
    if len(data) > limit:
        raise HscaleError(f"{where}: reference file {rel!r} is over the {limit} bytes allowed",
                          "raise max_asset_bytes, or keep task inputs small")
    return data


def _jsonable(value: Any) -> Any:
    """Metadata that task lists can store: anything JSON cannot hold becomes its text."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))
