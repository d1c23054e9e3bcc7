"""JobBench tasks as hscale Tasks: occupational tasks graded by an LLM against a rubric.

A JobBench parquet row holds ``task_id, occupation, task_num, prompt, reference_files,
rubric_json, task_card``. How it maps:

- ``user_query`` is ``prompt``, ``category`` is ``occupation``, ``split`` is "eval" and
  ``grading_type`` "llm_judge"; ``occupation``, ``task_num`` and ``task_card`` go to metadata.
- ``task_id`` follows the safe-name rule as in :mod:`hscale.harness.tasks.pinchbench` (other
  characters become '-'; the original is kept in ``metadata["source_id"]``).
- ``reference_files`` become ``input_files`` when they are ``{name: text}`` (a mapping or its
  JSON text) or a list of ``{path, content}``. Binary files (bytes that are not UTF-8, text with
  a NUL) and entries without content are skipped and listed in ``metadata["skipped_files"]``:
  the agent's tools read text.
- ``rubric_json`` (a list, or its JSON text, of ``{criterion|text|description, weight}``; a
  mapping holding that list under "criteria", "rubric" or "items" is accepted too) becomes a
  "rubric" checker with the prompt as the judge's context; a missing weight counts 1.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.harness.tasks.clawgym import MAX_INPUT_FILE_BYTES, MAX_INPUT_TOTAL_BYTES
from hscale.harness.tasks.pinchbench import safe_task_id
from hscale.harness.tasks.specs import check_spec, path_problem
from hscale.harness.tasks.task import Task

REQUIRED = ("task_id", "prompt", "rubric_json")
HINT = ("JobBench rows hold task_id, occupation, task_num, prompt, reference_files (name -> "
        "text) and rubric_json (a list of {criterion, weight})")
_TEXT_KEYS = ("criterion", "text", "description")


def load_jobbench(path: str | Path) -> list[Task]:
    """Tasks from a JobBench parquet file; every problem is an HscaleError naming the row."""
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
    tasks: list[Task] = []
    seen: set[str] = set()
    for i, row in enumerate(table.to_pylist()):
        task = _task(row, f"{path}: row {i}")
        if task.task_id in seen:
            raise HscaleError(f"{path}: row {i}: task id {task.task_id!r} appears twice",
                              "give every task its own id")
        seen.add(task.task_id)
        tasks.append(task)
    return tasks


def _task(row: dict[str, Any], where: str) -> Task:
    raw_id = row.get("task_id")
    task_id = safe_task_id(raw_id) if raw_id not in (None, "") else ""
    if not task_id:
        raise HscaleError(f"{where}: task_id {raw_id!r} is missing or has no letter or digit",
                          HINT)
    where = f"{where} ({raw_id})"
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise HscaleError(f"{where}: prompt is missing or empty", HINT)
    files, skipped = _reference_files(row.get("reference_files"), where)
    occupation = row.get("occupation")
    metadata: dict[str, Any] = {"occupation": occupation, "task_num": row.get("task_num"),
                                "task_card": row.get("task_card")}
    if skipped:
        metadata["skipped_files"] = skipped
    if str(raw_id) != task_id:
        metadata["source_id"] = str(raw_id)
    checker = check_spec({"kind": "rubric", "criteria": _criteria(row["rubric_json"], where),
                          "context": prompt}, where)
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
        raise HscaleError(f"{where}: {field} is not valid JSON ({exc.msg})", HINT) from None


def _criteria(raw: object, where: str) -> list[dict[str, Any]]:
    items = _json(raw, "rubric_json", where)
    if isinstance(items, dict):
        items = next((items[k] for k in ("criteria", "rubric", "items") if k in items), None)
    if not isinstance(items, list) or not items:
        raise HscaleError(f"{where}: rubric_json holds no list of criteria", HINT)
    criteria = []
    for n, item in enumerate(items):
        if isinstance(item, str):
            item = {"text": item}
        text = next((item[k] for k in _TEXT_KEYS if isinstance(item, dict)
                     and isinstance(item.get(k), str) and item[k].strip()), None)
        if text is None:
            raise HscaleError(f"{where}: rubric criterion {n} has no criterion text",
                              "give each criterion a 'criterion', 'text' or 'description'")
        weight = item.get("weight", 1.0)
        if isinstance(weight, str):
            with contextlib.suppress(ValueError):  # else check_spec names the bad weight
                weight = float(weight)
        criteria.append({"text": text, "weight": 1.0 if weight is None else weight})
    return criteria


def _reference_files(raw: object, where: str) -> tuple[dict[str, str], list[str]]:
    """(text files, names of skipped ones) from a row's reference_files."""
    value = _json(raw, "reference_files", where)
    if value is None:
        return {}, []
    if isinstance(value, dict):
        entries = list(value.items())
    elif isinstance(value, list):  # {path, content} items, or a parquet map's (key, value) pairs
        entries = []
        for item in value:
            if isinstance(item, dict):
                entries.append((item.get("path") or item.get("name"), item.get("content")))
            elif isinstance(item, tuple | list) and len(item) == 2:
                entries.append((item[0], item[1]))
            else:
                entries.append((item, None))
    else:
        raise HscaleError(f"{where}: reference_files must map names to text", HINT)
    files: dict[str, str] = {}
    skipped: list[str] = []
    total = 0
    for name, content in entries:
        problem = path_problem(name)
        if problem:
            raise HscaleError(f"{where}: reference file {name!r}: {problem}", HINT)
        text = _text(content)
        if text is None:
            skipped.append(name)
            continue
        size = len(text.encode("utf-8"))
        total += size
        if size > MAX_INPUT_FILE_BYTES or total > MAX_INPUT_TOTAL_BYTES:
            raise HscaleError(f"{where}: reference files are too large (limit "
                              f"{MAX_INPUT_FILE_BYTES} bytes a file, {MAX_INPUT_TOTAL_BYTES} "
                              "in all)", "keep task inputs small")
        files[name] = text
    return files, skipped


def _text(content: object) -> str | None:
    """Text content, or None for binary or missing content."""
    if isinstance(content, bytes | bytearray):
        try:
            content = bytes(content).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(content, str) or "\0" in content:
        return None
    return content


def _jsonable(value: Any) -> Any:
    """Metadata that task lists can store: anything JSON cannot hold becomes its text."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return json.loads(json.dumps(value, default=str))
