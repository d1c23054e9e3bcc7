"""An episode's :class:`hscale.contracts.Outcome`: what every driver hands the run's recorder,
measured in one place (its behaviour counts, cost, transcript), so a new per-episode column
is one line here and a field of the contract."""

from __future__ import annotations

from typing import Any

from hscale.contracts import Outcome, is_blackbox, unobserved
from hscale.harness._behaviour import behaviour
from hscale.harness._transcript import cost, transcript


def outcome(episode: Any, label: str | None = None, *, keep: bool = True) -> Outcome:
    """The outcome of ``episode`` (hscale.harness.Episode) played under ``label`` (default:
    the episode's own): a black-box CLI's trajectory is its own, so its behaviour is not
    observed; its transcript and seconds only when ``keep``."""
    label = episode.harness if label is None else label
    return Outcome(reward=float(episode.reward), success=bool(episode.success),
                   turns=int(episode.turns), termination=str(episode.termination or ""),
                   error=str(episode.error or ""),
                   behaviour=unobserved() if is_blackbox(label) else behaviour(episode),
                   cost=cost(episode), transcript=transcript(episode) if keep else None,
                   seconds=float(episode.seconds))
