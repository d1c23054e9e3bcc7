"""Checker specs: the JSON-able dicts that stand for a checker, and the path rule they share.

Kept apart from :class:`~hscale.harness.tasks._task.Task` and from the code that runs checkers,
so both can validate a spec without importing each other.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from hscale.errors import HscaleError

TARGETS = ("final", "file", "both")
MAX_PATH_CHARS = 200
MAX_CRITERIA = 100  # a rubric checker asks the judge once per criterion
MAX_CRITERION_CHARS = 10_000
MAX_NAME_CHARS = 200
MAX_PARTS = 100  # a weighted checker runs each part in turn
# How a rubric's criteria are judged (see hscale.harness.tasks._judge): "share" asks yes/no per
# criterion and gives the weighted share of yes; "all" gives 1 only when every criterion is
# met (JobBench's per-rubric rule); "graded" has the judge score each criterion in [0, 1] in
# one request, shown the weights, and its total is the reward (PinchBench's judge).
SCORINGS = ("share", "all", "graded")
# What the judge sees of the episode: "workspace" (the final answer and the workspace's text
# files) or "pinchbench" (the transcript summarised as PinchBench's judge reads it).
VIEWS = ("workspace", "pinchbench")
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


SYSTEM_FOLDERS = ("bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc",
                  "run", "sbin", "sys", "usr", "var")


def is_finite_number(value: object) -> bool:
    """A real number a spec may hold (an int or float, finite; a bool is no number)."""
    return (not isinstance(value, bool) and isinstance(value, int | float)
            and math.isfinite(value))


def mount_dir_problem(value: object) -> str:
    """What is wrong with a data entry's ``input_mount_dir`` ("" if nothing): absent, a
    relative folder inside the workspace, or an absolute, normalised folder outside the
    system's (ClawGym's is ``/root/.openclaw/workspace``)."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        return f"{value!r}: must be a folder path"
    path = PurePosixPath(value)
    if ".." in path.parts:
        return f"{value!r}: may not hold '..'"
    if not path.is_absolute():
        return ""
    if str(path) != value.rstrip("/") or len(path.parts) < 2 or path.parts[1] in SYSTEM_FOLDERS:
        return (f"{value!r}: an absolute mount point must be a normalised folder outside "
                f"the system's ({', '.join('/' + f for f in SYSTEM_FOLDERS[:4])}, ...)")
    return ""


def check_spec(spec: object, where: str = "checker") -> dict[str, Any]:
    """Validate a checker spec and return a normalised copy."""
    hint = ('use {"kind": "answer", "expected": ..., "target": "final"|"file"|"both"}, '
            '{"kind": "script", "path": ...}, {"kind": "rubric", "criteria": '
            '[{"text": ..., "weight": 1.0}, ...]} or {"kind": "weighted", "parts": '
            '[{"weight": 0.5, "checker": {...}}, ...]}')
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
        if (not isinstance(mount, str) or not mount.startswith("/")
                or mount_dir_problem(mount)):
            raise HscaleError(f"{where}: script checker 'mount' must be an absolute folder "
                              "outside the system's (where the workspace is shown, as "
                              "ClawGym's /root/.openclaw/workspace)", hint)
        return {"kind": "script", "path": path, "mount": mount}
    if kind == "rubric":
        return _rubric_spec(spec, where, hint)
    if kind == "weighted":
        return _weighted_spec(spec, where, hint)
    raise HscaleError(f"{where}: unknown checker kind {kind!r}", hint)


def uses_judge(spec: object) -> bool:
    """Whether a checker spec (a weighted one through its parts) asks the LLM judge."""
    if not isinstance(spec, dict):
        return False
    if spec.get("kind") == "weighted":
        return any(isinstance(p, dict) and uses_judge(p.get("checker"))
                   for p in spec.get("parts") or [])
    return spec.get("kind") == "rubric"


def _weighted_spec(spec: dict[str, Any], where: str, hint: str) -> dict[str, Any]:
    """A "weighted" spec: the weighted mean of its parts' rewards (each part a checker spec,
    not itself weighted; weights finite and >= 0, summing above 0)."""
    parts = spec.get("parts")
    if not isinstance(parts, list) or not parts:
        raise HscaleError(f"{where}: weighted checker needs a non-empty 'parts' list", hint)
    if len(parts) > MAX_PARTS:
        raise HscaleError(f"{where}: weighted checker has {len(parts)} parts, more than "
                          f"{MAX_PARTS}", "merge parts")
    out = []
    for i, part in enumerate(parts):
        if not isinstance(part, dict) or "checker" not in part:
            raise HscaleError(f"{where}: weighted part {i} needs a 'weight' and a 'checker'",
                              hint)
        weight = part.get("weight")
        if not is_finite_number(weight) or weight < 0:
            raise HscaleError(f"{where}: weighted part {i} has weight {weight!r}",
                              "part weights are finite numbers >= 0")
        inner = part["checker"]
        if isinstance(inner, dict) and inner.get("kind") == "weighted":
            raise HscaleError(f"{where}: weighted part {i} is itself weighted",
                              "list every part in one weighted checker")
        out.append({"weight": float(weight),
                    "checker": check_spec(inner, f"{where}: weighted part {i}")})
    if not sum(p["weight"] for p in out) > 0:
        raise HscaleError(f"{where}: weighted checker's part weights sum to 0",
                          "give at least one part a weight above 0")
    return {"kind": "weighted", "parts": out}


def _rubric_spec(spec: dict[str, Any], where: str, hint: str) -> dict[str, Any]:
    """A "rubric" spec: weighted criteria an LLM judge decides (``hscale.harness.tasks._judge``),
    scored as ``scoring`` says (default "share": the weighted share of criteria met) on what
    ``view`` shows (default "workspace"). A criterion may carry a short ``name`` (the key a
    "graded" judge scores it under; default "Criterion N")."""
    criteria, context = spec.get("criteria"), spec.get("context", "")
    scoring, view = spec.get("scoring", "share"), spec.get("view", "workspace")
    if scoring not in SCORINGS:
        raise HscaleError(f"{where}: rubric 'scoring' {scoring!r} is not one of "
                          f"{', '.join(SCORINGS)}", hint)
    if view not in VIEWS:
        raise HscaleError(f"{where}: rubric 'view' {view!r} is not one of {', '.join(VIEWS)}",
                          hint)
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
        if not is_finite_number(weight) or weight <= 0:
            raise HscaleError(f"{where}: rubric criterion {i} has weight {weight!r}",
                              "weights are finite numbers above 0")
        criterion = {"text": text.strip(), "weight": float(weight)}
        name = item.get("name")
        if name is not None:
            if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
                raise HscaleError(f"{where}: rubric criterion {i} 'name' must be text of 1 to "
                                  f"{MAX_NAME_CHARS} characters", hint)
            criterion["name"] = name.strip()
        out.append(criterion)
    normal = {"kind": "rubric", "criteria": out, "context": context}
    if scoring != "share":
        normal["scoring"] = scoring
    if view != "workspace":
        normal["view"] = view
    return normal
