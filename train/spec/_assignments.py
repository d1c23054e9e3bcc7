"""Assignment modes: how a task's K-1 partner harnesses follow its anchor (hscale.train.planning
builds the schedules from them). A spec names a mode and, for a mode that ranks partners by
distance, a radius, so the modes are defined here, where a spec is checked; register your own
with ``ASSIGNMENTS.register(name, AssignmentMode(...))``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hscale.design import TIE_DECIMALS, distance_matrix, tie_key
from hscale.registry import Registry


@dataclass(frozen=True)
class AssignmentMode:
    """How a task's K-1 partner harnesses follow its anchor: ``partners(train, anchors, k,
    rng)`` gives row indices into ``train`` of shape (tasks, K-1). ``distinct`` modes need K
    different training configurations; ``by_distance`` modes also take the keywords
    ``weights`` (per component, or None) and ``radius`` (adaptive K, or None)."""

    partners: Callable[..., np.ndarray]
    distinct: bool = True
    by_distance: bool = False


ASSIGNMENTS: Registry[AssignmentMode] = Registry("assignment mode")


def _random_keys(n_tasks: int, n: int, anchors: np.ndarray, rng: np.random.Generator
                 ) -> np.ndarray:
    keys = rng.random((n_tasks, n))
    keys[np.arange(n_tasks), anchors] = np.inf  # never pick the anchor again
    return keys


def _nearest(train: np.ndarray, anchors: np.ndarray, k: int, rng: np.random.Generator, *,
             weights: Sequence[float] | None = None, radius: float | None = None
             ) -> np.ndarray:
    keys = _random_keys(len(anchors), len(train), anchors, rng)
    dist = tie_key(distance_matrix(train, weights=weights)[anchors]).astype(float)
    dist[np.arange(len(anchors)), anchors] = np.inf
    # sort by distance, then by the random key: ties among equally near configs are random
    out = np.lexsort((keys, dist), axis=1)[:, : k - 1]
    if radius is not None:  # adaptive K: partners beyond the radius give way to the anchor
        far = np.take_along_axis(dist, out, axis=1) > round(radius, TIE_DECIMALS)
        out = np.where(far, anchors[:, None], out)
    return out


def adaptive_k(train: np.ndarray, k: int, radius: float,
               weights: Sequence[float] | None = None) -> np.ndarray:
    """K_x of a task anchored at each training configuration under adaptive K: 1 + its
    neighbours in ``train`` within ``radius``, at most ``k``."""
    dist = tie_key(distance_matrix(train, weights=weights))
    within = (dist <= round(radius, TIE_DECIMALS)).sum(axis=1)  # counts the anchor itself
    return np.minimum(within, k)


def _uniform(train: np.ndarray, anchors: np.ndarray, k: int, rng: np.random.Generator
             ) -> np.ndarray:
    keys = _random_keys(len(anchors), len(train), anchors, rng)
    return np.argsort(keys, axis=1)[:, : k - 1]


def _anchor_again(train: np.ndarray, anchors: np.ndarray, k: int, rng: np.random.Generator
                  ) -> np.ndarray:
    return np.repeat(anchors[:, None], k - 1, axis=1)


ASSIGNMENTS.register("locality", AssignmentMode(_nearest, by_distance=True))
ASSIGNMENTS.register("repeat", AssignmentMode(_anchor_again, distinct=False))
ASSIGNMENTS.register("random", AssignmentMode(_uniform))
ASSIGNMENTS.register("rescue", AssignmentMode(_anchor_again, distinct=False))
