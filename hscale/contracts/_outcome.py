"""What one played episode produced, as every driver hands it on: :class:`Outcome`.

The turn engine's episodes (hscale.harness.outcome makes their outcomes), a black-box CLI's,
and veRL's dumped validation episodes (their reward extras, :meth:`Outcome.extras` on the
rollout worker, :meth:`Outcome.from_extras` on the way back) all become one record, which
the run's recorder (hscale.train.planning.Recorder) turns into result rows. A new per-episode
column is a field here, the line of hscale.harness.outcome that measures it, and its type in
the table contract: no driver changes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hscale.contracts._vocabulary import COST, ErrorKind, errors_of, unobserved


def _no_cost() -> dict[str, float]:
    return dict.fromkeys(COST, math.nan)


@dataclass(frozen=True)
class Outcome:
    """One episode's result: reward and success, turns, its
    errors (``"kind: text"`` lines joined by ``"; "``, :class:`ErrorKind`), the behaviour
    counts and cost (NaN where not observed), and the transcript and wall-clock seconds of
    an episode that keeps them (transcripts.parquet)."""

    reward: float
    success: bool
    turns: int
    error: str = ""
    behaviour: Mapping[str, float] = field(default_factory=unobserved)
    cost: Mapping[str, float] = field(default_factory=_no_cost)
    transcript: str | None = None
    seconds: float = math.nan

    @property
    def checker_failed(self) -> bool:
        """Whether its checker failed: it scored 0 whatever the policy did."""
        return ErrorKind.CHECKER in errors_of(self.error)

    def columns(self) -> dict[str, Any]:
        """Its eval.parquet columns (hscale.contracts.EVAL_COLUMNS and EVAL_OPTIONAL)."""
        return {"reward": float(self.reward), "success": bool(self.success),
                "turns": int(self.turns), "error": str(self.error or ""),
                **{k: float(self.behaviour.get(k, math.nan)) for k in unobserved()},
                **{k: float(self.cost.get(k, math.nan)) for k in COST}}

    def extras(self, routed_to: int | None = None, routing: bool = False) -> dict[str, Any]:
        """Its reward extras on veRL's wire (veRL averages and dumps them, so every row of a
        process has the same keys, each a number): success (and ``acc``, veRL's main
        validation metric), turns, whether the checker failed, the behaviour counts it
        carries and the cost counts (NaN: not observed, written -1), and in a routing run the
        pick (-1: none). An episode that keeps its transcript (a validation episode) also
        carries it and its seconds: text veRL's metrics skip and its dump keeps."""
        counts = {**self.behaviour, **{k: self.cost.get(k, math.nan) for k in COST}}
        out: dict[str, Any] = {
            "success": float(self.success), "acc": float(self.success),
            "turns": float(self.turns), "checker_error": float(self.checker_failed),
            **{k: (-1.0 if math.isnan(v) else float(v)) for k, v in counts.items()}}
        if routing:
            out["routed_to"] = float(routed_to if routed_to is not None else -1)
        if self.transcript is not None:
            out.update(transcript=self.transcript,
                       seconds=-1.0 if math.isnan(self.seconds) else self.seconds)
        return out

    @classmethod
    def from_extras(cls, rec: Mapping[str, Any], reward: float) -> Outcome:
        """The outcome a dumped episode's extras (:meth:`extras`) describe; its error is the
        checker's failure, whose words stayed in the rollout worker's log."""
        success, turns = rec.get("success"), rec.get("turns")
        behaviour, cost = unobserved(), _no_cost()
        for counts in (behaviour, cost):
            for key in counts:
                value = rec.get(key)
                if isinstance(value, int | float) and value >= 0:
                    counts[key] = float(value)
        seconds = rec.get("seconds")
        text = rec.get("transcript")
        return cls(reward=float(reward),
                   success=float(success) >= 0.5 if success is not None else reward >= 1.0,
                   turns=int(turns) if turns is not None else -1,
                   error=(ErrorKind.CHECKER.line("failed (see the rollout worker's log)")
                          if rec.get("checker_error") else ""),
                   behaviour=behaviour, cost=cost,
                   transcript=text if isinstance(text, str) and text else None,
                   seconds=float(seconds) if isinstance(seconds, int | float) and seconds >= 0
                   else math.nan)
