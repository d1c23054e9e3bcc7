"""What one played episode produced, as every driver hands it on: :class:`Outcome`.

The turn engine's episodes (hscale.harness.outcome makes their outcomes), a black-box CLI's,
and veRL's dumped validation episodes (their reward extras, hscale.contracts.reward_extras
on the rollout worker, read back as a :class:`hscale.contracts.DumpedEpisode`) all become
one record, which the run's recorder (hscale.train.planning.Recorder) turns into result
rows. A new per-episode column is a field here, the line of hscale.harness.outcome that
measures it, and its type in the table contract: no driver changes (one that travels
through veRL also has its key in the reward extras).
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
    """One episode's result: reward and success, turns, why it ended (``termination``, a
    :class:`hscale.contracts.Termination` value; empty where a driver did not see it), its
    errors (``"kind: text"`` lines joined by ``"; "``, :class:`ErrorKind`), the behaviour
    counts and cost (NaN where not observed), and the transcript and wall-clock seconds of
    an episode that keeps them (transcripts.parquet)."""

    reward: float
    success: bool
    turns: int
    termination: str = ""
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
                "termination": str(self.termination or ""),
                **{k: float(self.behaviour.get(k, math.nan)) for k in unobserved()},
                **{k: float(self.cost.get(k, math.nan)) for k in COST}}
