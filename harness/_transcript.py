"""An episode as the model saw it, and what it cost: what every driver keeps of an evaluated
episode beside its eval row (the ``transcript`` and ``seconds`` columns of
transcripts.parquet; the cost counts are eval.parquet columns).

The transcript is one JSON object, so a run folder stays one table a kind:

- ``messages``: the history as the harness rendered it, ``[role, content]`` pairs (system
  prompt, task, each reply, each observation, injected and error messages);
- ``segments``: which model calls saw which sequence, ``[prefix, start, first, end]`` (see
  :class:`hscale.harness.components.Segment`): the view of the turn written at history index
  ``i`` is ``prefix + messages[start:i]`` of the segment holding ``i``
  (:func:`views`), so a compacted or sliding context is shown as the model saw it;
- ``calls``: each tool call and its observation (``name``, ``args``, ``ok``, ``output``);
- ``tokens``: per model turn ``[prompt tokens, completion tokens]`` (null where unknown);
- ``final_answer``, ``termination``, ``reward``, ``error``, ``parse_errors``;
- ``expected`` (the answer the checker expects, where it names one) and ``checked`` (how
  the task is scored, in words): why a reward is what it is;
- ``model_calls``: a black-box CLI's requests from the server's record (messages it sent,
  reply, tool calls, tokens, seconds); empty for hscale's own harnesses.
"""

from __future__ import annotations

import json
import math
from typing import Any


def cost(episode: Any) -> dict[str, float]:
    """Model calls, prompt and completion tokens of one episode (NaN where the driver cannot
    count them): the eval row's cost columns."""
    if episode.model_calls:  # a black-box CLI: its requests as the server saw them
        calls = episode.model_calls
        return {"model_calls": float(len(calls)),
                "prompt_tokens": _total(c.get("prompt_tokens") for c in calls),
                "completion_tokens": _total(c.get("completion_tokens") for c in calls)}
    gens = episode.generations
    if not gens and episode.turns:  # requests counted, never seen (no record)
        return {"model_calls": float(episode.turns), "prompt_tokens": math.nan,
                "completion_tokens": math.nan}
    return {"model_calls": float(len(gens)),
            "prompt_tokens": _total(g.prompt_length for g in gens),
            "completion_tokens": _total(None if g.token_ids is None else len(g.token_ids)
                                        for g in gens)}


def transcript(episode: Any) -> str:
    """The episode's transcript, as JSON (the module's docstring says its keys)."""
    return json.dumps({
        "messages": [[m.role, m.content] for m in episode.messages],
        "segments": [[[[m.role, m.content] for m in s.prefix], s.start, s.first, s.end]
                     for s in episode.segments],
        "calls": [{"name": call.name, "args": dict(call.args), "ok": bool(result.ok),
                   "output": result.output if result.ok else result.error}
                  for call, result in episode.tool_calls],
        "tokens": [[g.prompt_length, None if g.token_ids is None else len(g.token_ids)]
                   for g in episode.generations],
        "final_answer": episode.final_answer, "termination": str(episode.termination),
        "reward": float(episode.reward), "error": episode.error,
        "parse_errors": int(episode.parse_errors), "model_calls": list(episode.model_calls),
        "expected": getattr(episode, "expected", None), "checked": getattr(episode, "checked", ""),
    }, ensure_ascii=False, separators=(",", ":"), default=str)


def _total(values: Any) -> float:
    values = list(values)
    if any(v is None for v in values):
        return math.nan
    return float(sum(values))
