"""The veRL wire: what hscale's rows tell veRL's rollout workers, and what comes back.

veRL reads datasets of rows; hscale writes ``train.parquet`` and ``val.parquet`` whose
``extra_info`` says what a rollout plays (:class:`RowInfo`), veRL's workers run hscale's agent
loop on them (hscale.harness.verl_agent_loop), whose reward extras say how an episode went
(:func:`reward_extras`), and veRL dumps each validation episode with those extras, which
hscale reads back (:class:`DumpedEpisode`). Writer and reader live on either side of a
process boundary and a parquet round trip, so the keys are spelled here alone: a field is
an attribute everywhere else.

A parquet round trip gives every row every key any row had (missing ones as null), and may
turn integers into floats: :meth:`RowInfo.read` takes null as absent and casts.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hscale.contracts._outcome import Outcome
from hscale.contracts._vocabulary import COST, ErrorKind, is_blackbox, unobserved
from hscale.errors import HscaleError

EXTRA_INFO = "extra_info"  # the row field veRL hands the agent loop
VAL_TAG = "hscale_val_index"  # a val row's index, kept in its ground truth (veRL dumps it)
ROW_HINT = ("rows for hscale's agent loop come from hscale.harness.verl_agent_loop."
            "to_verl_rows (the veRL backend writes them)")


def mapping(raw: Any, what: str = "extra_info") -> dict[str, Any]:
    """A JSON object as written to a row (a dict, or its JSON text), as a dict."""
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise HscaleError(f"the row's {what} is not JSON", ROW_HINT) from None
    if not isinstance(raw, Mapping):
        raise HscaleError(f"the row's {what} is not an object ({type(raw).__name__})",
                          ROW_HINT)
    return dict(raw)


@dataclass(frozen=True)
class RowInfo:
    """A veRL row's ``extra_info``: the rollout it asks for.

    Every row: ``index`` (its place in its file), ``split``, the ``harness`` label, the
    ``task_id`` and the ``task`` row (JSON text: parquet would merge the differing keys of
    ``input_files`` across rows into nulls), ``max_turns`` and, for a described space or
    one with composed harnesses, the ``space`` (JSON). A training row: its schedule ``step``,
    ``slot`` and ``anchor``, and a rescue arm's ``rescue`` (how the worker rescues the
    group). A validation row: ``setting``, ``run``, ``decoding``, ``category``,
    ``benchmark``; in a Rank-1 routing run ``routing`` (say the pick) and, on a routed row,
    ``route`` (the router). The worker adds ``routed_to`` (the pick's index in the pool) and
    ``rescued_from`` (the harness a rescue replaced)."""

    index: int
    split: str
    harness: str
    task_id: str
    task: str
    max_turns: int | None = None
    space: Any = None
    step: int | None = None
    slot: int | None = None
    anchor: str | None = None
    rescue: Mapping[str, Any] | None = None  # RescueInfo.write()
    setting: str | None = None
    run: int | None = None
    decoding: str | None = None
    category: str | None = None
    benchmark: str | None = None
    routing: bool = False
    route: Mapping[str, Any] | None = None  # RescueInfo.write()
    routed_to: int | None = None
    rescued_from: str | None = None

    def write(self, **changes: Any) -> dict[str, Any]:
        """The ``extra_info`` object: the fields that are set, in this order; with
        ``changes``, that of ``replace(**changes)`` without building the copy (veRL's inputs
        write 100,000s of rows)."""
        unknown = changes.keys() - self.__dataclass_fields__.keys()
        if unknown:
            raise TypeError(f"RowInfo has no field {sorted(unknown)[0]!r}")
        out = {}
        for name in self.__dataclass_fields__:  # in order; fields() is slow at 100,000s
            value = changes[name] if name in changes else getattr(self, name)
            if value is not None and value is not False:
                out[name] = value
        return out

    @classmethod
    def read(cls, raw: Any) -> RowInfo:
        """A row's ``extra_info`` as written, or as veRL hands it back (JSON text, null keys
        of other rows, floats for integers); an HscaleError when it is not hscale's."""
        if not raw:
            raise HscaleError("the row has no extra_info", ROW_HINT)
        info = {k: v for k, v in mapping(raw).items() if v is not None}
        missing = [k for k in ("harness", "task") if not info.get(k)]
        if missing:
            raise HscaleError(f"the row's extra_info has no {missing[0]!r}", ROW_HINT)
        values = {k: v for k, v in info.items() if k in cls.__dataclass_fields__}
        for key in ("index", "max_turns", "step", "slot", "run", "routed_to"):
            if key in values:
                values[key] = int(values[key])
        values.setdefault("index", 0)
        values.setdefault("split", "")
        values.setdefault("task_id", "")
        values["routing"] = bool(values.get("routing", False))
        if not isinstance(values["task"], str):
            values["task"] = json.dumps(dict(values["task"]), sort_keys=True)
        return cls(**values)

    def replace(self, **changes: Any) -> RowInfo:
        return dataclasses.replace(self, **changes)

    def task_row(self) -> dict[str, Any]:
        """The task row (hscale.harness.tasks.task_from_row builds the Task)."""
        return mapping(self.task, "task")

    @property
    def greedy(self) -> bool:
        """A validation row of the greedy pass: sampled at temperature 0."""
        return self.decoding == "greedy"

    @property
    def blackbox(self) -> bool:
        return is_blackbox(self.harness)


@dataclass(frozen=True)
class RescueInfo:
    """What a rescue arm's rows carry for the worker to rescue their group (a training row's
    ``rescue``), or a Rank-1 routing row's router (its ``route``): the router, the frozen
    pool, the base harness, the space's factors and (for composed harnesses) the space, a
    seed, the benchmark and count of the tasks it measures siblings on, and how often it
    measures again (every evaluation checkpoint: ``every`` steps)."""

    router: str
    pool: tuple[str, ...]
    base: str
    factors: Mapping[str, tuple[str, ...]]
    seed: int
    benchmark: Mapping[str, Any]
    count: int
    every: int
    space: Any = None

    def write(self) -> dict[str, Any]:
        out = {"router": self.router, "pool": list(self.pool), "base": self.base,
               "factors": {k: list(v) for k, v in self.factors.items()}, "seed": self.seed,
               "measure_on": {"benchmark": dict(self.benchmark), "count": self.count},
               "every": self.every}
        return {**out, "space": self.space} if self.space is not None else out

    @classmethod
    def read(cls, raw: Any) -> RescueInfo:
        info = mapping(raw, "rescue")
        on = mapping(info["measure_on"], "measure_on")
        return cls(router=str(info["router"]), pool=tuple(info["pool"]),
                   base=str(info["base"]),
                   factors={k: tuple(v) for k, v in mapping(info["factors"]).items()},
                   seed=int(info["seed"]),
                   benchmark={k: v for k, v in mapping(on["benchmark"]).items()
                              if v is not None},
                   count=int(on["count"]), every=int(info["every"]),
                   space=info.get("space"))


def reward_extras(outcome: Outcome, routed_to: int | None = None, routing: bool = False
                  ) -> dict[str, Any]:
    """An episode's reward extras (veRL averages and dumps them, so every row of a process
    has the same keys, each a number): success (and ``acc``, veRL's main validation metric),
    turns, whether the checker failed, the behaviour counts the outcome carries and the
    :data:`COST` counts (NaN: not observed, written -1), and in a routing run the pick (-1:
    none). An episode that keeps its transcript (a validation episode) also carries it, its
    termination and seconds: text veRL's validation metrics skip and its dump keeps."""
    counts = {**outcome.behaviour, **{k: outcome.cost.get(k, math.nan) for k in COST}}
    out: dict[str, Any] = {
        "success": float(outcome.success), "acc": float(outcome.success),
        "turns": float(outcome.turns), "checker_error": float(outcome.checker_failed),
        **{k: (-1.0 if math.isnan(v) else float(v)) for k, v in counts.items()}}
    if routing:
        out["routed_to"] = float(routed_to if routed_to is not None else -1)
    if outcome.transcript is not None:
        out.update(transcript=outcome.transcript, termination=str(outcome.termination or ""),
                   seconds=-1.0 if math.isnan(outcome.seconds) else outcome.seconds)
    return out


@dataclass(frozen=True)
class DumpedEpisode:
    """A validation episode as veRL dumps it (``verl/validation/<step>.jsonl``): the step,
    its val row (:data:`VAL_TAG` in the ground truth), the sibling a routing run picked, and
    the :class:`hscale.contracts.Outcome` its reward extras (:func:`reward_extras`) describe;
    its error is the checker's failure, whose words stayed in the rollout worker's log."""

    step: int
    row: int
    routed_to: int | None
    outcome: Outcome

    @classmethod
    def read(cls, rec: Mapping[str, Any], where: str, rows: int) -> DumpedEpisode:
        reward = rec.get("score", rec.get("reward"))
        if not isinstance(reward, int | float) or "step" not in rec:
            raise HscaleError(f"{where}: no numeric score and step",
                              "not a veRL 0.9.1 validation dump; check veRL's version")
        routed, success, turns = rec.get("routed_to"), rec.get("success"), rec.get("turns")
        behaviour, cost = unobserved(), dict.fromkeys(COST, math.nan)
        for counts in (behaviour, cost):
            for key in counts:
                value = rec.get(key)
                if isinstance(value, int | float) and value >= 0:
                    counts[key] = float(value)
        outcome = Outcome(
            reward=float(reward),
            success=float(success) >= 0.5 if success is not None else reward >= 1.0,
            turns=int(turns) if turns is not None else -1,
            termination=str(rec.get("termination") or ""),
            error=(ErrorKind.CHECKER.line("failed (see the rollout worker's log)")
                   if rec.get("checker_error") else ""),
            behaviour=behaviour, cost=cost, transcript=_text(rec.get("transcript")),
            seconds=_seconds(rec.get("seconds")))
        return cls(step=int(rec["step"]), row=val_index(rec.get("gts"), where, rows),
                   routed_to=int(routed) if isinstance(routed, int | float) and routed >= 0
                   else None, outcome=outcome)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and value >= 0 else math.nan


def tag_truth(ground_truth: str, index: int) -> str:
    """A val row's ground truth: the checker spec and the row's index in val.parquet (veRL's
    dumps keep no extra_info, but they keep the ground truth)."""
    return json.dumps({"checker": json.loads(ground_truth), VAL_TAG: index}, sort_keys=True)


def val_index(gts: Any, where: str, rows: int) -> int:
    """The val row a dumped episode played (from :func:`tag_truth`'s ground truth)."""
    try:
        index = json.loads(gts)[VAL_TAG]
    except (KeyError, TypeError, ValueError):
        raise HscaleError(f"{where}: not an hscale validation episode (no {VAL_TAG} in gts)",
                          "the dump comes from a val.parquet hscale did not write; re-launch "
                          "the run") from None
    if not isinstance(index, int) or not 0 <= index < rows:
        raise HscaleError(f"{where}: val row {index!r} is not in val.parquet ({rows} rows)",
                          "val.parquet changed after the run; re-plan and re-launch it")
    return index
