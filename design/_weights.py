"""Per-component weights for Hamming distances.

Components do not matter equally: a context-management change can hurt a policy more than a
reworded prompt. The weighted distance of two configurations sums the weights of the
components in which they differ (the plain Hamming distance weighs each 1); for positive
weights it is a metric. Weights are relative, so a space's weights are normalised to mean 1:
a radius then reads in units of an average component, weights estimated by ``hscale report``
(already mean 1) pass through unchanged, and equal weights, whatever their value, are no
weights at all (:func:`resolve_weights` returns None), which keeps unweighted results exact.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from hscale.design._space import FactorSpace
from hscale.errors import HscaleError

# Weighted distances are compared after rounding to this many decimals, so that sums equal in
# exact arithmetic (0.5 + 1.0 against 1.5) tie, and ties go to the seeded generator.
TIE_DECIMALS = 9


class WeightError(HscaleError):
    """Bad weights; ``key`` is the component name at fault, when there is one."""

    def __init__(self, message: str, hint: str | None = None, key: str | None = None) -> None:
        super().__init__(message, hint)
        self.key = key


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise WeightError(f"weight of {name} must be a number, got {value!r}",
                          "give a positive number, e.g. 2.0", name)
    out = float(value)
    if not (math.isfinite(out) and out > 0):
        raise WeightError(f"weight of {name} must be a positive finite number, got {value!r}",
                          "weights are relative: 2.0 counts a change twice, 0.5 half", name)
    return out


def check_weights(weights: Sequence[float] | np.ndarray, n_factors: int) -> np.ndarray:
    """``weights`` as a float vector: one positive finite number per factor."""
    arr = np.asarray(weights, dtype=object).ravel()
    if len(arr) != n_factors:
        raise WeightError(f"{len(arr)} weights for {n_factors} factors",
                          "give one weight per factor, in the space's order")
    return np.array([_number(v, f"factor {i}") for i, v in enumerate(arr.tolist())],
                    dtype=np.float64)


def resolve_weights(space: FactorSpace, weights: Mapping[str, float] | Sequence[float] | None,
                    aliases: Mapping[str, str] | None = None) -> np.ndarray | None:
    """A space's weights as a vector in factor order, normalised to mean 1; None when there
    are none or all are equal (the plain Hamming distance, up to a constant factor).

    ``weights`` maps a factor name (or an alias, e.g. a harness component name, through
    ``aliases``: alias -> factor name) to a weight, factors left out weighing 1; or gives one
    weight per factor. An unknown name is refused with a did-you-mean.
    """
    if weights is None:
        return None
    if isinstance(weights, Mapping):
        vec = np.ones(space.n_factors)
        seen: dict[str, str] = {}
        for key, value in weights.items():
            factor = _factor(space, str(key), aliases or {})
            if factor in seen:
                raise WeightError(f"weights name {factor} twice ({seen[factor]} and {key})",
                                  "give each component one weight", str(key))
            seen[factor] = str(key)
            vec[space.names.index(factor)] = _number(value, str(key))
    else:
        vec = check_weights(weights, space.n_factors)
    return normalised(vec)


def normalised(weights: np.ndarray) -> np.ndarray | None:
    """Positive weights scaled to mean 1, or None when they are all equal."""
    if not len(weights) or np.all(weights == weights[0]):
        return None
    return weights / weights.mean()


def _factor(space: FactorSpace, key: str, aliases: Mapping[str, str]) -> str:
    if key in space.names:
        return key
    if aliases.get(key) in space.names:
        return aliases[key]
    alias_of = {f: a for a, f in aliases.items() if f in space.names}
    close = difflib.get_close_matches(key, [*space.names, *alias_of.values()], n=1)
    listed = ", ".join(f"{n} ({alias_of[n]})" if n in alias_of else n
                       for n in space.names[:20])
    raise WeightError(f"weights: unknown component {key!r} of space {space.name}",
                      (f"did you mean {close[0]!r}? " if close else "")
                      + f"components: {listed}", key)


def by_name(space: FactorSpace, weights: np.ndarray | None) -> dict[str, float] | None:
    """A weight vector as factor name -> weight (what a manifest records)."""
    if weights is None:
        return None
    return {name: float(w) for name, w in zip(space.names, weights.tolist(), strict=True)}


def parse_weights(text: str) -> dict[str, float]:
    """``C=2,S=0.5`` as a mapping; or the ``weights:`` mapping of a YAML file (the snippet
    ``hscale report`` writes), when ``text`` names one."""
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or path.is_file():
        from hscale.yamlio import read_yaml

        data, _ = read_yaml(path, "weights YAML")
        found = data.get("weights", data) if isinstance(data, dict) else None
        if not isinstance(found, dict):
            raise WeightError(f"{path}: no weights mapping found",
                              "write weights: {C: 2.0, S: 0.5}")
        return {str(k): v for k, v in found.items()}
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, eq, value = part.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = None
        if not eq or not name.strip() or number is None:
            raise WeightError(f"cannot read weights {text!r}: bad part {part!r}",
                              "write NAME=WEIGHT pairs joined by commas, e.g. C=2,S=0.5")
        out[name.strip()] = number
    if not out:
        raise WeightError("no weights given", "write NAME=WEIGHT pairs, e.g. C=2,S=0.5")
    return out
