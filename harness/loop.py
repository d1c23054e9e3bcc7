"""The agent loop: one policy, one harness, one task -> an Episode.

The same loop serves scripted policies, the embedded trainer's model and HTTP endpoints: a
policy only has to turn the messages the harness shows it into the next assistant text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from harness.components.context import Segment
from harness.components.workflow import Kind
from harness.env import Env
from harness.harness import Harness
from harness.tasks import Task
from harness.types import Message, ParseError, ToolCall, ToolResult


@dataclass(frozen=True)
class Generation:
    """One assistant turn; token ids and log-probs when the policy has them (one log-prob per
    id, plus the end-of-turn token's when the policy ended the turn by emitting it)."""

    text: str
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None


@runtime_checkable
class Policy(Protocol):
    """Anything that writes the next assistant turn from the messages it is shown."""

    def generate(self, messages: list[Message]) -> Generation: ...


@dataclass
class Episode:
    """Everything a trainer or an analysis needs from one rollout.

    ``messages`` is the full history (what happened); ``segments`` say which model calls saw
    which sequence, so a context-compacted rollout trains every segment with the rollout's
    reward. ``generations[i]`` is the i-th assistant turn with its ids and log-probs.
    """

    task_id: str
    harness: str
    messages: list[Message]
    generations: list[Generation]
    tool_calls: list[tuple[ToolCall, ToolResult]]
    segments: list[Segment]
    final_answer: str
    reward: float
    turns: int
    termination: str  # "answer" | "max_turns" | "policy_error"
    parse_errors: int = 0
    error: str = ""

    @property
    def success(self) -> bool:
        return self.reward >= 1.0


class EpisodeStepper:
    """One episode advanced a model turn at a time, so a batched sampler can drive many.

    ``view()`` is what the model sees for its next turn; ``submit(gen)`` applies the turn
    (parse, workflow, tool, observation) and returns True when the episode has ended;
    ``finish()`` scores it, deletes its workspace and returns the Episode.
    """

    def __init__(self, harness: Harness, task: Task, max_turns: int = 16,
                 workspace_root: str | Path | None = None) -> None:
        self.task, self.max_turns = task, max_turns
        self.h = harness.fresh()
        self.history = self.h.start(task.user_query)
        self.generations: list[Generation] = []
        self.calls: list[tuple[ToolCall, ToolResult]] = []
        self.final, self.termination, self.parse_errors, self.error = "", "max_turns", 0, ""
        self.done = max_turns <= 0
        self.env = Env(task, root=workspace_root)

    def view(self) -> list[Message]:
        return self.h.view(self.history)

    def submit(self, gen: Generation) -> bool:
        turn = len(self.generations)
        self.generations.append(gen)
        self.history.append(Message("assistant", gen.text))
        parsed = self.h.parse(gen.text)
        action = self.h.after_assistant(turn, parsed, gen.text)
        if action.kind is Kind.FINISH:
            self.final, self.termination, self.done = action.text, "answer", True
            return True
        if action.kind is Kind.INJECT:
            self.history.append(Message("user", action.text))
        elif isinstance(parsed, ToolCall):
            result = self.env.execute(parsed)
            self.calls.append((parsed, result))
            self.history.append(self.h.observe(result))
        elif isinstance(parsed, ParseError):
            self.parse_errors += 1
            self.history.append(self.h.observe(parsed))
        self.done = len(self.generations) >= self.max_turns
        return self.done

    def fail(self, termination: str, error: str = "") -> None:
        """End the episode early (the policy failed or ran out of its token budget)."""
        self.termination, self.error, self.done = termination, error, True

    def finish(self) -> Episode:
        try:
            reward = self.env.reward(self.final)
        finally:
            self.env.close()
        return Episode(self.task.task_id, self.h.name, self.history, self.generations,
                       self.calls, self.h.context.closed(self.history), self.final, reward,
                       len(self.generations), self.termination, self.parse_errors, self.error)


def run_episode(policy: Policy, harness: Harness, task: Task, max_turns: int = 16,
                workspace_root: str | Path | None = None) -> Episode:
    """Run ``policy`` on ``task`` under ``harness`` until a final answer or ``max_turns``."""
    stepper = EpisodeStepper(harness, task, max_turns, workspace_root)
    try:
        while not stepper.done:
            try:
                gen = policy.generate(stepper.view())
            except Exception as exc:  # a failing policy ends its episode, not the run
                stepper.fail("policy_error", f"{type(exc).__name__}: {exc}")
                break
            stepper.submit(gen)
    except BaseException:
        stepper.env.close()
        raise
    return stepper.finish()
