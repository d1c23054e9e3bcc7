"""Trajectories from the serving record: each model call of a black-box episode as one
training sample (the prompt ids the model was given, the ids it wrote, their log-probs),
carrying the episode's reward, harness and task.

A black-box harness is a program hscale does not own: what it showed the model exists only
in the record ``hscale serve`` keeps (hscale.train.lm._record), one row a request with the
client's session. :func:`samples` joins those rows with the episodes that ran (session,
harness, task, reward: what hscale.harness._blackbox_run returns and :class:`EpisodeLog`
keeps), in the order the calls were made. The model wrote every response id (its mask is 1)
and none of the prompt's (0); a reply the server wrote itself (the turn limit) is no call.
A trajectory whose record cannot give exact ids (a model or an upstream that does not report
them, a failed request, no request at all) is refused with the reason: training on
re-tokenized text would train tokens the model never sampled.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.journal import Journal, read_journal

CALL_PATHS = ("chat/completions", "responses", "messages")  # the paths that reach the model


@dataclass(frozen=True)
class Sample:
    """One model call: ``prompt_ids`` then ``response_ids`` (the model's), ``logprobs`` of
    the response (one more when the model ended its turn with an end token), the episode's
    ``reward`` and where it came from."""

    session: str
    call: int  # 0, 1, ...: the call's place in its episode
    calls: int  # the episode's model calls
    harness: str
    task_id: str
    reward: float
    prompt_ids: tuple[int, ...]
    response_ids: tuple[int, ...]
    logprobs: tuple[float, ...] | None
    # the call as text, as recorded (JSON turns; the reply and its tool calls): what a
    # student with another tokenizer is fine-tuned on (black-box SFT)
    messages: str = ""
    reply: str = ""
    tool_calls: str = ""
    tool_specs: str = ""

    @property
    def ids(self) -> tuple[int, ...]:
        return self.prompt_ids + self.response_ids

    @property
    def mask(self) -> tuple[int, ...]:
        """1 on the tokens the model wrote."""
        return (0,) * len(self.prompt_ids) + (1,) * len(self.response_ids)


class EpisodeLog:
    """The episodes a collection ran, one JSON line each (session, harness, task_id,
    reward), beside the record: appended as each ends, so an interrupted collection keeps
    what it finished."""

    NAME = "episodes.jsonl"

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / self.NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def add(self, session: str, harness: str, task_id: str, reward: float) -> None:
        with Journal(self.path) as journal:
            journal.append({"session": session, "harness": harness, "task_id": task_id,
                            "reward": float(reward)})

    def read(self) -> list[dict[str, Any]]:
        return read_journal(self.path)


def samples(record: Any, episodes: Iterable[Mapping[str, Any]], exact: bool = True
            ) -> list[Sample]:
    """Every model call of every episode, in episode order then call order. ``record``: a
    record folder or its frame (hscale.train.lm.read_record); ``episodes``: rows
    with ``session``, ``harness``, ``task_id`` and ``reward``. Raises HscaleError naming the
    session and the reason when one cannot be replayed exactly; with ``exact`` False, a
    call without ids is kept as text (ids empty: a teacher's calls for another model)."""
    frame = _frame(record)
    out: list[Sample] = []
    for episode in episodes:
        session = str(episode["session"])
        rows = frame[frame["session"] == session].sort_values("time", kind="stable")
        calls = [r for r in rows.to_dict("records") if r.get("by", "model") != "server"
                 and str(r.get("path", "")).rstrip("/").endswith(CALL_PATHS)]
        if not calls:
            raise HscaleError(f"session {session}: no model call in the record",
                              "the CLI never reached the served model; see its episode's error")
        for k, row in enumerate(calls):
            prompt, response, logprobs = _call(row, f"session {session} call {k}", exact)
            out.append(Sample(session, k, len(calls), str(episode["harness"]),
                              str(episode["task_id"]), float(episode["reward"]), prompt,
                              response, logprobs, str(row.get("messages", "")),
                              str(row.get("reply", "")), str(row.get("tool_calls", "")),
                              str(row.get("tool_specs", ""))))
    return out


def _frame(record: Any) -> Any:
    if isinstance(record, str | Path):
        from hscale.train.lm import read_record

        return read_record(record)
    return record


def _call(row: Mapping[str, Any], where: str, exact: bool
          ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...] | None]:
    if int(row.get("status", 0)) != 200:
        raise HscaleError(f"{where}: the request failed ({row.get('status')}: "
                          f"{str(row.get('error', ''))[:200]})",
                          "an episode with a refused call is not a trajectory: drop it")
    prompt, response = _ids(row.get("prompt_ids")), _ids(row.get("token_ids"))
    if not exact:
        return prompt or (), response or (), None
    if prompt is None or not prompt:
        raise HscaleError(f"{where}: the record has no prompt ids (model {row.get('model')})",
                          "serve a model that reports them (Hugging Face, embedded, veRL's "
                          "rollout); proxy mode and endpoints do not")
    if response is None:
        raise HscaleError(f"{where}: the record has no reply ids", "record with hscale serve")
    logprobs = row.get("logprobs")
    values = json.loads(logprobs) if isinstance(logprobs, str) and logprobs else None
    return prompt, response, None if values is None else tuple(float(v) for v in values)


def _ids(text: Any) -> tuple[int, ...] | None:
    if not isinstance(text, str) or not text:
        return None
    return tuple(int(i) for i in json.loads(text))
