"""Choosing how to build an OA: :func:`candidates` lists the constructions that fit a
request, cheapest first, and maps each requested column to a column of the base array (as it
is, collapsed, or expanded into a small array's columns).

Nothing here is verified (``hscale.design._oa`` checks each array with ``check_strength``),
so a wrong candidate costs time, not correctness.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from math import isqrt, prod

import numpy as np

from hscale.design._algebraic import (
    _LINEAR_MAX_VECTORS,
    _algebraic_scheme,
    _bush,
    _hadamard,
    _linear,
    _linear_columns,
    _rao_hamming,
    addelman_kempthorne,
    from_difference_scheme,
    hadamard_oa,
)
from hscale.design._arrays import (
    _MAX_CELLS,
    _frozen,
    _positive,
    foldover,
    foldover_join,
    full_factorial,
    replicate,
)
from hscale.design._gf import MAX_ORDER
from hscale.design._numbers import factorize, prime_power
from hscale.design._search import SEARCH_STEPS, _searched_scheme, search_oa
from hscale.design._space import format_levels
from hscale.design._verify import is_orthogonal
from hscale.errors import HscaleError

# Difference-scheme searches inside constructions() stay within this many runs and steps
# (a count, never seconds: the same request gives the same array on any machine), and the
# foldover join's search for its first array within this many steps.
_DS_SEARCH_RUNS = 72
_DS_SEARCH_STEPS = 30_000
_JOIN_SEARCH_STEPS = 50_000

# A plan says where each requested column comes from: ("col", c), ("mod", c, d), ("sub", c, i).
Plan = list[tuple[int, ...]]


@lru_cache(maxsize=64)
def _small_oa(n_levels: int) -> np.ndarray | None:
    """An n_levels-run strength-2 array with many columns, to expand a column into."""
    parts = list(factorize(n_levels).items())
    if len(parts) == 1 and parts[0][1] == 1:
        return None
    blocks = [_rao_hamming(p, e) if e > 1 else np.arange(p)[:, None] for p, e in parts]
    index = full_factorial([len(b) for b in blocks])
    return _frozen(np.hstack([b[index[:, i]] for i, b in enumerate(blocks)]))


def _plan(base: Sequence[int], want: Sequence[int], strength: int
          ) -> tuple[Plan, dict[int, np.ndarray]] | None:
    """Map each wanted column to a base column, a collapsed one or an expansion's column."""
    free: dict[int, list[int]] = defaultdict(list)
    for c, s in enumerate(base):
        free[s].append(c)
    plan: list[tuple[int, ...] | None] = [None] * len(want)
    for pos, d in enumerate(want):
        if free[d]:
            plan[pos] = ("col", free[d].pop(0))
    expansions: dict[int, np.ndarray] = {}
    for c in sorted((c for cs in free.values() for c in cs), key=lambda c: base[c]):
        todo = [pos for pos, src in enumerate(plan) if src is None]
        if not todo:
            break
        sub = _small_oa(base[c]) if strength <= 2 else None
        matched = _match(sub, [want[pos] for pos in todo]) if sub is not None else []
        if len(matched) >= 2:
            expansions[c] = sub
            for (k, i) in matched:
                plan[todo[k]] = ("sub", c, i)
            continue
        fits = [pos for pos in todo if base[c] % want[pos] == 0]
        if fits:
            pos = max(fits, key=lambda pos: want[pos])
            plan[pos] = ("mod", c, want[pos])
    done = [src for src in plan if src is not None]
    return (done, expansions) if len(done) == len(want) else None


def _match(sub: np.ndarray, wanted: list[int]) -> list[tuple[int, int]]:
    """Pairs (index into wanted, sub-array column) with equal level counts."""
    pool: dict[int, list[int]] = defaultdict(list)
    for i in range(sub.shape[1]):
        pool[int(sub[:, i].max()) + 1].append(i)
    pairs = []
    for k, d in enumerate(wanted):
        if pool[d]:
            pairs.append((k, pool[d].pop(0)))
    return pairs


def _apply(array: np.ndarray, plan: Plan, expansions: dict[int, np.ndarray]
           ) -> tuple[np.ndarray, str]:
    """The planned columns and a suffix naming them ('' when the array is used as it is)."""
    out, tokens = [], []
    for src in plan:
        if src[0] == "col":
            out.append(array[:, src[1]])
            tokens.append(str(src[1]))
        elif src[0] == "mod":
            out.append(array[:, src[1]] % src[2])
            tokens.append(f"{src[1]}%{src[2]}")
        else:
            out.append(expansions[src[1]][array[:, src[1]], src[2]])
            tokens.append(f"{src[1]}/{src[2]}")
    if tokens == [str(c) for c in range(array.shape[1])]:
        suffix = ""
    else:
        suffix = f"[cols {','.join(tokens)}]"
        for c, sub in expansions.items():
            sub_levels = format_levels([int(v) + 1 for v in sub.max(axis=0)])
            suffix += f" (col {c} -> OA({len(sub)}; {sub_levels}))"
    return np.stack(out, axis=1), suffix


# A family member: name, its column level counts, and a function that builds it.
Family = tuple[str, tuple[int, ...], Callable[[], np.ndarray]]


def _prime_powers_of(runs: int, least_exponent: int) -> list[tuple[int, int]]:
    """(q, e) with q a prime power, q^e = runs and e >= least_exponent; smallest q first."""
    out = []
    for e in range(max(least_exponent, 1), runs.bit_length()):
        root = round(runs ** (1 / e))
        for q in (root - 1, root, root + 1):
            if q >= 2 and q**e == runs and prime_power(q) is not None:
                out.append((q, e))
    return sorted(out)


def _algebraic_families(strength: int, runs: int) -> Iterator[Family]:
    """Rao-Hamming, Bush, Addelman-Kempthorne and difference-scheme arrays with N = runs."""
    if strength <= 2:
        for q, n in _prime_powers_of(runs, 2):
            if q <= MAX_ORDER and runs * (runs - 1) // (q - 1) <= _MAX_CELLS:
                yield (f"rao_hamming(q={q},n={n})", (q,) * ((runs - 1) // (q - 1)),
                       lambda q=q, n=n: _rao_hamming(q, n))
    else:
        for q, t in _prime_powers_of(runs, strength):
            if q <= MAX_ORDER and (t <= q or (t == 3 and q % 2 == 0)):
                k = q + 2 if (t == 3 and q % 2 == 0) else q + 1
                yield f"bush(q={q},t={t})", (q,) * k, lambda q=q, t=t: _bush(q, t)
    if strength > 2:
        return
    hadamard = _hadamard(runs) if runs % 4 == 0 else None
    if hadamard is not None:
        yield hadamard[0], (2,) * (runs - 1), lambda: hadamard_oa(runs)
    q = round((runs / 2) ** 0.5)
    if 2 * q * q == runs and q % 2 and prime_power(q) is not None:
        yield (f"addelman_kempthorne(q={q})", (q,) * (2 * q + 1),
               lambda q=q: addelman_kempthorne(q))
    for s, r in _scheme_shapes(runs):
        if _algebraic_scheme(r, s) is not None:
            yield (f"from_difference_scheme(D({r},{r};{s}))", (r,) + (s,) * r,
                   lambda r=r, s=s: from_difference_scheme(_algebraic_scheme(r, s), s))


def _linear_families(levels: tuple[int, ...], strength: int, runs: int) -> Iterator[Family]:
    """Linear arrays for strength >= 3 and runs = q^n with every level count dividing q
    (collapsed columns keep strength): greedy caps and arcs, and for n = 4, t = 3, q > 2 an
    ovoid (q^2 + 1 columns, the most a linear array there has). n = t is left to Bush where it
    applies: its q + 1 (q + 2) columns are about all an arc in GF(q)^t can have (the MDS bound),
    more than the greedy finds. The greedy runs only when the generator gets this far."""
    if strength < 3:
        return
    for q, n in _prime_powers_of(runs, strength):
        bush_fits = strength <= q or (strength == 3 and q % 2 == 0)
        if (runs > _LINEAR_MAX_VECTORS or any(q % s for s in levels)
                or (n == strength and bush_fits)):
            continue
        k = len(_linear_columns(q, n, strength, 0))
        name = (f"ovoid(q={q})" if n == 4 and strength == 3 and q > 2
                else f"linear(q={q},n={n},t={strength})")
        yield (name, (q,) * k,
               lambda q=q, n=n: _linear(q, n, strength, 0))


def _scheme_shapes(runs: int) -> list[tuple[int, int]]:
    """(s, r) with s a prime power, r s = runs, s | r and r > s (r = s is Rao-Hamming)."""
    return [(s, runs // s) for s in range(2, isqrt(runs) + 1) if runs % (s * s) == 0
            and runs > s * s and prime_power(s) is not None]


@lru_cache(maxsize=1)
def _pydoe3_tables() -> tuple[tuple[str, np.ndarray], ...]:
    """pyDOE3's Taguchi tables shifted to levels 0..L-1 (some are not OAs: callers verify)."""
    try:
        from pyDOE3 import get_orthogonal_array, list_orthogonal_arrays
    except ImportError:
        return ()
    tables = []
    for name in list_orthogonal_arrays():
        arr = np.asarray(get_orthogonal_array(name), dtype=np.int64)
        tables.append((name, _frozen(arr - arr.min(axis=0))))
    return tuple(tables)


def _table_families(strength: int, runs: int) -> Iterator[Family]:
    if strength > 2:
        return
    for name, arr in _pydoe3_tables():
        if len(arr) == runs:
            yield (f"pyDOE3:{name}", tuple(int(v) + 1 for v in arr.max(axis=0)),
                   lambda arr=arr: arr)


def _searched_families(strength: int, runs: int) -> Iterator[Family]:
    if strength > 2 or runs > _DS_SEARCH_RUNS:
        return
    for s, r in _scheme_shapes(runs):
        if _algebraic_scheme(r, s) is None:
            found = _searched_scheme(r, r, s, None, _DS_SEARCH_STEPS)
            if found is not None:
                yield (f"from_difference_scheme(D({r},{r};{s}) by search)", (r,) + (s,) * r,
                       lambda found=found, s=s: from_difference_scheme(found, s))


def _direct(levels: tuple[int, ...], strength: int, runs: int,
            searched: bool) -> Iterator[tuple[str, np.ndarray]]:
    """Candidates with exactly ``runs`` runs, without replication or the OA search."""
    if prod(levels) == runs and runs * len(levels) <= _MAX_CELLS:
        yield f"full_factorial({format_levels(levels)})", full_factorial(levels)
    if strength == 1 and all(runs % s == 0 for s in levels):
        yield "cyclic", np.arange(runs)[:, None] % np.asarray(levels)[None, :]
    families = [_algebraic_families(strength, runs), _linear_families(levels, strength, runs),
                _table_families(strength, runs)]
    if searched:
        families.append(_searched_families(strength, runs))
    for family in families:
        for name, base, build in family:
            planned = _plan(base, levels, strength)
            if planned is not None:
                array, suffix = _apply(build(), *planned)
                yield name + suffix, array


def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n + 1) if n % d == 0]


def constructions(levels: Sequence[int], strength: int, runs: int, *,
                  search_steps: int = SEARCH_STEPS) -> Iterator[tuple[str, np.ndarray]]:
    """(method, array) pairs that may be OA(runs; levels; strength), cheapest first.

    Each array has ``runs`` rows and column j has ``levels[j]`` levels (base columns are
    selected, collapsed or expanded to match). Order: the algebraic arrays with N = runs
    (full factorial, Rao-Hamming or Bush, linear arrays for strength >= 3: caps and ovoids,
    Hadamard, Addelman-Kempthorne, difference schemes), pyDOE3's tables, searched difference
    schemes, lambda-multiples of all those, foldovers (two-level, strength 3), a foldover join
    (mixed levels with many two-level columns) and last the backtracking search, which gets
    ``search_steps`` steps (0 skips it). Nothing here is verified: the caller checks each array.
    """
    lv = tuple(_positive("a level count", s, 2) for s in levels)
    strength, runs = _positive("strength", strength), _positive("runs", runs)
    if not lv:
        raise HscaleError("no factors given", "give at least one level count")
    yield from _direct(lv, strength, runs, searched=True)
    for lam in _divisors(runs):
        for name, array in _direct(lv, strength, runs // lam, searched=False):
            yield f"replicate({name}, lam={lam})", replicate(array, lam)
    if strength == 3 and set(lv) == {2} and runs % 2 == 0:
        yield from _foldovers(lv, runs // 2)
    if strength == 2 and runs % 8 == 0 and 2 in lv and set(lv) != {2}:
        joined = _foldover_join_candidate(lv, runs // 2, search_steps)
        if joined is not None:
            yield joined
    if strength <= len(lv) and search_steps > 0:
        found = search_oa(lv, runs, strength, steps=search_steps)
        if found is not None:
            yield f"search_oa(steps={search_steps})", found


def _foldovers(levels: tuple[int, ...], half: int) -> Iterator[tuple[str, np.ndarray]]:
    """Strength-3 two-level arrays as foldovers of strength-2 arrays with half the runs."""
    if len(levels) >= 2:
        for name, array in _direct(levels[:-1], 2, half, searched=False):
            yield f"foldover({name}, extra_column=True)", foldover(array, extra_column=True)
    for name, array in _direct(levels, 2, half, searched=False):
        yield f"foldover({name})", foldover(array)


def _first_verified(levels: tuple[int, ...], runs: int, search_steps: int
                    ) -> tuple[str, np.ndarray] | None:
    """The first strength-2 candidate that verifies, with a short search as the last resort;
    a single factor is one balanced column."""
    if len(levels) == 1:
        ok = runs % levels[0] == 0
        return ("cyclic", np.arange(runs)[:, None] % levels[0]) if ok else None
    for name, array in _direct(levels, 2, runs, searched=False):
        if is_orthogonal(array, 2, levels):
            return name, array
    found = search_oa(levels, runs, 2, steps=search_steps) if search_steps > 0 else None
    return None if found is None else (f"search_oa(steps={search_steps})", found)


def _foldover_join_candidate(levels: tuple[int, ...], half: int, search_steps: int
                             ) -> tuple[str, np.ndarray] | None:
    """Mixed levels with many two-level columns, e.g. OA(24; 3^1 2^16) from OA(12; 3^1 2^4)
    and OA(12; 2^11): the two-level columns beyond the first array's come from the fold."""
    twos = levels.count(2) - 1
    m = min(twos, half - 1)
    base = tuple(s for s in levels if s != 2) + (2,) * (twos - m)
    if m < 1:
        return None
    first = _first_verified(base, half, min(search_steps, _JOIN_SEARCH_STEPS))
    second = _first_verified((2,) * m, half, 0)
    if first is None or second is None:
        return None
    array = foldover_join(first[1], second[1])
    planned = _plan(base + (2,) * (m + 1), levels, 2)
    if planned is None:
        return None
    reordered, suffix = _apply(array, *planned)
    return f"foldover_join({first[0]}, {second[0]})" + suffix, reordered
