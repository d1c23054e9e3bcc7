"""Tasks as plain rows (dicts of JSON-able values), the one form shared by JSONL/parquet task
lists and ClawGym ``data_entry.json`` files: converting both ways, and parsing solution steps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.harness._types import BUILTIN_TOOLS, CANONICAL_TOOLS, ToolCall
from hscale.harness.tasks._specs import check_spec, path_problem
from hscale.harness.tasks._task import Task

# Row fields that hold objects; parquet stores them as JSON text.
JSON_FIELDS = ("input_files", "checker", "metadata", "solution", "tools", "limits")


def stored_spec(task: Task, action: str) -> dict[str, Any]:
    """The task's checker spec; a callable checker cannot be ``action`` (stored, exported)."""
    if callable(task.checker):
        raise HscaleError(f"task {task.task_id}: a callable checker cannot be {action}",
                          "give the task a checker spec dict")
    return task.checker


def parse_solution(raw: object, where: str) -> list[ToolCall]:
    """Solution steps ``[{"name": ..., "args": {...}}, ...]`` as ToolCalls.

    A step's ``path`` argument must be a relative path inside the workspace (see
    :func:`~hscale.harness.tasks._specs.path_problem`); the error names the step (counted from 1).
    """
    if not isinstance(raw, list):
        raise HscaleError(f"{where}: 'solution' must be a list of tool calls")
    calls = []
    for i, step in enumerate(raw, start=1):
        if (not isinstance(step, dict) or step.get("name") not in CANONICAL_TOOLS
                or not isinstance(step.get("args", {}), dict)):
            raise HscaleError(f"{where}: bad solution step {repr(step)[:200]}",
                              'write steps as {"name": "read", "args": {"path": "a.txt"}}')
        call = ToolCall(step["name"], {str(k): str(v) for k, v in
                                       step.get("args", {}).items()})
        problem = path_problem(call.args["path"]) if "path" in call.args else None
        if problem:
            raise HscaleError(f"{where}: solution step {i} ({call.name}): path "
                              f"{call.args['path'][:100]!r}: {problem}",
                              "solution paths are relative paths inside the workspace")
        calls.append(call)
    return calls


def task_from_row(row: object, where: str, base: Path | None = None) -> Task:
    """Build a Task from a list row; nested fields may be objects or JSON strings."""
    hint = "rows need task_id, user_query, input_files (path -> text) and a checker spec"
    if not isinstance(row, dict):
        raise HscaleError(f"{where}: a row must be an object", hint)

    def nested(key: str, default: Any) -> Any:
        value = row.get(key)
        if value is None:
            return default
        if isinstance(value, str) and key != "final_answer":
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise HscaleError(f"{where}: field {key!r} is not valid JSON", hint) from None
            except RecursionError:
                raise HscaleError(f"{where}: field {key!r} is not valid JSON (nested too "
                                  "deeply)", hint) from None
        return value

    for key in ("task_id", "user_query", "checker"):
        if row.get(key) in (None, ""):
            raise HscaleError(f"{where}: field {key!r} is missing", hint)
    for key in ("task_id", "user_query"):
        if not isinstance(row[key], str) or not row[key].strip():
            raise HscaleError(f"{where}: field {key!r} must be text, not "
                              f"{type(row[key]).__name__} {row[key]!r}"[:200], hint)
    checker = nested("checker", None)
    if isinstance(checker, dict) and checker.get("kind") == "script" and base is not None:
        script = Path(str(checker.get("path", "")))
        checker = {**checker, "path": str(script if script.is_absolute() else base / script)}
    try:
        return Task(task_id=row["task_id"], user_query=row["user_query"],
                    category=row.get("category") or "general",
                    grading_type=row.get("grading_type") or "code",
                    input_files=nested("input_files", {}), checker=check_spec(checker, where),
                    split=row.get("split") or "train", metadata=nested("metadata", {}),
                    solution=parse_solution(nested("solution", []), where),
                    final_answer=row.get("final_answer"),
                    **_settings(nested("tools", None), nested("limits", None)))
    except HscaleError as exc:
        if exc.message.startswith(where):
            raise
        raise HscaleError(f"{where}: {exc.message}", exc.hint) from None


def _settings(tools: object, limits: object) -> dict[str, Any]:
    """A row's tools and limits as Task keywords (absent: the defaults)."""
    out: dict[str, Any] = {}
    if tools is not None:
        out["tools"] = tuple(tools) if isinstance(tools, list) else tools
    if limits is not None:
        out["limits"] = limits
    return out


def task_to_row(task: Task) -> dict[str, Any]:
    """A JSON-able row for a task list (the checker must be a spec, not a callable); tools and
    limits only where they are not the defaults, so a builtin task's row is what it was."""
    checker = stored_spec(task, "stored")
    settings = {**({"tools": list(task.tools)} if task.tools != BUILTIN_TOOLS else {}),
                **({"limits": dict(task.limits)} if task.limits else {})}
    return {"task_id": task.task_id, "user_query": task.user_query, "category": task.category,
            "grading_type": task.grading_type, "input_files": dict(task.input_files),
            "checker": dict(checker), "split": task.split, "metadata": task.metadata,
            "solution": [{"name": c.name, "args": dict(c.args)} for c in task.solution],
            "final_answer": task.final_answer, **settings}
