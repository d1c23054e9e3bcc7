"""The Task data type: a query, the files the agent starts with, and a checker, validated on
construction so that bad task data fails where it is built, not mid-episode."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.harness.tasks.checkers import run_checker
from hscale.harness.tasks.specs import Checker, check_spec, path_problem
from hscale.harness.types import ToolCall

SPLITS = ("train", "eval")

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
        if not callable(self.checker):
            self.checker = check_spec(self.checker)
        for call in self.solution:
            if not isinstance(call, ToolCall):
                raise HscaleError(f"task {self.task_id}: solution steps must be ToolCall")

    def check(self, workspace: Path, final_answer: str, timeout: float = 10.0) -> float:
        """The reward in [0, 1] for a finished workspace and final answer."""
        return run_checker(self.checker, workspace, final_answer, timeout=timeout)
