"""Scripted policies: an oracle that follows the harness's own protocol, a noisy oracle with a
tunable error rate, and one that does nothing. They are the fakes that let every harness,
the runner and the trainer be tested offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness.harness import Harness
from harness.loop import Generation
from harness.tasks import Task
from harness.types import Message, ToolCall

WORDS = (
    "plan: use the tools, then answer.",
    "i do not know.",
)

PLAN = "plan: use the tools, then answer."
_PLAN_REQUESTS = ("plan first", "first give a plan")
_CHECK_REQUESTS = ("check your work",)


def _asks(messages: list[Message], phrases: tuple[str, ...]) -> bool:
    last = messages[-1] if messages else None
    return bool(last and last.role == "user" and any(p in last.content for p in phrases))


@dataclass
class Oracle:
    """Solves its task by writing the task's solution in the harness's own call syntax.

    It keeps its place in the script itself, so it works under any context policy; it
    gives a plan when the workflow asks for one and repeats its answer when asked to check.
    """

    task: Task
    harness: Harness
    _step: int = field(default=0, init=False)
    _planned: bool = field(default=False, init=False)

    def generate(self, messages: list[Message]) -> Generation:
        if self._needs_plan(messages):
            self._planned = True
            return Generation(PLAN)
        if self._step < len(self.task.solution):
            call = self.task.solution[self._step]
            self._step += 1
            return Generation(self.harness.format_call(call))
        return Generation(self.task.final_answer or "")

    def _needs_plan(self, messages: list[Message]) -> bool:
        if self._planned:
            return False
        wants_plan = "plan" in messages[0].content if messages else False
        return wants_plan or _asks(messages, _PLAN_REQUESTS)


@dataclass
class NoisyOracle:
    """The oracle, but each turn goes wrong with probability ``error_rate``.

    Mistakes are the realistic kinds: a call in another interface's syntax, a wrong path,
    or an answer given too early. After a mistake the oracle retries the same step.
    """

    task: Task
    harness: Harness
    error_rate: float = 0.2
    seed: int = 0
    other: Harness | None = None  # whose call syntax a "wrong syntax" mistake uses
    _oracle: Oracle = field(init=False)
    _rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self._oracle = Oracle(self.task, self.harness)
        self._rng = np.random.default_rng(self.seed)

    def generate(self, messages: list[Message]) -> Generation:
        if self._rng.random() >= self.error_rate:
            return self._oracle.generate(messages)
        kind = self._rng.integers(3)
        script = self.task.solution
        step = min(self._oracle._step, max(len(script) - 1, 0))
        if kind == 0 and script and self.other is not None:
            return Generation(self.other.format_call(script[step]))
        if kind == 1 and script:
            call = script[step]
            if "path" in call.args:
                return Generation(self.harness.format_call(
                    ToolCall(call.name, {**call.args, "path": "nothing.txt"})))
        return Generation("i do not know.")


@dataclass
class DoNothing:
    """Answers at once without using a tool: a floor every harness must score 0 on."""

    def generate(self, messages: list[Message]) -> Generation:
        return Generation("i do not know.")
