"""Backtracking searches, the fallback where algebra has no construction: difference
schemes D(r, c; s) and OA(N; levels; t), filled one column at a time, and for levels
(L0, L, ..., L) a clique search over a pool of columns. They may not finish, so each runs
under a budget of steps (:mod:`hscale.design._search_budget`), never of seconds, and callers
try them last.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import combinations, islice
from math import prod

import numpy as np

from hscale.design._algebraic import _algebraic_scheme, _field_or_error
from hscale.design._arrays import _frozen, _positive
from hscale.design._errors import InfeasibleError
from hscale.design._gf import GF, field
from hscale.design._search_budget import OutOfSteps, StepBudget
from hscale.errors import HscaleError

# Default budgets, in steps (about 10 us each): a difference scheme, an OA search, and the
# OA search's first backtracking attempt (later ones double); and the largest pool of columns
# the clique search builds its q x q adjacency matrix for.
SCHEME_STEPS = 100_000
SEARCH_STEPS = 200_000
_FIRST_SLICE = 10_000
_POOL_LIMIT = 6000
# A node costs one step, plus one per this many cells that its pruning check reads; the
# pool's adjacency matrix one per this many multiply-adds.
_CELLS_PER_STEP = 1000
_MACS_PER_STEP = 100_000


class _Infeasible(Exception):
    """Tuple counts N / (product of levels) are not integers: no array exists."""


def _previous_same(columns: list[np.ndarray], runs: int) -> list[int]:
    """For each row, the last earlier row equal to it on ``columns`` (-1 if none)."""
    rows = np.stack(columns, axis=1) if columns else np.zeros((runs, 0), dtype=np.int64)
    last: dict[bytes, int] = {}
    prev = []
    for i, row in enumerate(rows):
        key = row.tobytes()
        prev.append(last.get(key, -1))
        last[key] = i
    return prev


def _column_solutions(keys: np.ndarray, caps: np.ndarray, prev: list[int], budget: StepBudget,
                      rng: np.random.Generator | None) -> Iterator[np.ndarray]:
    """Every canonical new column in which each bucket is filled exactly to its cap.

    ``keys[m, i, v]`` is the bucket that value v in row i fills for constraint m, and every
    bucket that occurs must end with ``caps[m]`` rows. Row 0 takes 0 (levels can be
    relabelled) and rows equal so far take non-decreasing values (they can be swapped), which
    loses no solution up to isomorphism. Before each row the search checks that the rows left
    can still reach every bucket's cap, which prunes most dead ends early. Every node spends
    from ``budget`` in proportion to the cells it reads, so a step costs about the same time
    on small and large problems.
    """
    n_cons, runs, n_levels = keys.shape
    budget.spend(1 + (keys.size + runs) // _CELLS_PER_STEP)
    width = int(keys.max()) + 1
    buckets = keys + (np.arange(n_cons) * width)[:, None, None]  # distinct ids over constraints
    target = np.zeros(n_cons * width, dtype=np.int64)
    target[buckets.ravel()] = np.repeat(caps, runs * n_levels)
    counts = np.zeros_like(target)
    col = np.zeros(runs, dtype=np.int64)
    order = np.arange(n_levels) if rng is None else rng.permutation(n_levels)
    options: list[list[int]] = [[] for _ in range(runs)]

    def enter(i: int) -> list[int]:
        rest = buckets[:, i:, :]
        budget.spend((rest.size + len(target)) // _CELLS_PER_STEP)
        ok = (counts[rest] < target[rest]).all(axis=0)
        if not ok.any(axis=1).all():
            return []
        reach = np.bincount(rest[:, ok].ravel(), minlength=len(target))
        if (counts + reach < target).any():
            return []
        low = col[prev[i]] if prev[i] >= 0 else 0
        high = 0 if i == 0 else n_levels - 1
        return [int(v) for v in order if low <= v <= high and ok[0, v]][::-1]

    i = 0
    options[0] = enter(0)
    while i >= 0:
        budget.spend()
        if not options[i]:
            i -= 1
            if i >= 0:
                counts[buckets[:, i, col[i]]] -= 1
            continue
        col[i] = options[i].pop()
        counts[buckets[:, i, col[i]]] += 1
        if i == runs - 1:
            yield col.copy()
            counts[buckets[:, i, col[i]]] -= 1
        else:
            i += 1
            options[i] = enter(i)


def _backtrack(n_columns: int, start: list[np.ndarray],
               solutions: Callable[[list[np.ndarray]], Iterator[np.ndarray]]
               ) -> list[np.ndarray] | None:
    """Add columns one at a time, going back a column whenever one has no completion."""
    cols = list(start)
    gens: list[Iterator[np.ndarray]] = []
    while len(cols) < n_columns:
        if len(gens) == len(cols) - len(start):
            gens.append(solutions(cols))
        col = next(gens[-1], None)
        if col is not None:
            cols.append(col)
            continue
        gens.pop()
        if len(cols) == len(start):
            return None
        cols.pop()
    return cols


# --- difference schemes -------------------------------------------------------------------


def _scheme_solutions(gf: GF, budget: StepBudget, rng: np.random.Generator | None
                      ) -> Callable[[list[np.ndarray]], Iterator[np.ndarray]]:
    def solutions(cols: list[np.ndarray]) -> Iterator[np.ndarray]:
        r = len(cols[0])
        values = np.arange(gf.q)
        keys = np.stack([gf.sub[values[None, :], c[:, None]] for c in cols])
        caps = np.full(len(cols), r // gf.q)
        return _column_solutions(keys, caps, _previous_same(cols, r), budget, rng)
    return solutions


@lru_cache(maxsize=128)
def _searched_scheme(r: int, c: int, s: int, seed: int | None,
                     steps: int) -> np.ndarray | None:
    gf = field(s)
    rng = None if seed is None else np.random.default_rng(seed)
    solutions = _scheme_solutions(gf, StepBudget(steps), rng)
    try:
        cols = _backtrack(c, [np.zeros(r, dtype=np.int64)], solutions)
    except OutOfSteps:
        return None
    return None if cols is None else _frozen(np.stack(cols, axis=1))


def difference_scheme(r: int, c: int, s: int, seed: int | None = None,
                      steps: int = SCHEME_STEPS) -> np.ndarray | None:
    """A difference scheme D(r, c; s): an r x c array over GF(s) in which the difference of
    any two columns holds every element r/s times; None if the search runs out of ``steps``
    (a count, so the answer is the same on any machine).

    Algebra covers r = s (the multiplication table), r = 2s for odd s (Addelman-Kempthorne)
    and their products; other cases are searched with the first row and column normalised
    to 0 (adding constants to rows or columns keeps the property). ``seed`` shuffles the
    order in which the search tries values.
    """
    r, c = _positive("r", r), _positive("c", c)
    steps = _positive("steps", steps, 0)
    _field_or_error(s)
    if r % s:
        raise HscaleError(f"a difference scheme D({r}, {c}; {s}) needs r divisible by s",
                          f"use r a multiple of {s}")
    if c > r:
        raise InfeasibleError(f"no difference scheme D({r}, {c}; {s}) exists: c > r",
                              f"use at most {r} columns")
    known = _algebraic_scheme(r, s)
    if known is not None:
        return known[:, :c].copy()
    found = _searched_scheme(r, c, s, seed, steps)
    return None if found is None else found.copy()


# --- orthogonal arrays --------------------------------------------------------------------


def _oa_solutions(levels: list[int], runs: int, strength: int, budget: StepBudget,
                  rng: np.random.Generator | None
                  ) -> Callable[[list[np.ndarray]], Iterator[np.ndarray]]:
    def solutions(cols: list[np.ndarray]) -> Iterator[np.ndarray]:
        j = len(cols)
        size = levels[j]
        keys, caps = [], []
        for subset in combinations(range(j), min(strength - 1, j)):
            code = np.zeros(runs, dtype=np.int64)
            for c in subset:
                code = code * levels[c] + cols[c]
            cells = prod(levels[c] for c in subset) * size
            if runs % cells:
                raise _Infeasible
            keys.append(code[:, None] * size + np.arange(size)[None, :])
            caps.append(runs // cells)
        return _column_solutions(np.stack(keys), np.asarray(caps), _previous_same(cols, runs),
                                 budget, rng)
    return solutions


def _pool(first: np.ndarray, n_levels: int, limit: int, budget: StepBudget) -> np.ndarray | None:
    """Every n_levels column orthogonal to ``first`` with row 0 at 0; None if over ``limit``."""
    runs = len(first)
    keys = (first[:, None] * n_levels + np.arange(n_levels)[None, :])[None]
    caps = np.asarray([runs // (int(first.max() + 1) * n_levels)])
    gen = _column_solutions(keys, caps, [-1] * runs, budget, None)
    cols = list(islice(gen, limit + 1))
    return np.asarray(cols) if len(cols) <= limit else None


def _orthogonal_pairs(pool: np.ndarray, n_levels: int) -> np.ndarray:
    """adj[u, v]: pool columns u and v meet every level pair runs / L^2 times."""
    runs = pool.shape[1]
    onehot = [(pool == a).astype(np.float32) for a in range(n_levels)]
    adj = np.ones((len(pool), len(pool)), dtype=bool)
    for a in range(n_levels):
        for b in range(n_levels):
            adj &= (onehot[a] @ onehot[b].T) == runs // n_levels**2
    np.fill_diagonal(adj, False)
    return adj


def _clique(adj: np.ndarray, size: int, budget: StepBudget) -> list[int] | None:
    """``size`` pairwise adjacent vertices (bitset branch and bound), or None if none exist."""
    packed = np.packbits(adj, axis=1, bitorder="little")
    neighbours = [int.from_bytes(row.tobytes(), "little") for row in packed]

    def grow(cand: int, chosen: list[int]) -> list[int] | None:
        if len(chosen) == size:
            return chosen
        while cand.bit_count() >= size - len(chosen):
            budget.spend()
            v = cand.bit_length() - 1
            cand ^= 1 << v
            found = grow(cand & neighbours[v], chosen + [v])
            if found:
                return found
        return None

    return grow((1 << len(neighbours)) - 1, [])


def _pool_search(levels: list[int], runs: int, budget: StepBudget,
                 rng: np.random.Generator) -> list[np.ndarray] | None:
    """Strength 2 with levels (L0, L, ..., L): fix the first column, then pick k - 1 columns
    from the pool of all columns orthogonal to it as a clique of mutually orthogonal ones.
    Column-by-column search stalls on such cases (most partial arrays do not extend)."""
    first = np.repeat(np.arange(levels[0]), runs // levels[0])
    pool = _pool(first, levels[1], _POOL_LIMIT, budget)
    if pool is None:
        raise OutOfSteps
    budget.spend(len(pool) ** 2 * levels[1] ** 2 * runs // _MACS_PER_STEP)
    pool = pool[rng.permutation(len(pool))]
    chosen = _clique(_orthogonal_pairs(pool, levels[1]), len(levels) - 1, budget)
    return None if chosen is None else [first] + [pool[v] for v in chosen]


def _search(levels: list[int], runs: int, strength: int, steps: int,
            seed: int | None) -> list[np.ndarray] | None:
    """Column backtracking restarted with new value orders in doubling slices of the steps,
    and the pool search when it applies. None when a complete search proves there is no
    array."""
    total = StepBudget(steps)
    rngs = np.random.default_rng(seed if seed is not None else 0).spawn(64)
    pooled = strength == 2 and len(levels) >= 3 and len(set(levels[1:])) == 1
    for attempt, rng in enumerate(rngs):
        if total.left <= 0:
            break
        try:
            if pooled and attempt == 1:
                return _pool_search(levels, runs, total.share(total.left // 2), rng)
            order = None if attempt == 0 and seed is None else rng
            budget = total.share(_FIRST_SLICE * 2**attempt)
            solutions = _oa_solutions(levels, runs, strength, budget, order)
            return _backtrack(len(levels), [], solutions)
        except OutOfSteps:
            continue
        except _Infeasible:
            return None
    return None


def search_oa(levels: Sequence[int], runs: int, strength: int = 2, seed: int | None = None,
              steps: int = SEARCH_STEPS) -> np.ndarray | None:
    """An OA(runs; levels; strength) by backtracking, or None when none is found within
    ``steps`` (a count, so the answer is the same on any machine at any load).

    Columns are added one at a time (most levels first); each is filled row by row so that
    its tuple counts with earlier columns never exceed N / (product of levels), which makes
    them exact once the column is full. A column with no completion sends the search back.
    Levels (L0, L, ..., L) also get a clique search over all columns orthogonal to the first.
    ``seed`` picks the value orders of the restarts.
    """
    lv = [_positive("a level count", s, 2) for s in levels]
    runs, strength = _positive("runs", runs), _positive("strength", strength)
    steps = _positive("steps", steps, 0)
    if not lv or strength > len(lv):
        raise HscaleError(f"strength {strength} needs at least {strength} factors")
    order = sorted(range(len(lv)), key=lambda j: -lv[j])
    cols = _search([lv[j] for j in order], runs, strength, steps, seed)
    if cols is None:
        return None
    out = np.empty((runs, len(lv)), dtype=np.int64)
    out[:, order] = np.stack(cols, axis=1)
    return out
