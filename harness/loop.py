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
    """One assistant turn; token ids and log-probs when the policy has them."""

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


def run_episode(policy: Policy, harness: Harness, task: Task, max_turns: int = 16,
                workspace_root: str | Path | None = None) -> Episode:
    """Run ``policy`` on ``task`` under ``harness`` until a final answer or ``max_turns``."""
    h = harness.fresh()
    history = h.start(task.user_query)
    generations: list[Generation] = []
    calls: list[tuple[ToolCall, ToolResult]] = []
    final, termination, parse_errors, error = "", "max_turns", 0, ""
    with Env(task, root=workspace_root) as env:
        for turn in range(max_turns):
            try:
                gen = policy.generate(h.view(history))
            except Exception as exc:  # a failing policy ends its episode, not the run
                termination, error = "policy_error", f"{type(exc).__name__}: {exc}"
                break
            generations.append(gen)
            history.append(Message("assistant", gen.text))
            parsed = h.parse(gen.text)
            action = h.after_assistant(turn, parsed, gen.text)
            if action.kind is Kind.FINISH:
                final, termination = action.text, "answer"
                break
            if action.kind is Kind.INJECT:
                history.append(Message("user", action.text))
            elif isinstance(parsed, ToolCall):
                result = env.execute(parsed)
                calls.append((parsed, result))
                history.append(h.observe(result))
            elif isinstance(parsed, ParseError):
                parse_errors += 1
                history.append(h.observe(parsed))
        reward = env.reward(final)
    return Episode(task.task_id, h.name, history, generations, calls,
                   h.context.closed(history), final, reward, len(generations), termination,
                   parse_errors, error)
