"""veRL adapter: the hscale agent loop as a veRL 0.9.1 agent loop, and veRL training rows.

veRL's rollout workers call ``run(sampling_params, **row)`` once per rollout. This loop reads
the harness label and the task from the row's ``extra_info`` and drives the turn engine
(hscale.harness._engine: view, generate, parse, workflow action, tool, observation, checker) as
every other driver does, with the model behind veRL's ``server_manager``; it keeps only the
token streams and their segments. Tokens go through veRL's Continuous Token helpers
(``AgentLoopBase.ct_*``): the model's tokens are kept exactly as generated (mask 1, with their
log-probs) and every message the harness adds (tool observations, workflow injections,
compaction summaries) is rendered by the chat template with mask 0. The row's ``prompt`` is
not re-read: the harness renders the initial messages, which :func:`to_verl_rows` wrote into
``prompt`` for veRL's dataset filters and logs. A black-box harness's row (``bb/...``: a real
CLI) goes to the player agent_loop.yaml names (``blackbox``).

Context policies that rewrite history (``window``, ``compact``) make the model see several
token sequences, one per segment (hscale.harness.components._context). ``segment_mode`` says what is
trained:

- ``segments``: one AgentLoopOutput per segment, each the exact tokens its model calls saw,
  mask 1 on the turns generated inside it, all with the rollout's reward. veRL 0.9.1's
  TransferQueue trainer (``trainer.v1``) takes such a list and gives every output the GRPO
  advantage of the final one: the papers' recipe.
- ``last_segment``: one output, the segment holding the final turn (exact tokens, on-policy
  log-probs); turns of earlier segments are generated but not trained. The classic
  AgentLoopWorker takes one output per rollout; this is the honest choice there.
- ``full_history``: one output, the whole history as one sequence with every model turn
  trained. Under window/compact that is a context the model did not see; the log-probs are
  those of the calls as made, so a rollout-correction weight sees the mismatch.
- ``auto`` (default): ``segments`` under the TransferQueue trainer, else ``last_segment``.

Under the ``full`` context policy all modes give the same single sequence (in ``segments``
mode, a list of one).

The response budget (``rollout.response_length``) applies to each trained sequence: a turn is
generated with at most the tokens left; one that fills them is cut and never parsed, and an
observation that reaches the limit ends the rollout (termination ``length``, final answer "").

Importing this module is cheap: veRL is imported when ``HscaleAgentLoop`` is first looked up,
as veRL's workers do through :data:`AGENT_LOOP_CONFIG` (see :func:`write_agent_loop_config`).
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from hscale.contracts import EXTRA_INFO, ROW_HINT, RowInfo, mapping, reward_extras
from hscale.errors import HscaleError
from hscale.files import atomic_write_text
from hscale.harness._behaviour import behaviour, unobserved
from hscale.harness._blackbox import is_blackbox
from hscale.harness._engine import DEFAULT_MAX_TURNS, Generation, Termination, TurnEngine
from hscale.harness._harness import harness_named
from hscale.harness._outcome import outcome
from hscale.harness._types import Message, ToolCall, ToolResult
from hscale.harness._verl_rows import AGENT_NAME, dicts_of, to_verl_rows, verl_records
from hscale.harness._verl_rows import COLUMNS as VERL_COLUMNS
from hscale.harness.tasks import Task, task_from_row

if TYPE_CHECKING:

    from hscale.harness._spaces import HarnessSpace

# HscaleAgentLoop is defined by the module's __getattr__ (built on first lookup).
__all__ = [
    "AGENT_LOOP_CONFIG", "AGENT_NAME", "SEGMENT_MODES", "HscaleAgentLoop",  # noqa: F822
    "VERL_COLUMNS", "to_verl_rows", "verl_records", "write_agent_loop_config",
]

CLASS_PATH = f"{__name__}.HscaleAgentLoop"
# veRL's ``rollout.agent.agent_loop_config_path`` format: hydra targets by agent name.
AGENT_LOOP_CONFIG = ({"name": AGENT_NAME, "_target_": CLASS_PATH},)
SEGMENT_MODES = ("auto", "segments", "last_segment", "full_history")


# ------------------------------------------------------------------------------- training rows


def write_agent_loop_config(path: str | Path, segment_mode: str = "auto",
                            workspace_root: str | None = None, blackbox: str | None = None
                            ) -> Path:
    """Write the YAML that ``actor_rollout_ref.rollout.agent.agent_loop_config_path`` names;
    its settings reach every rollout's loop as constructor keywords. ``blackbox``: the
    ``module:function`` that plays a black-box harness's row (a real CLI against the
    rollout servers; the veRL backend gives hscale.train.backends.verl.blackbox_rollout's)."""
    import yaml

    _check_mode(segment_mode)
    settings = {"segment_mode": segment_mode,
                **({"workspace_root": workspace_root} if workspace_root else {}),
                **({"blackbox": blackbox} if blackbox else {})}
    entries = [dict(e, **settings) for e in AGENT_LOOP_CONFIG]
    atomic_write_text(path, yaml.safe_dump(entries, sort_keys=False))
    return Path(path)


# ------------------------------------------------------------------------------- the agent loop


@dataclass
class _Stream:
    """One growing token sequence: the messages it renders, its token ids and, per response
    token, the loss mask and the log-prob (None while the server has sent none)."""

    messages: list[dict[str, str]]
    ids: list[int]
    mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    turns: int = 0  # model turns generated into this sequence


@dataclass
class _Tally:
    """Per-rollout counters: veRL's metrics and the server's extra fields."""

    generate_s: float = 0.0
    tools_s: float = 0.0
    score_s: float = 0.0
    preempted: int | None = None
    server_fields: dict[str, Any] = field(default_factory=dict)

    def add_server_output(self, out: Any) -> None:
        n = getattr(out, "num_preempted", None)
        if n is not None:
            self.preempted = (self.preempted or 0) + n
        fields = dict(getattr(out, "extra_fields", None) or {})
        if not self.server_fields:
            self.server_fields = fields
        elif fields.get("max_global_steps") is not None:
            self.server_fields["max_global_steps"] = fields["max_global_steps"]


class _HarnessLoop:
    """The loop; :func:`_agent_loop_class` mixes it into veRL's ``AgentLoopBase``.

    Constructor keywords beyond veRL's: ``segment_mode`` (see the module docstring) and
    ``workspace_root`` (where task workspaces are made; the system's temp folder by default).
    """

    def __init__(self, *args: Any, segment_mode: str = "auto",
                 workspace_root: str | None = None, blackbox: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.segment_mode = _check_mode(segment_mode)
        self.workspace_root, self.blackbox = workspace_root, blackbox

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> Any:
        """One rollout; an AgentLoopOutput, or a list of them in ``segments`` mode."""
        info = RowInfo.read(kwargs.get(EXTRA_INFO))
        task, label = row_task(info), info.harness
        if info.blackbox:  # a real CLI: played by the configured function
            if not self.blackbox:
                raise HscaleError(f"row of {label}: this agent loop has no black-box player",
                                  "write agent_loop.yaml with write_agent_loop_config("
                                  "blackbox=...) (the veRL backend does)")
            module, _, function = self.blackbox.partition(":")
            play = getattr(importlib.import_module(module), function)
            return await play(self, label, task, info, sampling_params,
                              global_steps=kwargs.get("global_steps"))
        limit = int(self.rollout_config.response_length)
        mode = self._mode()
        if info.greedy:  # a validation row of the greedy pass
            sampling_params = {**sampling_params, "temperature": 0.0, "top_p": 1.0, "top_k": -1}
        engine = TurnEngine(harness_named(label, row_space(info.space)), task,
                            self._max_turns(info), self.workspace_root)
        segments: list[_Stream] = []  # one per context segment, in order
        whole: _Stream | None = None  # the full history (full_history mode)
        tally = _Tally()
        request_id = uuid4().hex
        loop = asyncio.get_running_loop()

        async def execute(call: ToolCall) -> ToolResult:
            start = time.perf_counter()
            result = await loop.run_in_executor(None, engine.env.execute, call)
            tally.tools_s += time.perf_counter() - start
            return result

        try:
            while not engine.done:
                # the context policy (and its parses) runs off the event loop, like take()
                view = dicts_of(await loop.run_in_executor(None, engine.view))
                if len(segments) < len(engine.harness.context.segments):
                    segments.append(await self._open(view))
                else:
                    await self._extend(segments[-1], view)
                if mode == "full_history":
                    if whole is None:
                        whole = await self._open(dicts_of(engine.history))
                    else:
                        await self._extend(whole, dicts_of(engine.history))
                trained = whole if whole is not None else segments[-1]
                budget = limit - len(trained.mask)
                if budget <= 0:
                    engine.fail(Termination.LENGTH)
                    break
                prompt = len(segments[-1].ids)
                out = await self._generate(request_id, segments[-1].ids, sampling_params,
                                           budget, tally)
                text = await loop.run_in_executor(
                    None, partial(self.tokenizer.decode, out.token_ids, skip_special_tokens=True))
                for stream in (segments[-1], whole):
                    if stream is not None:
                        await self._add_assistant(stream, out, text)
                gen = Generation(text, tuple(out.token_ids),
                                 tuple(out.log_probs) if out.log_probs else None,
                                 prompt_tokens=prompt)
                if len(out.token_ids) >= budget:  # cut by the response budget
                    engine.cut(gen)
                    break
                await engine.asubmit(gen, execute)
            start = time.perf_counter()
            reward = await loop.run_in_executor(None, engine.score)
            tally.score_s = time.perf_counter() - start
        except BaseException:
            engine.env.close()
            raise
        episode = engine.finish(reward)  # scored above, in the executor
        if mode == "full_history":
            trained_streams = [whole]
        elif mode == "last_segment":
            trained_streams = segments[-1:]
        else:
            trained_streams = [s for s in segments if s.turns] or segments[-1:]
        extra = {**tally.server_fields,
                 **episode_fields(episode, info, len(segments))}
        if kwargs.get(TRANSCRIPT):  # a profiles router's measurement reads the trajectory
            extra[TRANSCRIPT] = [[m.role, m.content] for m in episode.messages]
        outputs = [self._output(s, reward, _num_turns(episode.messages),
                                tally if i == len(trained_streams) - 1 else None,
                                {**extra, "hscale_segment": i, "hscale_trained_turns": s.turns},
                                limit)
                   for i, s in enumerate(trained_streams)]
        return outputs if mode == "segments" else outputs[0]

    # --- pieces --------------------------------------------------------------------------
    def _mode(self) -> str:
        if self.segment_mode != "auto":
            return self.segment_mode
        queue = self.config.get("transfer_queue") or {}
        return "segments" if queue.get("enable") else "last_segment"

    def _max_turns(self, info: RowInfo) -> int:
        multi_turn = self.rollout_config.get("multi_turn") or {}
        value = info.max_turns or multi_turn.get("max_assistant_turns") or DEFAULT_MAX_TURNS
        if int(value) < 1:
            raise HscaleError(f"max_turns must be at least 1, got {value}", ROW_HINT)
        return int(value)

    async def _generate(self, request_id: str, prompt_ids: list[int],
                        sampling_params: dict[str, Any], budget: int, tally: _Tally) -> Any:
        """One model call, limited to the ``budget`` tokens left in the trained sequence."""
        params = dict(sampling_params)
        params["max_tokens"] = min(budget, int(params.get("max_tokens") or budget))
        start = time.perf_counter()
        out = await self.server_manager.generate(request_id=request_id, prompt_ids=prompt_ids,
                                                 sampling_params=params)
        tally.generate_s += time.perf_counter() - start
        tally.add_server_output(out)
        return out

    async def _open(self, messages: list[dict[str, str]]) -> _Stream:
        """A new sequence: the chat template over ``messages`` plus the generation prompt."""
        ids = await self.ct_build_initial_tokens(messages)
        return _Stream(list(messages), list(ids))

    async def _extend(self, stream: _Stream, messages: list[dict[str, str]]) -> None:
        """Append the messages past ``stream.messages`` (not the model's) with mask 0."""
        if len(messages) == len(stream.messages):  # nothing new: the generation prompt only
            delta = self.continuous_token_builder.render_delta_token_id(
                messages, [], add_generation_prompt=True)
            stream.ids = stream.ids + list(delta)
            stream.mask = stream.mask + [0] * len(delta)
            if stream.logprobs is not None:
                stream.logprobs = stream.logprobs + [0.0] * len(delta)
            return
        merged, mask, logprobs = await self.ct_merge_context_msg(
            stream.messages, messages, stream.ids, stream.mask, stream.logprobs)
        stream.ids, stream.mask, stream.messages = list(merged.token_ids), mask, list(messages)
        if stream.logprobs is not None:
            stream.logprobs = list(logprobs or [])

    async def _add_assistant(self, stream: _Stream, out: Any, text: str) -> None:
        """Append the model's tokens as generated (mask 1, their log-probs)."""
        token_ids = list(out.token_ids)
        logprobs = list(out.log_probs) if out.log_probs else None
        if logprobs is not None and stream.logprobs is None:
            stream.logprobs = [0.0] * len(stream.mask)
        if stream.logprobs is not None and logprobs is None:
            logprobs = [0.0] * len(token_ids)
        merged, mask, aligned = await self.ct_merge_assistant_token(
            stream.ids, token_ids, stream.mask, stream.logprobs, assistant_logprobs=logprobs)
        stream.ids, stream.mask = list(merged.token_ids), mask
        if stream.logprobs is not None:
            stream.logprobs = list(aligned or [])
        stream.messages.append({"role": "assistant", "content": text})
        stream.turns += 1

    def _output(self, stream: _Stream, reward: float, num_turns: int, tally: _Tally | None,
                extra: dict[str, Any], limit: int) -> Any:
        """veRL's AgentLoopOutput for one trained sequence, cut to the response limit; the
        rollout's timings go on the last output only (``tally``), so sums stay right."""
        from verl.experimental.agent_loop.agent_loop import AgentLoopMetrics, AgentLoopOutput

        prompt = stream.ids[: len(stream.ids) - len(stream.mask)]
        metrics = AgentLoopMetrics() if tally is None else AgentLoopMetrics(
            generate_sequences=tally.generate_s, tool_calls=tally.tools_s,
            compute_score=tally.score_s,
            num_preempted=-1 if tally.preempted is None else tally.preempted)
        return AgentLoopOutput(
            prompt_ids=prompt,
            response_ids=stream.ids[len(prompt):][:limit],
            response_mask=stream.mask[:limit],
            response_logprobs=None if stream.logprobs is None else stream.logprobs[:limit],
            reward_score=reward,
            num_turns=num_turns,
            metrics=metrics,
            extra_fields=extra,
        )


# ------------------------------------------------------------------------------- helpers


TRANSCRIPT = "hscale_transcript"  # keyword (and output field) of a measured trajectory


def episode_fields(episode: Any, info: RowInfo, segments: int) -> dict[str, Any]:
    """The extra fields of a rollout's outputs: what veRL averages and dumps (its
    ``reward_extra_info``: hscale.contracts.reward_extras of the episode's Outcome, which
    hscale reads back) and hscale's own (never dumped). A validation episode keeps its
    transcript."""
    validation = info.split == "val"  # kept as eval rows: with their transcripts
    played = replace(outcome(episode, info.harness, keep=validation),
                     behaviour=wire_behaviour(episode, info.harness))
    extras = reward_extras(played, info.routed_to, info.routing)
    return {"turn_scores": [], "tool_rewards": [], "reward_extra_info": extras,
            "hscale_harness": info.harness, "hscale_task_id": episode.task_id,
            "hscale_termination": str(episode.termination), "hscale_segments": segments,
            "hscale_turns": episode.turns, "hscale_parse_errors": episode.parse_errors}


def wire_behaviour(episode: Any, label: str) -> dict[str, float]:
    """The behaviour counts (hscale.harness._behaviour) of a rollout: the judged capabilities
    only when a judge is asked for them (veRL averages every extra, so each row of a process
    carries the same keys, and its metrics get no judged_* column of nothing)."""
    from hscale.harness._capabilities import COLUMNS, enabled

    counts = unobserved() if is_blackbox(label) else behaviour(episode)
    if not enabled():
        counts = {k: v for k, v in counts.items() if k not in COLUMNS}
    return counts


def _num_turns(history: Sequence[Message]) -> int:
    """veRL's count (user, assistant and tool messages): the non-system messages up to the
    last model turn; what came after it was never shown to the model."""
    last = max((i for i, m in enumerate(history) if m.role == "assistant"), default=-1)
    return sum(m.role != "system" for m in history[: last + 1])


def _check_mode(mode: str) -> str:
    if mode not in SEGMENT_MODES:
        raise HscaleError(f"unknown segment_mode {mode!r}", f"choose from {SEGMENT_MODES}")
    return mode


def row_space(raw: Any) -> HarnessSpace | None:
    """The harness space a row's labels belong to, from its ``space`` (None: the papers')."""
    if not raw:
        return None
    from hscale.harness._spaces import from_record

    try:
        return from_record(mapping(raw, "space"))
    except (KeyError, TypeError) as exc:
        raise HscaleError(f"the row's extra_info.space is not a space record ({exc})",
                          ROW_HINT) from None


def row_task(info: RowInfo) -> Task:
    """The task a row's extra_info carries, checked."""
    return task_from_row(info.task_row(), f"extra_info.task of row {info.index}")


@cache
def _agent_loop_class() -> type:
    """Subclass veRL's AgentLoopBase (importing veRL, seconds) and register it by name, unless
    the name is registered already: veRL's AgentLoopWorker loads agent_loop.yaml into its
    registry before the first rollout builds this class, and replacing that entry would drop
    its settings (segment_mode, workspace_root) for every later rollout."""
    try:
        from verl.experimental.agent_loop.agent_loop import AgentLoopBase, _agent_loop_registry
    except ImportError as exc:
        raise HscaleError(f"veRL is not importable ({exc})", 'pip install -e ".[train]"') from exc
    cls = type("HscaleAgentLoop", (_HarnessLoop, AgentLoopBase), {
        "__module__": __name__, "__qualname__": "HscaleAgentLoop",
        "__doc__": "hscale's agent loop for veRL: a harness and a task per row "
                   "(see hscale.harness.verl_agent_loop).",
    })
    _agent_loop_registry.setdefault(AGENT_NAME, {"_target_": CLASS_PATH})
    return cls


def __getattr__(name: str) -> Any:
    """``HscaleAgentLoop`` is built on first lookup so importing this module stays cheap."""
    if name == "HscaleAgentLoop":
        return _agent_loop_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
