"""Constructions of orthogonal arrays: algebra first, small searches as the fallback.

Every function returns an int64 array with one row per run and levels 0..L-1 per column.
:func:`candidates` lists the constructions that fit a request, cheapest first; it does not
verify them (``design.oa`` does, with ``check_strength``), so a wrong candidate costs time,
not correctness. Algebraic arrays are cached read-only; the public functions return copies.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import combinations, islice
from math import isqrt, prod

import numpy as np

from design.errors import InfeasibleError
from design.gf import GF, MAX_ORDER, field, prime_power
from design.space import format_levels
from design.verify import as_array, is_orthogonal
from hscale.errors import HscaleError

# Full factorials and searches beyond these sizes are not what this module is for.
_MAX_CELLS = 10_000_000
# Difference-scheme searches inside candidates() stay within this many runs and seconds.
_DS_SEARCH_RUNS = 72
_DS_SEARCH_SECONDS = 0.3
# The OA search: the first backtracking attempt's time slice (later ones double) and the
# largest pool of columns the clique search builds its q x q adjacency matrix for.
_FIRST_SLICE = 0.1
_POOL_LIMIT = 6000


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array, dtype=np.int64)
    array.setflags(write=False)
    return array


def _positive(name: str, value: int, least: int = 1) -> int:
    if not isinstance(value, int | np.integer) or value < least:
        raise HscaleError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


# --- algebraic constructions -------------------------------------------------------------


def full_factorial(levels: Sequence[int]) -> np.ndarray:
    """All level combinations, first column slowest: the OA of strength k with lambda 1."""
    lv = tuple(_positive("a level count", s, 2) for s in levels)
    if not lv:
        raise HscaleError("a full factorial needs at least one factor")
    if prod(lv) * len(lv) > _MAX_CELLS:
        raise HscaleError(f"the full factorial of {format_levels(lv)} has {prod(lv)} runs",
                          "use a fractional design (an orthogonal array) instead")
    return np.indices(lv).reshape(len(lv), -1).T.astype(np.int64)


def _field_or_error(q: int) -> GF:
    _positive("q", q, 2)
    return field(int(q))


def projective_points(q: int, n: int) -> np.ndarray:
    """One vector per point of PG(n-1, q): the nonzero vectors whose first nonzero entry is 1."""
    vectors = full_factorial((q,) * n)[1:]
    first = vectors[np.arange(len(vectors)), np.argmax(vectors != 0, axis=1)]
    return vectors[first == 1]


@lru_cache(maxsize=128)
def _rao_hamming(q: int, n: int) -> np.ndarray:
    gf = _field_or_error(q)
    return _frozen(gf.dot(full_factorial((q,) * n), projective_points(q, n)))


def rao_hamming(q: int, n: int) -> np.ndarray:
    """OA(q^n, (q^n-1)/(q-1), q, 2): rows are all x in GF(q)^n, column v holds <x, v>.

    Any two projective points are independent, so each pair of columns is a full q x q
    factorial repeated q^(n-2) times.
    """
    _field_or_error(q)
    _positive("n", n, 2)
    if q**n * (q**n - 1) // (q - 1) > _MAX_CELLS:
        raise HscaleError(f"rao_hamming(q={q}, n={n}) would have {q**n} runs", "use a smaller n")
    return _rao_hamming(int(q), int(n)).copy()


def _bush_columns(gf: GF, t: int) -> np.ndarray:
    """(1, e, ..., e^(t-1)) for each element e, the point at infinity, and for even q, t = 3,
    the conic's nucleus (0, 1, 0): in characteristic 2 those q + 2 points form a hyperoval."""
    cols = [[gf.power(e, i) for i in range(t)] for e in range(gf.q)]
    cols.append([0] * (t - 1) + [1])
    if gf.p == 2 and t == 3:
        cols.append([0, 1, 0])
    return np.asarray(cols, dtype=np.int64)


@lru_cache(maxsize=128)
def _bush(q: int, t: int) -> np.ndarray:
    gf = _field_or_error(q)
    return _frozen(gf.dot(full_factorial((q,) * t), _bush_columns(gf, t)))


def bush(q: int, t: int) -> np.ndarray:
    """OA(q^t, q+1, q, t) for 2 <= t <= q; q + 2 columns when q is even and t = 3.

    Rows are the polynomials of degree < t (coefficient vectors); column e evaluates them at
    the field element e and the last column reads the leading coefficient. Any t columns are
    a nonsingular (Vandermonde-like) linear map of the coefficients, hence strength t.
    """
    _positive("t", t, 2)
    gf = _field_or_error(q)
    if t > q and not (gf.p == 2 and t == 3):
        raise HscaleError(f"bush(q={q}, t={t}) needs t <= q (or t = 3 with q even)",
                          f"use t between 2 and {q}, or a larger field")
    if q**t > _MAX_CELLS:
        raise HscaleError(f"bush(q={q}, t={t}) would have {q**t} runs", "use a smaller t")
    return _bush(int(q), int(t)).copy()


# Linear arrays are searched for in GF(q)^n up to this size (the span marks are t boolean
# arrays of q^n entries, and a greedy pass scans them once per chosen column).
_LINEAR_MAX_VECTORS = 1 << 16
# Greedy passes per column set: the fixed order first, then shuffles of it. On arcs and caps
# the shuffles gain up to half again (q = 8, n = t = 3: 6 points in order, a hyperoval of 10).
# Each pass costs about q^n, so larger spaces get fewer (one at _LINEAR_MAX_VECTORS).
_LINEAR_PASSES = 16


def _digits(codes: np.ndarray, q: int, n: int) -> np.ndarray:
    """The vectors of GF(q)^n with these codes (code = sum x_i q^(n-1-i), full-factorial order)."""
    return (np.asarray(codes, dtype=np.int64)[:, None] // q ** np.arange(n - 1, -1, -1)) % q


def _greedy_columns(gf: GF, n: int, t: int, points: np.ndarray, cap: int) -> list[int]:
    """Codes of projective points taken in ``points`` order when no t-1 taken ones span them.

    ``spans[j]`` marks every vector in the span of at most j taken points; it is a union of
    subspaces, so a point is blocked exactly when its normalised code is marked in row t-1.
    Taking v adds (span of j-1) + c v for c != 0 to row j, from the top row down so that each
    row grows from the one below as it was before v. Any t taken points are then independent:
    the last one taken was outside the span of the other t-1.
    """
    q = gf.q
    weights = q ** np.arange(n - 1, -1, -1)
    spans = np.zeros((t, q**n), dtype=bool)
    spans[:, 0] = True
    scalars = np.arange(1, q)
    chosen: list[int] = []
    pos = 0
    while len(chosen) < cap:
        free = ~spans[t - 1, points[pos:]]
        if not free.any():
            break
        pos += int(free.argmax())
        chosen.append(int(points[pos]))
        multiples = gf.mul[scalars[:, None], _digits(points[pos:pos + 1], q, n)]
        for j in range(t - 1, 0, -1):
            below = _digits(np.flatnonzero(spans[j - 1]), q, n)
            spans[j, gf.add[below[:, None, :], multiples[None, :, :]] @ weights] = True
    return chosen


@lru_cache(maxsize=128)
def _linear_columns(q: int, n: int, t: int, seed: int) -> np.ndarray:
    """The largest greedy column set over the fixed order and shuffles of it (from ``seed``),
    at most as many columns as an array of ``_MAX_CELLS`` cells holds."""
    gf = field(q)
    points = projective_points(q, n) @ q ** np.arange(n - 1, -1, -1)
    cap = _MAX_CELLS // q**n
    passes = max(1, min(_LINEAR_PASSES, _LINEAR_MAX_VECTORS // q**n))
    rng = np.random.default_rng(seed)
    best = _greedy_columns(gf, n, t, points, cap)
    for _ in range(passes - 1):
        if len(best) >= cap:
            break
        found = _greedy_columns(gf, n, t, rng.permutation(points), cap)
        if len(found) > len(best):
            best = found
    return _frozen(_digits(np.sort(best), q, n))


@lru_cache(maxsize=128)
def _linear(q: int, n: int, t: int, seed: int) -> np.ndarray:
    """The array one coordinate at a time (the rows with x_i = a are a v_i plus the array of
    the later coordinates): one table gather per cell, where ``GF.dot`` needs n."""
    gf = field(q)
    cols = _linear_columns(q, n, t, seed)
    array = np.zeros((1, len(cols)), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        shift = gf.mul[np.arange(q)[:, None], cols[None, :, i]]
        array = gf.add[shift[:, None, :], array[None, :, :]].reshape(-1, len(cols))
    return _frozen(array)


def linear_oa(q: int, n: int, t: int, k: int | None = None, seed: int | None = None
              ) -> np.ndarray:
    """OA(q^n, k, q, t): rows are all x in GF(q)^n, column j holds <x, v_j>.

    The v_j are projective points of which any t are linearly independent, so any t columns
    are an onto linear map GF(q)^n -> GF(q)^t and every t-tuple appears q^(n-t) times. They
    are picked greedily (a point joins when no t-1 chosen ones span it) in a fixed order and
    in shuffles drawn from ``seed`` (None: a fixed default), keeping the largest set: for
    t = 3 these are caps (arcs when n = 3), beyond Bush's q + 1 columns once n > t; t = 2
    gives every point (Rao-Hamming). ``k`` = None returns all columns found.
    """
    gf = _field_or_error(q)
    n, t = _positive("n", n), _positive("t", t, 2)
    if n < t:
        raise HscaleError(f"linear_oa needs n >= t, got n={n} and t={t}",
                          f"use n >= {t}: strength t takes at least q^t runs")
    if gf.q**n > _LINEAR_MAX_VECTORS:
        raise HscaleError(f"linear_oa(q={q}, n={n}) would search {gf.q**n} vectors "
                          f"(at most {_LINEAR_MAX_VECTORS})", "use a smaller n or q")
    seed = 0 if seed is None else _positive("seed", seed, 0)
    array = _linear(gf.q, n, t, seed)
    if k is not None and _positive("k", k) > array.shape[1]:
        raise HscaleError(f"the greedy search found {array.shape[1]} columns for linear_oa("
                          f"q={q}, n={n}, t={t}), fewer than k={k}",
                          f"ask for at most {array.shape[1]} columns, try another seed, "
                          "or use a larger n")
    return array[:, :k].copy()


def _nonsquare(gf: GF) -> int:
    return int(np.setdiff1d(np.arange(1, gf.q), gf.squares())[0])


@lru_cache(maxsize=64)
def _ak_scheme(q: int) -> np.ndarray:
    """D(2q, 2q; q) for odd q: rows (block b, x), q 'linear' and q 'quadratic' columns.

    Block 0: c_k = k x and d_m = x^2 + m x. Block 1, with a nonsquare n: c_k = k x + w k^2 and
    d_m = n (x^2 + m x) + u m^2, where w = (n-1)/(4n) and u = (n-1)/4. For c_k - d_m the
    quadratics of the two blocks share their critical value and their leading coefficients
    differ by the nonsquare factor n, so each difference occurs 1 + eta(.) times in one block
    and 1 - eta(.) times in the other (eta the quadratic character): twice in all.
    """
    gf = field(q)
    add, mul, sub, inv = gf.add, gf.mul, gf.sub, gf.inv
    n = _nonsquare(gf)
    four = add[add[1, 1], add[1, 1]]
    w = mul[sub[n, 1], inv[mul[four, n]]]
    u = mul[sub[n, 1], inv[four]]
    e = np.arange(q)
    kx = mul[e[:, None], e[None, :]]  # rows x, columns k (or m)
    sq = mul[e, e]
    quad0 = add[sq[:, None], kx]
    block0 = np.hstack([kx, quad0])
    block1 = np.hstack([add[kx, mul[w, sq][None, :]],
                        add[mul[n, quad0], mul[u, sq][None, :]]])
    return _frozen(np.vstack([block0, block1]))


def _kron_scheme(first: np.ndarray, second: np.ndarray, gf: GF) -> np.ndarray:
    """D(r1 r2, c1 c2; s) with entries D1[i1, j1] + D2[i2, j2] (a known product of schemes)."""
    r1, c1 = first.shape
    r2, c2 = second.shape
    out = gf.add[first[:, None, :, None], second[None, :, None, :]]
    return out.reshape(r1 * r2, c1 * c2)


@lru_cache(maxsize=128)
def _algebraic_scheme(r: int, s: int) -> np.ndarray | None:
    """D(r, r; s) from the field (r = s), Addelman-Kempthorne (r = 2s) and products; or None."""
    if prime_power(s) is None or r % s:
        return None
    gf = field(s)
    if r == s:
        return _frozen(gf.mul)
    if r == 2 * s and s % 2:
        return _ak_scheme(s)
    inner = _algebraic_scheme(r // s, s)
    return None if inner is None else _frozen(_kron_scheme(gf.mul, inner, gf))


def from_difference_scheme(scheme: np.ndarray, s: int) -> np.ndarray:
    """OA(r s, r^1 s^c, 2) from D(r, c; s): run (i, g) has i, then D[i, j] + g for each j."""
    gf = _field_or_error(s)
    d = np.asarray(scheme, dtype=np.int64)
    if d.ndim != 2 or d.min(initial=0) < 0 or d.max(initial=0) >= s:
        raise HscaleError(f"a difference scheme over GF({s}) needs a 2-D array of 0..{s - 1}")
    r = d.shape[0]
    shifts = np.tile(np.arange(s), r)[:, None]
    body = gf.add[np.repeat(d, s, axis=0), shifts]
    return np.hstack([np.repeat(np.arange(r), s)[:, None], body])


def addelman_kempthorne(q: int) -> np.ndarray:
    """OA(2q^2, 2q+1, q, 2) for odd prime powers q (q = 3: the OA(18; 3^7) with lambda 2).

    Built as the difference scheme D(2q, 2q; q) of :func:`_ak_scheme` developed over GF(q),
    with its 2q-level run-block column (block, x) merged to x.
    """
    gf = _field_or_error(q)
    if gf.p == 2:
        raise HscaleError(f"addelman_kempthorne needs an odd prime power q, got {q}",
                          "for even q use rao_hamming or bush")
    return collapse(from_difference_scheme(_ak_scheme(gf.q), gf.q), 0, gf.q)


@lru_cache(maxsize=64)
def _hadamard(n: int) -> tuple[str, np.ndarray] | None:
    """A normalised +-1 Hadamard matrix of order n (first column all +1) and its recipe:
    Paley's quadratic-residue matrix for n - 1 a prime power = 3 mod 4, Sylvester doubling
    [[H, H], [H, -H]] otherwise; None when neither applies."""
    if n == 2:
        return "sylvester(2)", _frozen(np.array([[1, 1], [1, -1]]))
    q = n - 1
    if q % 4 == 3 and q <= MAX_ORDER and prime_power(q) is not None:
        return f"paley(q={q})", _frozen(_paley_matrix(q))
    half = _hadamard(n // 2) if n % 2 == 0 and n > 2 else None
    if half is None:
        return None
    name, h = half
    return f"doubled({name})", _frozen(np.block([[h, h], [h, -h]]))


def _paley_matrix(q: int) -> np.ndarray:
    """I + S with S = [[0, 1], [-1, Q]], Q[a, b] = chi(a - b): skew Hadamard for q = 3 mod 4."""
    gf = field(q)
    chi = np.full(q, -1, dtype=np.int64)
    chi[gf.squares()] = 1
    chi[0] = 0
    skew = np.zeros((q + 1, q + 1), dtype=np.int64)
    skew[0, 1:], skew[1:, 0], skew[1:, 1:] = 1, -1, chi[gf.sub]
    h = np.eye(q + 1, dtype=np.int64) + skew
    return h * h[:, :1]


def hadamard_oa(n: int) -> np.ndarray:
    """OA(n, 2^(n-1), 2) from a Hadamard matrix of order n (Paley I and Sylvester doubling:
    n = 2, 4, 8, 12, 16, 20, 24, 28, 32, 40, 44, 48, ...): drop the all-ones column, map
    +1 -> 0 and -1 -> 1; orthogonal +-1 columns are exactly balanced pairs."""
    found = _hadamard(_positive("n", n, 2))
    if found is None:
        raise HscaleError(f"hscale has no Hadamard construction of order {n}",
                          "use n = 2^a (q + 1) with q a prime power = 3 mod 4")
    return (1 - found[1][:, 1:]) // 2


def foldover_join(array: np.ndarray, two_level: np.ndarray) -> np.ndarray:
    """[[A, H, 0], [A, 1 - H, 1]]: OA(2N; levels(A) 2^(m+1)) from OA(N; levels(A)) and a
    two-level OA(N; 2^m). Each row of A meets both values of every H column, so A's columns
    are orthogonal to the folded ones, and the last column separates the halves."""
    a, _ = as_array(array)
    h, _ = as_array(two_level)
    if len(a) != len(h) or h.max() > 1:
        raise HscaleError("foldover_join needs a two-level array with as many runs as the other",
                          f"got {len(a)} and {len(h)} runs")
    flag = np.repeat([0, 1], len(a))[:, None]
    return np.hstack([np.vstack([a, a]), np.vstack([h, 1 - h]), flag])


# --- backtracking search ------------------------------------------------------------------


class _Stop(Exception):
    """The search ran past its deadline (or its pool grew too large)."""


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


def _column_solutions(keys: np.ndarray, caps: np.ndarray, prev: list[int], deadline: float,
                      rng: np.random.Generator | None) -> Iterator[np.ndarray]:
    """Every canonical new column in which each bucket is filled exactly to its cap.

    ``keys[m, i, v]`` is the bucket that value v in row i fills for constraint m, and every
    bucket that occurs must end with ``caps[m]`` rows. Row 0 takes 0 (levels can be
    relabelled) and rows equal so far take non-decreasing values (they can be swapped), which
    loses no solution up to isomorphism. Before each row the search checks that the rows left
    can still reach every bucket's cap, which prunes most dead ends early.
    """
    n_cons, runs, n_levels = keys.shape
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
        if time.monotonic() > deadline:
            raise _Stop
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


def _scheme_solutions(gf: GF, deadline: float, rng: np.random.Generator | None
                      ) -> Callable[[list[np.ndarray]], Iterator[np.ndarray]]:
    def solutions(cols: list[np.ndarray]) -> Iterator[np.ndarray]:
        r = len(cols[0])
        values = np.arange(gf.q)
        keys = np.stack([gf.sub[values[None, :], c[:, None]] for c in cols])
        caps = np.full(len(cols), r // gf.q)
        return _column_solutions(keys, caps, _previous_same(cols, r), deadline, rng)
    return solutions


@lru_cache(maxsize=128)
def _searched_scheme(r: int, c: int, s: int, seed: int | None,
                     time_limit: float) -> np.ndarray | None:
    gf = field(s)
    rng = None if seed is None else np.random.default_rng(seed)
    solutions = _scheme_solutions(gf, time.monotonic() + time_limit, rng)
    try:
        cols = _backtrack(c, [np.zeros(r, dtype=np.int64)], solutions)
    except _Stop:
        return None
    return None if cols is None else _frozen(np.stack(cols, axis=1))


def difference_scheme(r: int, c: int, s: int, seed: int | None = None,
                      time_limit: float = 1.0) -> np.ndarray | None:
    """A difference scheme D(r, c; s): an r x c array over GF(s) in which the difference of
    any two columns holds every element r/s times; None if the search runs out of time.

    Algebra covers r = s (the multiplication table), r = 2s for odd s (Addelman-Kempthorne)
    and their products; other cases are searched with the first row and column normalised
    to 0 (adding constants to rows or columns keeps the property). ``seed`` shuffles the
    order in which the search tries values.
    """
    r, c = _positive("r", r), _positive("c", c)
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
    found = _searched_scheme(r, c, s, seed, float(time_limit))
    return None if found is None else found.copy()


# --- operations on arrays ------------------------------------------------------------------


def replicate(array: np.ndarray, lam: int) -> np.ndarray:
    """The array stacked ``lam`` times: every count multiplies by lam, so strength is kept."""
    arr, _ = as_array(array)
    return np.tile(arr, (_positive("lam", lam), 1))


def _column_levels(arr: np.ndarray, column: int) -> int:
    if not -arr.shape[1] <= column < arr.shape[1]:
        raise HscaleError(f"column {column} does not exist in an array of {arr.shape[1]} columns")
    return int(arr[:, column].max()) + 1


def expand(array: np.ndarray, column: int, sub_array: np.ndarray) -> np.ndarray:
    """Expansive replacement: level v of an L-level column becomes row v of an L-run OA.

    With a strength-2 ``sub_array`` the result keeps strength 2 (e.g. a 6-level column and
    ``full_factorial((2, 3))`` give a 2-level and a 3-level column).
    """
    arr, _ = as_array(array)
    sub, _ = as_array(sub_array)
    n_levels = _column_levels(arr, column)
    if sub.shape[0] != n_levels:
        raise HscaleError(f"column {column} has {n_levels} levels but the replacement array "
                          f"has {sub.shape[0]} runs", f"give an OA with {n_levels} runs")
    column %= arr.shape[1]
    return np.hstack([arr[:, :column], sub[arr[:, column]], arr[:, column + 1:]])


def collapse(array: np.ndarray, column: int, d: int) -> np.ndarray:
    """Merge the L levels of a column into d balanced groups (level a -> a mod d, d | L)."""
    arr, _ = as_array(array)
    n_levels = _column_levels(arr, column)
    d = _positive("d", d, 2)
    if n_levels % d:
        raise HscaleError(f"cannot collapse {n_levels} levels into {d} equal groups",
                          f"use a divisor of {n_levels}")
    out = arr.copy()
    out[:, column] %= d
    return out


def foldover(array: np.ndarray, extra_column: bool = False) -> np.ndarray:
    """[A; 1 - A] for a two-level A: strength 2 becomes strength 3 (odd moments cancel).

    ``extra_column`` appends a column that is 0 on A and 1 on its mirror, still strength 3.
    """
    arr, _ = as_array(array)
    if arr.max() > 1:
        raise HscaleError("foldover needs a two-level array (levels 0 and 1)")
    out = np.vstack([arr, 1 - arr])
    if extra_column:
        out = np.hstack([out, np.repeat([0, 1], len(arr))[:, None]])
    return out


# --- search fallback -----------------------------------------------------------------------


def _oa_solutions(levels: list[int], runs: int, strength: int, deadline: float,
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
                                 deadline, rng)
    return solutions


def _pool(first: np.ndarray, n_levels: int, limit: int, deadline: float) -> np.ndarray | None:
    """Every n_levels column orthogonal to ``first`` with row 0 at 0; None if over ``limit``."""
    runs = len(first)
    keys = (first[:, None] * n_levels + np.arange(n_levels)[None, :])[None]
    caps = np.asarray([runs // (int(first.max() + 1) * n_levels)])
    gen = _column_solutions(keys, caps, [-1] * runs, deadline, None)
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


def _clique(adj: np.ndarray, size: int, deadline: float) -> list[int] | None:
    """``size`` pairwise adjacent vertices (bitset branch and bound), or None if none exist."""
    packed = np.packbits(adj, axis=1, bitorder="little")
    neighbours = [int.from_bytes(row.tobytes(), "little") for row in packed]

    def grow(cand: int, chosen: list[int]) -> list[int] | None:
        if len(chosen) == size:
            return chosen
        while cand.bit_count() >= size - len(chosen):
            if time.monotonic() > deadline:
                raise _Stop
            v = cand.bit_length() - 1
            cand ^= 1 << v
            found = grow(cand & neighbours[v], chosen + [v])
            if found:
                return found
        return None

    return grow((1 << len(neighbours)) - 1, [])


def _pool_search(levels: list[int], runs: int, deadline: float,
                 rng: np.random.Generator) -> list[np.ndarray] | None:
    """Strength 2 with levels (L0, L, ..., L): fix the first column, then pick k - 1 columns
    from the pool of all columns orthogonal to it as a clique of mutually orthogonal ones.
    Column-by-column search stalls on such cases (most partial arrays do not extend)."""
    first = np.repeat(np.arange(levels[0]), runs // levels[0])
    pool = _pool(first, levels[1], _POOL_LIMIT, deadline)
    if pool is None:
        raise _Stop
    pool = pool[rng.permutation(len(pool))]
    chosen = _clique(_orthogonal_pairs(pool, levels[1]), len(levels) - 1, deadline)
    return None if chosen is None else [first] + [pool[v] for v in chosen]


def _search(levels: list[int], runs: int, strength: int, time_limit: float,
            seed: int | None) -> list[np.ndarray] | None:
    """Column backtracking restarted with new value orders in doubling time slices, and the
    pool search when it applies. None when a complete search proves there is no array."""
    end = time.monotonic() + time_limit
    rngs = np.random.default_rng(seed if seed is not None else 0).spawn(64)
    pooled = strength == 2 and len(levels) >= 3 and len(set(levels[1:])) == 1
    for attempt, rng in enumerate(rngs):
        now = time.monotonic()
        if now >= end:
            break
        try:
            if pooled and attempt == 1:
                return _pool_search(levels, runs, min(end, now + (end - now) / 2), rng)
            order = None if attempt == 0 and seed is None else rng
            deadline = min(end, now + _FIRST_SLICE * 2**attempt)
            solutions = _oa_solutions(levels, runs, strength, deadline, order)
            return _backtrack(len(levels), [], solutions)
        except _Stop:
            continue
        except _Infeasible:
            return None
    return None


def search_oa(levels: Sequence[int], runs: int, strength: int = 2, seed: int | None = None,
              time_limit: float = 2.0) -> np.ndarray | None:
    """An OA(runs; levels; strength) by backtracking, or None when none is found in time.

    Columns are added one at a time (most levels first); each is filled row by row so that
    its tuple counts with earlier columns never exceed N / (product of levels), which makes
    them exact once the column is full. A column with no completion sends the search back.
    Levels (L0, L, ..., L) also get a clique search over all columns orthogonal to the first.
    ``seed`` picks the value orders of the restarts; results can depend on machine speed
    only through which restart finishes within ``time_limit``.
    """
    lv = [_positive("a level count", s, 2) for s in levels]
    runs, strength = _positive("runs", runs), _positive("strength", strength)
    if not lv or strength > len(lv):
        raise HscaleError(f"strength {strength} needs at least {strength} factors")
    order = sorted(range(len(lv)), key=lambda j: -lv[j])
    cols = _search([lv[j] for j in order], runs, strength, time_limit, seed)
    if cols is None:
        return None
    out = np.empty((runs, len(lv)), dtype=np.int64)
    out[:, order] = np.stack(cols, axis=1)
    return out


# --- candidates ----------------------------------------------------------------------------

# A plan says where each requested column comes from: ("col", c), ("mod", c, d), ("sub", c, i).
Plan = list[tuple[int, ...]]


def _prime_power_parts(n: int) -> list[tuple[int, int]]:
    parts, p = [], 2
    while n > 1:
        e = 0
        while n % p == 0:
            n //= p
            e += 1
        if e:
            parts.append((p, e))
        p += 1
    return parts


@lru_cache(maxsize=64)
def _small_oa(n_levels: int) -> np.ndarray | None:
    """An n_levels-run strength-2 array with many columns, to expand a column into."""
    parts = _prime_power_parts(n_levels)
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
    """Greedy linear arrays for strength >= 3 and runs = q^n with every level count dividing q
    (collapsed columns keep strength). n = t is left to Bush where it applies: its q + 1
    (q + 2) columns are about all an arc in GF(q)^t can have (the MDS bound), more than the
    greedy finds. The greedy runs only when the generator gets this far."""
    if strength < 3:
        return
    for q, n in _prime_powers_of(runs, strength):
        bush_fits = strength <= q or (strength == 3 and q % 2 == 0)
        if (runs > _LINEAR_MAX_VECTORS or any(q % s for s in levels)
                or (n == strength and bush_fits)):
            continue
        k = len(_linear_columns(q, n, strength, 0))
        yield (f"linear(q={q},n={n},t={strength})", (q,) * k,
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
            found = _searched_scheme(r, r, s, None, _DS_SEARCH_SECONDS)
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


def candidates(levels: Sequence[int], strength: int, runs: int, *,
               search_time: float = 2.0) -> Iterator[tuple[str, np.ndarray]]:
    """(method, array) pairs that may be OA(runs; levels; strength), cheapest first.

    Each array has ``runs`` rows and column j has ``levels[j]`` levels (base columns are
    selected, collapsed or expanded to match). Order: the algebraic arrays with N = runs
    (full factorial, Rao-Hamming or Bush, greedy linear arrays for strength >= 3, Hadamard,
    Addelman-Kempthorne, difference schemes), pyDOE3's tables, searched difference schemes,
    lambda-multiples of all those, foldovers (two-level, strength 3), a foldover join (mixed
    levels with many two-level columns) and last the backtracking search, which gets
    ``search_time`` seconds (0 skips it). Nothing here is verified: the caller checks each array.
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
        joined = _foldover_join_candidate(lv, runs // 2, search_time)
        if joined is not None:
            yield joined
    if strength <= len(lv) and search_time > 0:
        found = search_oa(lv, runs, strength, time_limit=search_time)
        if found is not None:
            yield f"search_oa(time_limit={search_time:g})", found


def _foldovers(levels: tuple[int, ...], half: int) -> Iterator[tuple[str, np.ndarray]]:
    """Strength-3 two-level arrays as foldovers of strength-2 arrays with half the runs."""
    if len(levels) >= 2:
        for name, array in _direct(levels[:-1], 2, half, searched=False):
            yield f"foldover({name}, extra_column=True)", foldover(array, extra_column=True)
    for name, array in _direct(levels, 2, half, searched=False):
        yield f"foldover({name})", foldover(array)


def _first_verified(levels: tuple[int, ...], runs: int, search_time: float
                    ) -> tuple[str, np.ndarray] | None:
    """The first strength-2 candidate that verifies, with a short search as the last resort;
    a single factor is one balanced column."""
    if len(levels) == 1:
        ok = runs % levels[0] == 0
        return ("cyclic", np.arange(runs)[:, None] % levels[0]) if ok else None
    for name, array in _direct(levels, 2, runs, searched=False):
        if is_orthogonal(array, 2, levels):
            return name, array
    found = search_oa(levels, runs, 2, time_limit=search_time) if search_time > 0 else None
    return None if found is None else (f"search_oa(time_limit={search_time:g})", found)


def _foldover_join_candidate(levels: tuple[int, ...], half: int, search_time: float
                             ) -> tuple[str, np.ndarray] | None:
    """Mixed levels with many two-level columns, e.g. OA(24; 3^1 2^16) from OA(12; 3^1 2^4)
    and OA(12; 2^11): the two-level columns beyond the first array's come from the fold."""
    twos = levels.count(2) - 1
    m = min(twos, half - 1)
    base = tuple(s for s in levels if s != 2) + (2,) * (twos - m)
    if m < 1:
        return None
    first = _first_verified(base, half, min(search_time, 0.5))
    second = _first_verified((2,) * m, half, 0.0)
    if first is None or second is None:
        return None
    array = foldover_join(first[1], second[1])
    planned = _plan(base + (2,) * (m + 1), levels, 2)
    if planned is None:
        return None
    reordered, suffix = _apply(array, *planned)
    return f"foldover_join({first[0]}, {second[0]})" + suffix, reordered
