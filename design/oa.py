"""``orthogonal_array``: pick a construction for the request and return only verified arrays."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from design.bounds import divisor, feasibility, smallest_runs
from design.design import Design
from design.errors import InfeasibleError, NotConstructedError
from design.planning import constructions
from design.product import product_candidate
from design.search import search_oa
from design.space import FactorSpace, format_levels, parse_levels
from design.verify import check_strength
from hscale.errors import HscaleError

# Largest array (runs x factors) hscale builds: beyond this a request is almost surely a typo.
_MAX_CELLS = 50_000_000
# How far past the smallest feasible N to look when the caller gives no N.
_RUN_SEARCH_MULTIPLES = 64
# Seconds of search fallback per candidate N when the caller gives no N, and in all: past
# the budget, larger N are tried with the algebraic constructions only.
_AUTO_SEARCH_TIME = 0.1
_AUTO_SEARCH_BUDGET = 1.0


def orthogonal_array(levels: str | Sequence[int], strength: int = 2, runs: int | None = None,
                     lam: int | None = None, seed: int | None = None,
                     space: FactorSpace | None = None) -> Design:
    """An orthogonal array OA(N; levels; strength), verified before it is returned.

    ``runs`` fixes N; ``lam`` asks for N = lam * (the least N the divisibility condition
    allows, s^t for pure s levels); neither picks the smallest N hscale can build. ``seed``
    shuffles rows and permutes levels within columns (an isomorphic array), reproducibly.
    Raises :class:`InfeasibleError` with the bound's reason when no such array can exist, and
    :class:`NotConstructedError` when none of the constructions produced one.
    """
    lv = parse_levels(levels)
    if space is not None and space.levels != lv:
        raise HscaleError(f"space {space.name} has levels {format_levels(space.levels)}, "
                          f"the request {format_levels(lv)}")
    if runs is not None and lam is not None:
        raise HscaleError("give either runs or lam, not both", "drop --lam or --runs")
    if lam is not None:
        if lam < 1:
            raise HscaleError(f"lam must be a positive integer, got {lam}")
        runs = lam * divisor(lv, strength)
    if runs is not None and runs * len(lv) > _MAX_CELLS:
        raise HscaleError(f"OA({runs}; {format_levels(lv)}) would hold {runs * len(lv)} "
                          f"entries, more than hscale builds ({_MAX_CELLS})",
                          "ask for fewer runs or factors")
    if runs is not None:
        verdict = feasibility(lv, strength, runs)
        if not verdict.ok:
            raise InfeasibleError(verdict.reasons[0], _feasible_hint(lv, strength))
        found = _build(lv, strength, runs)
        if found is None:
            raise NotConstructedError(
                f"no construction in hscale produced OA({runs}; {format_levels(lv)}) of "
                f"strength {strength}, although no bound excludes it",
                "try another N (hscale design bounds shows the bounds) or fewer factors")
    else:
        start = smallest_runs(lv, strength)
        step = divisor(lv, strength)
        found = None
        deadline = time.monotonic() + _AUTO_SEARCH_BUDGET
        for n in range(start, start + _RUN_SEARCH_MULTIPLES * step, step):
            if n * len(lv) > _MAX_CELLS:
                break
            if feasibility(lv, strength, n).ok:
                search = _AUTO_SEARCH_TIME if time.monotonic() < deadline else 0.0
                found = _build(lv, strength, n, search_time=search)
                if found is not None:
                    break
        if found is None:
            raise NotConstructedError(
                f"no construction in hscale produced an OA({format_levels(lv)}) of strength "
                f"{strength} with up to {start + (_RUN_SEARCH_MULTIPLES - 1) * step} runs",
                "give --runs explicitly, or use fewer factors")
    method, array = found
    if seed is not None:
        array = _shuffle(array, lv, np.random.default_rng(seed))
        method += f" shuffled(seed={seed})"
    report = check_strength(array, strength, lv)
    if not report.ok:  # only reachable if _shuffle were wrong; never return unverified arrays
        raise RuntimeError(f"internal error: {method} failed verification: {report.summary()}")
    return Design(array, space or FactorSpace.from_levels(lv), method=method, strength=strength)


def _build(levels: tuple[int, ...], strength: int, runs: int, search_time: float = 2.0
           ) -> tuple[str, np.ndarray] | None:
    """The first candidate that verifies: algebra first, then products, then the search."""
    for method, array in constructions(levels, strength, runs, search_time=0.0):
        arr = np.asarray(array, dtype=np.int64)
        if arr.shape == (runs, len(levels)) and check_strength(arr, strength, levels).ok:
            return method, arr
    crossed = product_candidate(levels, strength, runs, orthogonal_array)
    if crossed is not None and check_strength(crossed[1], strength, levels).ok:
        return crossed
    if search_time > 0 and strength <= len(levels):
        found = search_oa(levels, runs, strength, time_limit=search_time)
        if found is not None and check_strength(found, strength, levels).ok:
            return f"search_oa(time_limit={search_time:g})", np.asarray(found, dtype=np.int64)
    return None


def _shuffle(array: np.ndarray, levels: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    out = array[rng.permutation(len(array))]
    for j, s in enumerate(levels):
        out[:, j] = rng.permutation(s)[out[:, j]]
    return out


def _feasible_hint(levels: tuple[int, ...], strength: int) -> str:
    try:
        n = smallest_runs(levels, strength)
    except HscaleError:
        return "use fewer factors or a lower strength"
    return f"the smallest N the bounds allow for {format_levels(levels)} is {n}"
