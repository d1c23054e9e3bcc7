"""``orthogonal_array``: pick a construction for the request and return only verified arrays."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from hscale.design._bounds import _check, divisor, feasibility, smallest_runs
from hscale.design._design import Design
from hscale.design._errors import InfeasibleError, NotConstructedError
from hscale.design._numbers import shown
from hscale.design._planning import constructions
from hscale.design._product import product_candidate
from hscale.design._search import SEARCH_STEPS, search_oa
from hscale.design._space import FactorSpace, format_levels, parse_levels
from hscale.design._verify import MAX_CHECK_WORK, check_strength, check_work, is_orthogonal
from hscale.errors import HscaleError

# Largest array (runs x factors) hscale builds: beyond this a request is almost surely a typo.
# Every candidate is checked, so a request whose check costs over MAX_CHECK_WORK is refused too.
_MAX_CELLS = 50_000_000
# How far past the smallest feasible N to look when the caller gives no N.
_RUN_SEARCH_MULTIPLES = 64
# Without N, the first _AUTO_SEARCHES candidate N that no construction builds get a search of
# _AUTO_SEARCH_STEPS steps each; larger N get the constructions only. Steps, not seconds, so
# the same request gives the same N and array on any machine at any load.
_AUTO_SEARCH_STEPS = 10_000
_AUTO_SEARCHES = 10


def orthogonal_array(levels: str | Sequence[int], strength: int = 2, runs: int | None = None,
                     lam: int | None = None, seed: int | None = None,
                     space: FactorSpace | None = None) -> Design:
    """An orthogonal array OA(N; levels; strength), verified before it is returned.

    ``runs`` fixes N; ``lam`` asks for N = lam * (the least N the divisibility condition
    allows, s^t for pure s levels); neither picks the smallest N hscale can build. ``seed``
    shuffles rows and permutes levels within columns (an isomorphic array), reproducibly.
    Raises :class:`InfeasibleError` with the bound's reason when no such array can exist, and
    :class:`NotConstructedError` when none of the constructions produced one. The answer
    depends on the arguments only, never on the machine or its load.
    """
    lv = _check(parse_levels(levels), strength)
    if space is not None and space.levels != lv:
        raise HscaleError(f"space {space.name} has levels {format_levels(space.levels)}, "
                          f"the request {format_levels(lv)}")
    if runs is not None and lam is not None:
        raise HscaleError("give either runs or lam, not both", "drop --lam or --runs")
    if lam is not None:
        if lam < 1:
            raise HscaleError(f"lam must be a positive integer, got {shown(lam)}")
        runs = lam * divisor(lv, strength)
    if runs is not None:
        _check_size(lv, strength, runs)
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
        found = _smallest(lv, strength)
    method, array = found
    if seed is not None:
        array = _shuffle(array, lv, np.random.default_rng(seed))
        method += f" shuffled(seed={seed})"
        report = check_strength(array, strength, lv)
        if not report.ok:  # only reachable if _shuffle were wrong: never return unverified
            raise RuntimeError(f"internal error: {method} failed verification: "
                               f"{report.summary()}")
    return Design(array, space or FactorSpace.from_levels(lv), method=method, strength=strength)


def _check_size(levels: tuple[int, ...], strength: int, runs: int) -> None:
    """Refuse an array too large to build and check, before any work."""
    name = f"OA({shown(runs)}; {format_levels(levels)})"
    if runs * len(levels) > _MAX_CELLS:
        raise HscaleError(f"{name} would hold {shown(runs * len(levels))} entries, more than "
                          f"hscale builds ({_MAX_CELLS})", "ask for fewer runs or factors")
    if check_work(levels, strength, runs) > MAX_CHECK_WORK:
        raise HscaleError(f"checking {name} for strength {strength} would take "
                          f"{shown(check_work(levels, strength, runs))} multiply-adds, more "
                          f"than hscale spends ({shown(MAX_CHECK_WORK)})",
                          "ask for fewer factors, fewer levels or a lower strength")


def _smallest(levels: tuple[int, ...], strength: int) -> tuple[str, np.ndarray]:
    """The smallest N that the constructions (or a short search) build, and its array."""
    start = smallest_runs(levels, strength)
    _check_size(levels, strength, start)
    step = divisor(levels, strength)
    searches = _AUTO_SEARCHES
    for n in range(start, start + _RUN_SEARCH_MULTIPLES * step, step):
        if (n * len(levels) > _MAX_CELLS
                or check_work(levels, strength, n) > MAX_CHECK_WORK):
            break
        if feasibility(levels, strength, n).ok:
            found = _build(levels, strength, n, _AUTO_SEARCH_STEPS if searches else 0)
            if found is not None:
                return found
            searches = max(0, searches - 1)
    raise NotConstructedError(
        f"no construction in hscale produced an OA({format_levels(levels)}) of strength "
        f"{strength} with up to {start + (_RUN_SEARCH_MULTIPLES - 1) * step} runs",
        "give --runs explicitly, or use fewer factors")


def _build(levels: tuple[int, ...], strength: int, runs: int, search_steps: int = SEARCH_STEPS
           ) -> tuple[str, np.ndarray] | None:
    """The first candidate that verifies: algebra first, then products, then the search."""
    for method, array in constructions(levels, strength, runs, search_steps=0):
        arr = np.asarray(array, dtype=np.int64)
        if arr.shape == (runs, len(levels)) and is_orthogonal(arr, strength, levels):
            return method, arr
    crossed = product_candidate(levels, strength, runs, _part)
    if crossed is not None and is_orthogonal(crossed[1], strength, levels):
        return crossed
    if search_steps > 0 and strength <= len(levels):
        found = search_oa(levels, runs, strength, steps=search_steps)
        if found is not None and is_orthogonal(found, strength, levels):
            return f"search_oa(steps={search_steps})", np.asarray(found, dtype=np.int64)
    return None


def _part(levels: Sequence[int], strength: int) -> Design:
    """One prime's factor of a product array; cached, as each candidate N asks again."""
    found = _cached_part(tuple(levels), strength)
    if isinstance(found, HscaleError):
        raise found
    return found


@lru_cache(maxsize=256)
def _cached_part(levels: tuple[int, ...], strength: int) -> Design | HscaleError:
    try:
        return orthogonal_array(levels, strength)
    except HscaleError as exc:
        return exc


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


# Enumerating every non-isomorphic array is quick up to this size (runs, factors).
ENUMERATE_UP_TO = (18, 5)


def best_orthogonal_array(levels: str | Sequence[int], strength: int = 2,
                          runs: int | None = None, lam: int | None = None,
                          seed: int | None = None, space: FactorSpace | None = None):
    """:func:`orthogonal_array`'s array, replaced by the best-ranked class by GWLP (the first
    of :func:`candidates`, what ``hscale design paper`` and the structured recipe use) where
    every class is quick to enumerate; its ``method`` says which it is. ``seed`` shuffles
    rows and levels as :func:`orthogonal_array` does (an isomorphic array, the same GWLP)."""
    from hscale.design._choose import candidates

    design = orthogonal_array(levels, strength, runs=runs, lam=lam, seed=seed, space=space)
    if strength != 2 or design.runs > ENUMERATE_UP_TO[0] \
            or design.space.n_factors > ENUMERATE_UP_TO[1]:
        return design
    ranked = candidates(design.space.levels, design.runs, strength)
    best = np.asarray(ranked[0].array)
    method = (f"{ranked[0].id}, the best by GWLP of {len(ranked)} non-isomorphic "
              f"class{'es' if len(ranked) > 1 else ''} (hscale design candidates lists them)")
    if seed is not None:
        best = _shuffle(best, design.space.levels, np.random.default_rng(seed))
        method += f" shuffled(seed={seed})"
    return Design(best, design.space, method=method, strength=strength)
