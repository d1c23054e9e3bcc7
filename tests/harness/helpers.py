"""Checks several harness tests share."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from harness.engine import Episode
from harness.harness import Harness
from harness.vocab import tokenize, vocabulary


def out_of_vocabulary(text: str) -> list[str]:
    """Tokens of ``text`` the built-in vocabulary lacks (empty when it covers the text)."""
    known = set(vocabulary())
    return [t for t in tokenize(text) if t not in known]


def success_by_realization(episodes: Sequence[Episode]) -> dict[str, tuple[int, float]]:
    """Realization name (and ``overall``) -> (episodes, success rate)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    names: dict[str, list[str]] = {}
    for episode in episodes:
        if episode.harness not in names:
            names[episode.harness] = list(
                Harness.from_name(episode.harness).realization_names().values())
        for key in ("overall", *names[episode.harness]):
            counts[key][0] += 1
            counts[key][1] += episode.success
    return {k: (n, wins / n) for k, (n, wins) in sorted(counts.items())}
