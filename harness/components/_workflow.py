"""W: the workflow, a tiny state machine the agent loop consults after every assistant turn.

Protocol (what the loop does):

1. ``messages = workflow.start(initial_messages)`` resets the per-episode state.
2. After each assistant turn, ``action = workflow.after_assistant(turn, parsed, text)`` where
   ``parsed`` is the tool interface's reading of ``text`` (ToolCall, ParseError or None):

   - ``CONTINUE``: go on normally: run the ToolCall (or show the ParseError as an error
     observation), then call the model again; with ``parsed is None`` just call it again.
   - ``INJECT``: run nothing from this turn; append ``Message("user", action.text)`` and call
     the model again (a plan acknowledged, a missing plan asked for, a check requested).
   - ``FINISH``: the episode ends; ``action.text`` is the final answer.

``instructions()`` is the workflow's sentence for the system prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from hscale.harness._types import Message, ParseError, ToolCall
from hscale.harness.components._registry import register

Parsed = ToolCall | ParseError | None

WORDS = (
    "when done, answer with no tool call.",
    "first give a plan, no tool call.",
    "now act.",
    "plan first, no tool yet.",
    "you will be asked to check once.",
    "check your work, then answer again.",
)


class Kind(Enum):
    CONTINUE = "continue"
    INJECT = "inject"
    FINISH = "finish"


@dataclass(frozen=True)
class Action:
    """The loop's next move; ``text`` is the injected message or the final answer."""

    kind: Kind
    text: str = ""
    reason: str = ""  # "tool", "error", "plan", "no_plan", "verify", "answer", "wait"


def continue_(reason: str = "") -> Action:
    return Action(Kind.CONTINUE, reason=reason)


def inject(text: str, reason: str = "") -> Action:
    return Action(Kind.INJECT, text, reason)


def finish(answer: str) -> Action:
    return Action(Kind.FINISH, answer, "answer")


def _act(parsed: Parsed) -> Action:
    return continue_("error" if isinstance(parsed, ParseError) else "tool")


@dataclass
class Workflow:
    """Base class: free ReAct semantics; subclasses add state and injections."""

    def instructions(self) -> str:
        return "when done, answer with no tool call."

    def start(self, messages: list[Message]) -> list[Message]:
        """Reset per-episode state; returns the (possibly extended) initial messages."""
        return messages

    def after_assistant(self, turn: int, parsed: Parsed, text: str) -> Action:
        return finish(text) if parsed is None else _act(parsed)


@register("workflow", "react")
@dataclass
class React(Workflow):
    """Act until a turn without a tool call; that turn is the final answer."""


@register("workflow", "plan_act")
@dataclass
class PlanAct(Workflow):
    """The first assistant turn is a short plan without a tool call, then free acting.

    A plan is acknowledged with ``now act.``; a tool call before any plan is not run and
    the model is asked for the plan (``plan first, no tool yet.``).
    """

    _planned: bool = field(default=False, init=False, repr=False, compare=False)

    def instructions(self) -> str:
        return "first give a plan, no tool call. " + super().instructions()

    def start(self, messages: list[Message]) -> list[Message]:
        self._planned = False
        return messages

    def after_assistant(self, turn: int, parsed: Parsed, text: str) -> Action:
        if self._planned:
            return super().after_assistant(turn, parsed, text)
        if parsed is None:
            self._planned = True
            return inject("now act.", "plan")
        return inject("plan first, no tool yet.", "no_plan")


@register("workflow", "act_verify")
@dataclass
class ActVerify(Workflow):
    """The first final answer is answered with a request to check; the next one ends it."""

    _asked: bool = field(default=False, init=False, repr=False, compare=False)

    def instructions(self) -> str:
        return super().instructions() + " you will be asked to check once."

    def start(self, messages: list[Message]) -> list[Message]:
        self._asked = False
        return messages

    def after_assistant(self, turn: int, parsed: Parsed, text: str) -> Action:
        if parsed is None and not self._asked:
            self._asked = True
            return inject("check your work, then answer again.", "verify")
        return super().after_assistant(turn, parsed, text)
