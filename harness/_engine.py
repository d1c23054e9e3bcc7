"""The turn engine: the rules of an agent turn, in one place, for every driver.

A turn: the model writes; the engine records it, parses it with the tool interface and asks
the workflow what follows: finish (the episode's answer), inject a message, call a tool (whose
result comes back as an observation), or observe a parse error. Drivers only produce model
turns and run tools: :func:`hscale.harness._loop.run_episode` (any policy), the embedded trainer's
batched sampler, and the veRL agent loop (async, token streams). So an episode cannot depend
on which backend ran it.

Tool execution is the driver's: :meth:`TurnEngine.take` returns the call to execute and
:meth:`TurnEngine.observe` takes its result; :meth:`submit` and :meth:`asubmit` do both, with
the sandboxed environment's tools, synchronously or awaited (in an executor by default).

Token budgets are the drivers': the embedded sampler ends an episode (LENGTH) before a turn
that might not fit its model's context, and parses a turn its per-turn cap cut; the veRL loop
lets a turn run into what is left of its response budget and, if the budget cuts it, records
it unparsed (:meth:`TurnEngine.cut`). Episodes that end by LENGTH can therefore differ between
backends; every other turn follows the same rules.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from hscale.contracts import ErrorKind, Termination, errors_of, join_errors
from hscale.harness._env import Env
from hscale.harness._harness import Harness
from hscale.harness._types import Message, ParseError, ToolCall, ToolResult
from hscale.harness.components import Kind, Segment
from hscale.harness.tasks import Task, scoring

DEFAULT_MAX_TURNS = 16  # run_episode's limit when none is given
# Turns an experiment's episodes may take, in training and evaluation, on every backend (the
# built-in world's oracle needs at most 7: plan, 4 calls, answer, check).
EPISODE_TURNS = 8


@dataclass(frozen=True)
class Generation:
    """One assistant turn; token ids and log-probs when the policy has them (one log-prob per
    id, plus the end-of-turn token's when the policy ended the turn by emitting it), and the
    prompt ids it was generated after where the model says (what a trainer replays);
    ``prompt_tokens`` counts the prompt where a driver knows it without keeping the ids."""

    text: str
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    prompt_ids: tuple[int, ...] | None = None
    prompt_tokens: int | None = None

    @property
    def prompt_length(self) -> int | None:
        """Tokens of the prompt this turn was generated after (None: not known)."""
        if self.prompt_tokens is not None:
            return self.prompt_tokens
        return None if self.prompt_ids is None else len(self.prompt_ids)


@dataclass
class Episode:
    """Everything a trainer or an analysis needs from one rollout.

    ``messages`` is the full history (what happened); ``segments`` say which model calls saw
    which sequence, so a context-compacted rollout trains every segment with the rollout's
    reward. ``generations[i]`` is the i-th assistant turn with its ids and log-probs.
    ``seconds`` is its wall-clock time from start to score; ``model_calls`` a black-box CLI's
    requests as the server recorded them (hscale's own harnesses: one call a generation).
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
    termination: Termination
    parse_errors: int = 0
    error: str = ""  # why the policy failed and/or a failed checker's "checker: ..." line
    seconds: float = math.nan
    model_calls: list[dict] = field(default_factory=list)
    expected: str | None = None  # the answer the checker expects, where it names one
    checked: str = ""  # how the task is scored, in words (hscale.harness.tasks.scoring)

    @property
    def success(self) -> bool:
        return self.reward >= 1.0

    @property
    def checker_failed(self) -> bool:
        """Whether its checker failed (``error`` holds its ``checker: ...`` line): the
        episode scored 0 whatever the policy did."""
        return ErrorKind.CHECKER in errors_of(self.error)


Execute = Callable[[ToolCall], Awaitable[ToolResult]]


class TurnEngine:
    """One episode of ``task`` under ``harness``, advanced a model turn at a time.

    ``view()`` is what the model sees for its next turn; ``take(gen)`` applies the turn and
    returns a tool call to execute (or None); ``observe(call, result)`` shows its result;
    ``done`` says when the episode has ended; ``finish()`` scores it, deletes its workspace and
    returns the :class:`Episode`.

    ``transcript`` is what a checker may read of the episode, the same under every harness:
    the task's query, then per turn ``{"role": "assistant", "content": text}`` (with
    ``"tool_call": {"name", "args"}`` in canonical names when the turn called a tool) and
    ``{"role": "tool", "name", "ok", "content"}`` for the tool's output or error. What the
    harness itself says (a workflow's injected message, a parse error) is not in it.
    """

    def __init__(self, harness: Harness, task: Task, max_turns: int = DEFAULT_MAX_TURNS,
                 workspace_root: str | Path | None = None) -> None:
        # a benchmark's own turn limit (Task.limits) comes before the run's
        self.task, self.max_turns = task, int(task.limits.get("max_turns", max_turns))
        self.harness = harness.fresh()
        self.history = self.harness.start(task.user_query, task.tools)
        self.generations: list[Generation] = []
        self.calls: list[tuple[ToolCall, ToolResult]] = []
        self.final, self.parse_errors, self.error = "", 0, ""
        self.termination = Termination.MAX_TURNS
        self.done = self.max_turns <= 0
        self.env = Env(task, root=workspace_root)
        self.transcript: list[dict] = [{"role": "user", "content": task.user_query}]
        self.began = time.perf_counter()

    @property
    def turns(self) -> int:
        return len(self.generations)

    def view(self) -> list[Message]:
        return self.harness.view(self.history)

    def take(self, gen: Generation) -> ToolCall | None:
        """Record the model's turn and apply the workflow: finish, inject a message, observe
        a parse error, or return the tool call the driver must execute and :meth:`observe`."""
        turn = len(self.generations)
        self._record(gen)
        parsed = self.harness.parse(gen.text)
        action = self.harness.after_assistant(turn, parsed, gen.text)
        if action.kind is Kind.FINISH:
            self.final, self.termination, self.done = action.text, Termination.ANSWER, True
            return None
        if action.kind is Kind.INJECT:
            self.history.append(Message("user", action.text))
        elif isinstance(parsed, ToolCall):  # only a call that runs is in the transcript
            self.transcript[-1]["tool_call"] = {"name": parsed.name, "args": dict(parsed.args)}
            return parsed
        elif isinstance(parsed, ParseError):
            self.parse_errors += 1
            self.history.append(self.harness.observe(parsed))
        self._count_turn()
        return None

    def observe(self, call: ToolCall, result: ToolResult) -> bool:
        """Show a tool's result; True when the episode has ended."""
        self.calls.append((call, result))
        self.transcript.append({"role": "tool", "name": call.name, "ok": result.ok,
                                "content": result.output if result.ok else result.error})
        self.history.append(self.harness.observe(result))
        self._count_turn()
        return self.done

    def cut(self, gen: Generation) -> None:
        """A turn the token budget cut: recorded, never parsed; the episode ends."""
        self._record(gen)
        self.fail(Termination.LENGTH)

    def fail(self, termination: Termination, error: str = "") -> None:
        """End the episode early (the policy failed, or the token budget ran out)."""
        self.termination, self.error, self.done = termination, error, True

    def submit(self, gen: Generation) -> bool:
        """:meth:`take`, then run the tool call (if any) in the sandbox; True when done."""
        call = self.take(gen)
        return self.observe(call, self.env.execute(call)) if call is not None else self.done

    async def asubmit(self, gen: Generation, execute: Execute | None = None) -> bool:
        """:meth:`submit` for async drivers: ``execute`` runs the call (default: the sandbox's
        tools in the event loop's executor). Parsing and rendering run in the executor too: a
        long turn costs this episode time, never the event loop that serves the others."""
        loop = asyncio.get_running_loop()
        call = await loop.run_in_executor(None, self.take, gen)
        if call is None:
            return self.done
        if execute is None:
            result = await loop.run_in_executor(None, self.env.execute, call)
        else:
            result = await execute(call)
        return await loop.run_in_executor(None, self.observe, call, result)

    def score(self) -> float:
        """The task's checker on the final answer and the workspace; a failing checker scores 0
        and :meth:`finish` records its error in the Episode's ``error``."""
        return float(self.env.score(self.final, self.transcript))

    def finish(self, reward: float | None = None) -> Episode:
        """The Episode, scored here unless ``reward`` is given; the workspace is deleted."""
        try:
            if reward is None:
                reward = self.score()
        finally:
            self.env.close()
        error = join_errors(self.error, self.env.checker_error)
        expected, checked = scoring(self.task)
        return Episode(self.task.task_id, self.harness.name, self.history, self.generations,
                       self.calls, self.harness.context.closed(self.history), self.final,
                       reward, len(self.generations), self.termination, self.parse_errors,
                       error, time.perf_counter() - self.began, expected=expected,
                       checked=checked)

    def _record(self, gen: Generation) -> None:
        self.generations.append(gen)
        self.history.append(Message("assistant", gen.text))
        self.transcript.append({"role": "assistant", "content": gen.text})

    def _count_turn(self) -> None:
        self.done = self.done or len(self.generations) >= self.max_turns
