"""Checker specs: the JSON-able dicts that stand for a checker, and the path rule they share.

Kept apart from :class:`~hscale.harness.tasks.task.Task` and from the code that runs checkers,
so both can validate a spec without importing each other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError

TARGETS = ("final", "file", "both")
MAX_PATH_CHARS = 200
MAX_CRITERIA = 100  # a rubric checker asks the judge once per criterion
MAX_CRITERION_CHARS = 10_000
FOLDER_HINT = ("a ClawGym task folder holds data_entry.json (task_id, user_query, metadata), "
               "input_files/ and reward/reward.sh or reward/reward.py")

Checker = Callable[[Path, str], float] | dict[str, Any]


def path_problem(rel: object, max_chars: int = MAX_PATH_CHARS) -> str | None:
    """Why a relative workspace path is unsafe (a short message in the world's words), or None."""
    if not isinstance(rel, str) or not rel.strip():
        return "path is empty"
    if "\x00" in rel:
        return "bad path"
    if len(rel) > max_chars:
        return "path is too long"
    if rel.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", rel):
        return "path must be relative"
    if ".." in re.split(r"[/\\]", rel):
        return "path leaves the workspace"
    return None


def check_spec(spec: object, where: str = "checker") -> dict[str, Any]:
    """Validate a checker spec and return a normalised copy."""
    hint = ('use {"kind": "answer", "expected": ..., "target": "final"|"file"|"both"}, '
            '{"kind": "script", "path": ...} or {"kind": "rubric", "criteria": '
            '[{"text": ..., "weight": 1.0}, ...]}')
    if not isinstance(spec, dict):
        raise HscaleError(f"{where}: checker must be a spec dict or a callable, "
                          f"got {type(spec).__name__}", hint)
    kind = spec.get("kind")
    if kind == "answer":
        expected, target = spec.get("expected"), spec.get("target", "final")
        out_file = spec.get("file", "out.txt")
        if not isinstance(expected, str) or not expected.strip():
            raise HscaleError(f"{where}: answer checker needs a non-empty 'expected' text", hint)
        if target not in TARGETS:
            raise HscaleError(f"{where}: answer target {target!r} is not one of {TARGETS}", hint)
        problem = path_problem(out_file)
        if problem:
            raise HscaleError(f"{where}: answer file {out_file!r}: {problem}")
        return {"kind": "answer", "expected": expected, "target": target, "file": out_file}
    if kind == "script":
        path = spec.get("path")
        if not isinstance(path, str) or Path(path).suffix not in (".sh", ".py"):
            raise HscaleError(f"{where}: script checker needs a 'path' to a .sh or .py file",
                              hint)
        mount = spec.get("mount")
        if mount is None:
            return {"kind": "script", "path": path}
        if not isinstance(mount, str) or not mount.startswith("/") or ".." in mount.split("/"):
            raise HscaleError(f"{where}: script checker 'mount' must be an absolute folder "
                              "path (where the workspace is shown, as ClawGym's "
                              "/root/.openclaw/workspace)", hint)
        return {"kind": "script", "path": path, "mount": mount}
    if kind == "rubric":
        return _rubric_spec(spec, where, hint)
    raise HscaleError(f"{where}: unknown checker kind {kind!r}", hint)


def _rubric_spec(spec: dict[str, Any], where: str, hint: str) -> dict[str, Any]:
    """A "rubric" spec: weighted yes/no criteria an LLM judge decides
    (``hscale.harness.tasks.judge``); the reward is the weighted share of criteria met."""
    criteria, context = spec.get("criteria"), spec.get("context", "")
    if not isinstance(criteria, list) or not criteria:
        raise HscaleError(f"{where}: rubric checker needs a non-empty 'criteria' list", hint)
    if len(criteria) > MAX_CRITERIA:
        raise HscaleError(f"{where}: rubric has {len(criteria)} criteria, more than "
                          f"{MAX_CRITERIA}", "merge or drop criteria")
    if not isinstance(context, str):
        raise HscaleError(f"{where}: rubric 'context' must be text", hint)
    out = []
    for i, item in enumerate(criteria):
        text = item.get("text") if isinstance(item, dict) else None
        weight = item.get("weight", 1.0) if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_CRITERION_CHARS:
            raise HscaleError(f"{where}: rubric criterion {i} needs a 'text' of 1 to "
                              f"{MAX_CRITERION_CHARS} characters", hint)
        if (isinstance(weight, bool) or not isinstance(weight, int | float)
                or not math.isfinite(weight) or weight <= 0):
            raise HscaleError(f"{where}: rubric criterion {i} has weight {weight!r}",
                              "weights are finite numbers above 0")
        out.append({"text": text.strip(), "weight": float(weight)})
    return {"kind": "rubric", "criteria": out, "context": context}
