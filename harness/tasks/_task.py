"""The Task data type: a query, the files the agent starts with, and a checker, validated on
construction so that bad task data fails where it is built, not mid-episode."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.harness._types import BUILTIN_TOOLS, CANONICAL_TOOLS, ToolCall
from hscale.harness.tasks._checkers import run_checker
from hscale.harness.tasks._specs import Checker, check_spec, is_finite_number, path_problem

SPLITS = ("train", "eval")
# What a benchmark (or a spec, for its benchmark) may set of its tasks' episodes: the turn
# limit and the environment's limits (hscale.harness._env.Limits), each with its bounds.
LIMIT_BOUNDS: dict[str, tuple[type, float, float]] = {
    "max_turns": (int, 1, 200),
    "max_output_chars": (int, 16, 1 << 20),  # what a tool shows: the read window
    "max_read_bytes": (int, 16, 64 << 20),
    "max_write_bytes": (int, 1, 64 << 20),
    "max_entries": (int, 1, 100_000),
    "tool_seconds": (float, 0.1, 600.0),
    "run_seconds": (float, 0.1, 600.0),
    "checker_seconds": (float, 0.1, 3600.0),
}


def limits_problem(limits: object) -> str | None:
    """Why a task's ``limits`` mapping is not valid (one line), or None."""
    if not isinstance(limits, dict):
        return "limits must map names to numbers"
    for key, value in limits.items():
        if key not in LIMIT_BOUNDS:
            return f"unknown limit {key!r} (limits: {', '.join(LIMIT_BOUNDS)})"
        kind, low, high = LIMIT_BOUNDS[key]
        if (not is_finite_number(value) or (kind is int and not float(value).is_integer())
                or not low <= value <= high):
            return (f"limit {key} is {value!r}: give "
                    f"{'a whole number' if kind is int else 'a number'} from {low:g} to {high:g}")
    return None


def tools_problem(tools: object) -> str | None:
    """Why a task's ``tools`` are not valid (one line), or None."""
    if not isinstance(tools, tuple | list) or not tools:
        return "tools must be a non-empty list of tool names"
    unknown = [t for t in tools if t not in CANONICAL_TOOLS]
    if unknown:
        return f"unknown tool {unknown[0]!r} (tools: {', '.join(CANONICAL_TOOLS)})"
    if len(set(tools)) != len(tools):
        return "a tool is named twice"
    return None

_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


@dataclass(kw_only=True)
class Task:
    """One task. ``solution``/``final_answer`` are an oracle's plan, when the task has one."""

    task_id: str
    user_query: str
    category: str = "general"
    grading_type: str = "code"
    input_files: dict[str, str] = field(default_factory=dict)
    checker: Checker
    split: str = "train"
    metadata: dict[str, Any] = field(default_factory=dict)
    solution: list[ToolCall] = field(default_factory=list)
    final_answer: str | None = None
    tools: tuple[str, ...] = BUILTIN_TOOLS  # the canonical tools its episodes may call
    limits: dict[str, float] = field(default_factory=dict)  # LIMIT_BOUNDS: turns, windows

    def __post_init__(self) -> None:
        if not isinstance(self.task_id, str) or not _TASK_ID.fullmatch(self.task_id):
            raise HscaleError(f"task id {self.task_id!r} is not a safe name",
                              "use letters, digits, '_', '-' and '.', starting with a letter "
                              "or digit")
        if not isinstance(self.user_query, str) or not self.user_query.strip():
            raise HscaleError(f"task {self.task_id}: user_query is empty",
                              "give the question the agent must answer")
        if self.split not in SPLITS:
            raise HscaleError(f"task {self.task_id}: split {self.split!r} is not one of {SPLITS}")
        if not isinstance(self.input_files, dict):
            raise HscaleError(f"task {self.task_id}: input_files must map paths to text")
        for rel, text in self.input_files.items():
            problem = path_problem(rel)
            if problem or not isinstance(text, str):
                raise HscaleError(f"task {self.task_id}: input file {rel!r}: "
                                  f"{problem or 'content is not text'}",
                                  "input files are relative paths inside the workspace, "
                                  "mapped to their text")
        problem = tools_problem(self.tools) or limits_problem(self.limits)
        if problem:
            raise HscaleError(f"task {self.task_id}: {problem}",
                              "set the benchmark's tools and limits in the spec")
        # in canonical order, so a harness describes them as it always does
        self.tools = tuple(t for t in CANONICAL_TOOLS if t in self.tools)
        self.limits = {k: LIMIT_BOUNDS[k][0](v) for k, v in self.limits.items()}
        if not callable(self.checker):
            self.checker = check_spec(self.checker)
        for call in self.solution:
            if not isinstance(call, ToolCall):
                raise HscaleError(f"task {self.task_id}: solution steps must be ToolCall")
            if call.name not in self.tools:
                raise HscaleError(f"task {self.task_id}: its solution calls {call.name}, "
                                  "not one of its tools", "add the tool to the task's tools")

    @property
    def mount(self) -> str | None:
        """Where the task's own runner shows its workspace (a real ClawGym task's
        ``input_mount_dir``, kept in its script checker), else None."""
        spec = self.checker if isinstance(self.checker, dict) else {}
        mount = spec.get("mount")
        return mount if isinstance(mount, str) else None

    def check(self, workspace: Path, final_answer: str, timeout: float = 10.0) -> float:
        """The reward in [0, 1] for a finished workspace and final answer."""
        return run_checker(self.checker, workspace, final_answer, timeout=timeout)
