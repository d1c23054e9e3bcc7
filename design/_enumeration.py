"""Complete enumeration of small orthogonal arrays: one array per isomorphism class.

Two engines extend arrays column by column from the repeated full factorial that starts any
strength-t OA. OApackage's (C++, canonical LMC extension: a new array is kept only when it
is the minimal form of its class) is the default where it is installed; hscale's own
(a column search plus :func:`hscale.design._isomorphism.canonical_form` per new array, pure numpy)
is the fallback and the cross-check. Both give the same classes; hscale checks every array
OApackage returns, and ``hscale.design._choose.candidates`` checks the classes' canonical forms.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from itertools import combinations, product
from math import prod

import numpy as np

from hscale.design._bounds import feasibility
from hscale.design._isomorphism import _Classes, _sort_rows
from hscale.design._numbers import shown
from hscale.design._search_budget import OutOfSteps, StepBudget
from hscale.design._space import format_levels, parse_levels
from hscale.design._verify import is_orthogonal
from hscale.errors import HscaleError

Progress = Callable[[str, int, int], None]

# Work limit of one enumeration, in steps (about 10 us each; a count, so the same request
# fails or succeeds on any machine). The enumeration also refuses, before any work, more runs
# or runs x factors than these: the number of classes explodes past them (OA(24; 2^7) has
# 57,389, OA(27; 3^5) 187,188).
ENUMERATION_STEPS = 1_000_000
MAX_ENUMERATION_RUNS = 27
MAX_ENUMERATION_CELLS = 200
# Most levels of one factor: both engines try every relabelling of a column's levels (9! is
# 362,880: OApackage then takes seconds per array; hscale's tables outgrow memory at 12).
MAX_ENUMERATION_LEVELS = 8
ENGINES = ("auto", "oapackage", "hscale")
# OApackage's engine: steps per representative extended and per class found (about 1 ms each
# in its C++, so the default budget is some ten thousand classes); once a column has extended
# this many representatives, a budget its class count extrapolates past stops it at once.
_OAP_PARENT_STEPS = 20
_OAP_CLASS_STEPS = 100
_PROJECTION_SAMPLE = 8
# hscale's engine: an extension node costs one step per this many count slots it tests (its
# canonical forms cost what hscale.design._isomorphism says).
_SLOTS_PER_STEP = 50


def _extension_columns(prev: np.ndarray, prev_levels: Sequence[int], size: int,
                       strength: int, budget: StepBudget) -> list[np.ndarray]:
    """Every new column (up to the symmetries below) that keeps ``prev`` of strength t.

    Each (t-1)-subset of the previous columns with the new column must hold every level
    combination exactly cap = N / (L_1 ... L_t) times; the DFS over rows keeps every count at
    most cap, which with the fixed totals forces equality. Symmetry breaking: rows equal in all
    previous columns (adjacent, as ``prev`` is sorted) get non-decreasing values, and levels
    first appear in the order 0, 1, 2, ... (level permutations are isomorphisms).
    """
    n, k = prev.shape
    subsets = list(combinations(range(k), strength - 1))
    slots: list[list[int]] = [[] for _ in range(n)]  # flat count index of row r, per subset
    caps: list[int] = []
    offset = 0
    for sub in subsets:
        cells = prod(prev_levels[c] for c in sub)
        if n % (cells * size):
            return []
        caps.append(n // (cells * size))
        code = np.zeros(n, dtype=np.int64)
        for c in sub:
            code = code * prev_levels[c] + prev[:, c]
        for r in range(n):
            slots[r].append(offset + int(code[r]) * size)
        offset += cells * size
    counts = [0] * offset
    node_cost = 1 + size * len(subsets) // _SLOTS_PER_STEP
    same = [r > 0 and bool((prev[r] == prev[r - 1]).all()) for r in range(n)]
    column = [0] * n
    found: list[np.ndarray] = []

    def dfs(r: int, top: int) -> None:
        budget.spend(node_cost)
        if r == n:
            found.append(np.array(column, dtype=np.int64))
            return
        lo = column[r - 1] if same[r] else 0
        for v in range(lo, min(size - 1, top + 1) + 1):
            idx = [s + v for s in slots[r]]
            if any(counts[i] >= cap for i, cap in zip(idx, caps, strict=True)):
                continue
            for i in idx:
                counts[i] += 1
            column[r] = v
            dfs(r + 1, max(top, v))
            for i in idx:
                counts[i] -= 1

    dfs(0, -1)
    return found


def _root(levels: Sequence[int], runs: int) -> np.ndarray | None:
    """The full factorial on ``levels`` repeated to ``runs`` rows: every OA's first t columns."""
    cells = prod(levels)
    if runs % cells:
        return None
    full = np.array(list(product(*(range(s) for s in levels))), dtype=np.int64)
    return np.repeat(full, runs // cells, axis=0)


def oapackage_available() -> bool:
    """True when OApackage (the C++ enumerator ``engine="oapackage"`` drives) imports."""
    try:
        import oapackage  # noqa: F401
    except ImportError:
        return False
    return True


def _engine(engine: str, strength: int) -> str:
    """The engine ``engine`` names: "auto" is OApackage where it is installed and the strength
    is 2 or more (OApackage crashes on some strength-1 requests), else hscale."""
    if engine not in ENGINES:
        raise HscaleError(f"unknown enumeration engine {engine!r}",
                          f"use one of {', '.join(ENGINES)}")
    if engine == "hscale":
        return engine
    if engine == "oapackage" and strength < 2:
        raise HscaleError("the oapackage engine enumerates strength 2 or more, got strength 1",
                          "use engine='hscale' or 'auto'")
    if strength >= 2 and oapackage_available():
        return "oapackage"
    if engine == "oapackage":
        raise HscaleError("the oapackage engine needs OApackage, which is not installed",
                          "pip install oapackage, or use engine='hscale'")
    return "hscale"


def enumeration_refusal(levels: Sequence[int] | str, runs: int) -> HscaleError | None:
    """The error that refuses enumerating every OA(runs; levels) before any work, or None.

    One rule for every caller (``enumerate_oas``, ``hscale.design._choose.candidates`` and
    ``hscale design candidates``): at most MAX_ENUMERATION_RUNS runs, MAX_ENUMERATION_CELLS
    runs x factors (past them the classes explode) and MAX_ENUMERATION_LEVELS levels a factor.
    """
    lv = parse_levels(levels)
    if (runs <= MAX_ENUMERATION_RUNS and runs * len(lv) <= MAX_ENUMERATION_CELLS
            and max(lv) <= MAX_ENUMERATION_LEVELS):
        return None
    return HscaleError(f"enumerating every OA({shown(runs)}; {format_levels(lv)}) is beyond "
                       f"hscale's enumerator (up to {MAX_ENUMERATION_RUNS} runs, "
                       f"{MAX_ENUMERATION_CELLS} runs x factors and {MAX_ENUMERATION_LEVELS} "
                       "levels a factor)",
                       "use hscale design oa (one array), or fewer runs, factors or levels")


def enumerate_oas(levels: Sequence[int] | str, runs: int, strength: int = 2,
                  progress: Progress | None = None, steps: int = ENUMERATION_STEPS,
                  engine: str = "auto") -> list[np.ndarray]:
    """All non-isomorphic OA(runs; levels) of the given strength, one array per class.

    Columns are extended one at a time, larger level counts first: the first t columns of
    any strength-t OA are a repeated full factorial (unique up to isomorphism), and every
    class of k + 1 columns extends a representative of its first k columns, so extending
    each representative with every admissible column and keeping one array per class is
    complete. ``engine="oapackage"`` runs OApackage's canonical (LMC) extension in C++, which
    keeps a new array only when it is the minimal form of its class; ``engine="hscale"``
    runs hscale's own column search and canonical forms; ``"auto"`` is OApackage where it
    is installed, hscale for strength 1. Both give the same classes. Each array comes back
    with its columns in the order of ``levels`` and its rows sorted, in an order fixed by
    the engine, and hscale checks every array OApackage returns for strength ``strength``
    (:func:`hscale.design._verify.is_orthogonal`).

    ``progress(stage, done, total)`` is called after each representative is extended. An
    infeasible request (a bound excludes it) answers [] whatever its size; otherwise one
    past MAX_ENUMERATION_RUNS runs, MAX_ENUMERATION_CELLS runs x factors or
    MAX_ENUMERATION_LEVELS levels a factor is refused at once (:func:`enumeration_refusal`,
    the CLI's rule), and an enumeration whose work passes ``steps`` (or, extrapolated from
    a column's first representatives, would) stops with an HscaleError: a count, so the
    same request fails or succeeds on any machine.
    """
    lv = parse_levels(levels)
    if not isinstance(strength, int | np.integer) or not 1 <= strength <= len(lv):
        raise HscaleError(f"strength must be 1..{len(lv)} for {len(lv)} factors, got {strength}",
                          "use a strength between 1 and the number of factors")
    if not isinstance(runs, int | np.integer) or runs < 1:
        raise HscaleError(f"runs must be a positive integer, got {runs!r}")
    runs, strength = int(runs), int(strength)
    use = _engine(engine, strength)
    if not feasibility(lv, strength, runs).ok:
        return []
    refusal = enumeration_refusal(lv, runs)
    if refusal is not None:
        raise refusal
    # larger level counts first (OApackage's order): columns go back to ``levels``' order last
    order = np.argsort([-s for s in lv], kind="stable")
    ordered = tuple(lv[i] for i in order)
    if _root(ordered[:strength], runs) is None:
        return []
    budget = StepBudget(steps)
    run = _enumerate_oapackage if use == "oapackage" else _enumerate
    try:
        reps = run(ordered, runs, strength, progress, budget)
    except OutOfSteps:
        raise HscaleError(f"enumerating every OA({runs}; {format_levels(lv)}) of strength "
                          f"{strength} takes more than {steps} steps of hscale's enumerator "
                          "(too many classes along the way)",
                          "use hscale design oa (one array), or fewer runs or factors") from None
    out = []
    for rep in reps:
        arr = np.empty_like(rep)
        arr[:, order] = rep
        out.append(_sort_rows(arr))
    if use == "oapackage":
        _check_engine_output(out, lv, strength)
    return out


def _check_engine_output(arrays: list[np.ndarray], lv: tuple[int, ...], t: int) -> None:
    """hscale's own check of what OApackage returned: distinct strength-t arrays of the shape.

    Pairwise non-isomorphism is checked where hscale computes canonical forms anyway
    (``hscale.design._choose.candidates``) and, against hscale's own enumerator, by the tests.
    """
    seen: set[bytes] = set()
    for arr in arrays:
        if arr.shape[1] != len(lv) or not is_orthogonal(arr, t, lv):
            raise RuntimeError(f"OApackage returned an array that is not an OA of strength {t} "
                               f"on {format_levels(lv)}: a bug; engine='hscale' avoids it")
        seen.add(arr.tobytes())
    if len(seen) != len(arrays):
        raise RuntimeError("OApackage returned the same array twice: a bug; engine='hscale' "
                           "avoids it")


def _enumerate_oapackage(lv: tuple[int, ...], runs: int, t: int, progress: Progress | None,
                         budget: StepBudget) -> list[np.ndarray]:
    """OApackage's LMC extension of the root, column by column (levels non-increasing)."""
    import oapackage

    k = len(lv)
    with warnings.catch_warnings():  # its notes on level order and bounds: both checked here
        warnings.simplefilter("ignore")
        spec = oapackage.arraydata_t(list(lv), runs, t, k)
        options = oapackage.OAextend(spec)
        reps = [spec.create_root()]
        for col in range(t, k):
            found = oapackage.arraylist_t()
            stage = f"column {col + 1} of {k}"
            for done, rep in enumerate(reps, 1):
                budget.spend(_OAP_PARENT_STEPS)
                before = len(found)
                oapackage.extend_array(rep, spec, col, found, options)
                budget.spend(_OAP_CLASS_STEPS * (len(found) - before))
                left = len(reps) - done
                if done >= _PROJECTION_SAMPLE and left and budget.left < left * (
                        _OAP_PARENT_STEPS + _OAP_CLASS_STEPS * len(found) / done):
                    raise OutOfSteps  # this column's classes, extrapolated, pass the budget
                if progress is not None:
                    progress(stage, done, len(reps))
            reps = list(found)
            if not reps:
                return []
    return [np.array(r, dtype=np.int64) for r in reps]


def _enumerate(lv: tuple[int, ...], runs: int, t: int, progress: Progress | None,
               budget: StepBudget) -> list[np.ndarray]:
    """hscale's own enumerator: column search plus canonical forms, in pure numpy."""
    root = _root(lv[:t], runs)
    if root is None:
        return []
    reps = [root]
    for k in range(t, len(lv)):
        classes = _Classes(budget)
        stage = f"column {k + 1} of {len(lv)}"
        for done, rep in enumerate(reps):
            prev = _sort_rows(rep)
            for col in _extension_columns(prev, lv[:k], lv[k], t, budget):
                classes.add(np.column_stack([prev, col]), lv[:k + 1])
            if progress is not None:
                progress(stage, done + 1, len(reps))
        reps = classes.reps
        if not reps:
            return []
    return [_sort_rows(r) for r in reps]
