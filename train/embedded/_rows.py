"""A playing row's state: what the sampler (hscale.train.embedded._sampler) and its cache's
lanes (hscale.train.embedded._lanes) both read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hscale.harness import TurnEngine
    from hscale.train.embedded._draws import Draws


@dataclass
class Row:
    """One episode as the sampler plays it: its turn engine, the tokens it has fed and
    those still to feed, the turn it is writing, its draws and the lane it plays in."""

    engine: TurnEngine
    pending: list[int]
    fed: list[int] = field(default_factory=list)
    own: dict[int, tuple[int, ...]] = field(default_factory=dict)
    gen: list[int] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)
    pos: int = 0
    next_token: int = -1
    greedy: bool = False
    prompt_tokens: int = 0  # of the turn being written (its cost)
    draws: Draws | None = None  # a sampled row's own stream of uniforms
    entropy: float = 0.0  # summed over the row's sampled tokens
    job: int = 0  # its index in the batch's jobs
    lane: int = 0  # the cache row it shares with the rows alike (Lanes)
