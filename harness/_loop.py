"""The agent loop: one policy, one harness, one task -> an Episode.

The simplest driver of the turn engine (hscale.harness._engine): a policy only has to turn the
messages the harness shows it into the next assistant text. Scripted policies, HTTP
endpoints and any model with a ``generate`` method run through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from hscale.harness._engine import DEFAULT_MAX_TURNS, Episode, Generation, Termination, TurnEngine
from hscale.harness._harness import Harness
from hscale.harness._types import Message
from hscale.harness.tasks import Task


@runtime_checkable
class Policy(Protocol):
    """Anything that writes the next assistant turn from the messages it is shown."""

    def generate(self, messages: list[Message]) -> Generation: ...


def run_episode(policy: Policy, harness: Harness, task: Task,
                max_turns: int = DEFAULT_MAX_TURNS,
                workspace_root: str | Path | None = None, score: bool = True) -> Episode:
    """Run ``policy`` on ``task`` under ``harness`` until a final answer or ``max_turns``;
    ``score=False`` leaves the checker out (reward 0), for measuring episodes rather than
    judging them."""
    engine = TurnEngine(harness, task, max_turns, workspace_root)
    try:
        while not engine.done:
            try:
                gen = policy.generate(engine.view())
            except Exception as exc:  # a failing policy ends its episode, not the run
                engine.fail(Termination.POLICY_ERROR, f"{type(exc).__name__}: {exc}")
                break
            engine.submit(gen)
    except BaseException:
        engine.env.close()
        raise
    return engine.finish(None if score else 0.0)
