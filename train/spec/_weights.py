"""A spec's component weights (``weights: {C: 2.0, S: 0.5}``) resolved against its space.

A weight is named by its factor (``C``, as in labels) or, for the harness components, by the
component the factor sets (``context``); factors left out weigh 1. The weights are
normalised to mean 1 (hscale.design._weights) and dropped when all equal, so an unweighted spec and
an equally weighted one plan the same manifests and schedules, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from hscale.design import FactorSpace, resolve_weights
from hscale.harness import component_aliases, factor_space


def spec_weights(weights: Mapping[str, float] | None, space: Any) -> np.ndarray | None:
    """The weight vector of a spec's ``weights`` over ``space`` (a HarnessSpace, whose
    factors' components are aliases; a FactorSpace, the papers' components aliased; or a
    spec's ``space`` name: ``harness`` or level counts); None when unset or all equal. A
    hscale.design._weights.WeightError names the bad key."""
    if not weights:
        return None
    if isinstance(space, str):
        space = factor_space() if space == "harness" else FactorSpace.from_levels(space)
    if not isinstance(space, FactorSpace):  # a HarnessSpace: each factor's own component
        return resolve_weights(space.factor_space, weights,
                               {c: f for f, c in space.components().items()})
    return resolve_weights(space, weights, component_aliases(space))
