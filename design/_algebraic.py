"""Orthogonal arrays from finite-field algebra: Rao-Hamming, Bush, linear arrays (greedy
caps and arcs, ovoids), Addelman-Kempthorne, difference schemes and Hadamard matrices (Paley I
and II, Sylvester). They are exact and cheap, so they are tried before any search.

Arrays are cached read-only; the public functions return copies, which callers may change.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from hscale.design._arrays import _MAX_CELLS, _frozen, _positive, collapse, full_factorial
from hscale.design._caps import ovoid
from hscale.design._gf import GF, MAX_ORDER, field
from hscale.design._numbers import prime_power
from hscale.errors import HscaleError


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
    at most as many columns as an array of ``_MAX_CELLS`` cells holds. Caps in PG(3, q), q > 2,
    are the elliptic quadric's q^2 + 1 points instead, the largest there are (no seed; for
    q = 16 the cell cap keeps 152 of 257)."""
    cap = _MAX_CELLS // q**n
    if n == 4 and t == 3 and q > 2:
        return _frozen(ovoid(q)[:cap])
    gf = field(q)
    points = projective_points(q, n) @ q ** np.arange(n - 1, -1, -1)
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
    gives every point (Rao-Hamming). For n = 4, t = 3 and q > 2 the columns are an ovoid
    (:func:`hscale.design._caps.ovoid`), OA(q^4, q^2 + 1, q, 3), and ``seed`` changes nothing.
    ``k`` = None returns all columns found.
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
        found = "an ovoid has" if n == 4 and t == 3 and gf.q > 2 else "the greedy search found"
        raise HscaleError(f"{found} {array.shape[1]} columns for linear_oa(q={q}, n={n}, "
                          f"t={t}), fewer than k={k}", f"ask for at most {array.shape[1]} "
                          f"columns{'' if 'ovoid' in found else ', try another seed,'} or use "
                          "a larger n")
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
    Paley I for n - 1 a prime power = 3 mod 4, Paley II for n / 2 - 1 a prime power = 1 mod 4
    (orders 36, 52, 76, 100 have no other construction here), Sylvester doubling
    [[H, H], [H, -H]] otherwise; None when none applies."""
    if n == 2:
        return "sylvester(2)", _frozen(np.array([[1, 1], [1, -1]]))
    q = n - 1
    if q % 4 == 3 and q <= MAX_ORDER and prime_power(q) is not None:
        return f"paley(q={q})", _frozen(_paley_matrix(q))
    q = n // 2 - 1
    if n % 4 == 0 and q % 4 == 1 and q <= MAX_ORDER and prime_power(q) is not None:
        return f"paley2(q={q})", _frozen(_paley2_matrix(q))
    half = _hadamard(n // 2) if n % 2 == 0 and n > 2 else None
    if half is None:
        return None
    name, h = half
    return f"doubled({name})", _frozen(np.block([[h, h], [h, -h]]))


def _jacobsthal(q: int) -> np.ndarray:
    """Q[a, b] = chi(a - b), chi the quadratic character of GF(q) (chi(0) = 0): symmetric
    for q = 1 mod 4 and skew for q = 3 mod 4, and Q Q^T = q I - J either way."""
    gf = field(q)
    chi = np.full(q, -1, dtype=np.int64)
    chi[gf.squares()] = 1
    chi[0] = 0
    return chi[gf.sub]


def _paley_matrix(q: int) -> np.ndarray:
    """I + S with S = [[0, 1], [-1, Q]], Q the Jacobsthal matrix: skew Hadamard for q = 3 mod 4."""
    skew = np.zeros((q + 1, q + 1), dtype=np.int64)
    skew[0, 1:], skew[1:, 0], skew[1:, 1:] = 1, -1, _jacobsthal(q)
    h = np.eye(q + 1, dtype=np.int64) + skew
    return h * h[:, :1]


def _paley2_matrix(q: int) -> np.ndarray:
    """Paley II, order 2(q + 1) for q = 1 mod 4: C = [[0, 1], [1, Q]] is a symmetric
    conference matrix (C C^T = q I), so [[C + I, C - I], [C - I, -C - I]] has orthogonal rows:
    its Gram matrix is 2 (C^2 + I) = 2 (q + 1) I on the diagonal blocks and 0 off them."""
    conf = np.zeros((q + 1, q + 1), dtype=np.int64)
    conf[0, 1:], conf[1:, 0], conf[1:, 1:] = 1, 1, _jacobsthal(q)
    eye = np.eye(q + 1, dtype=np.int64)
    h = np.block([[conf + eye, conf - eye], [conf - eye, -conf - eye]])
    return h * h[:, :1]


def hadamard_oa(n: int) -> np.ndarray:
    """OA(n, 2^(n-1), 2) from a Hadamard matrix of order n (Paley I and II, Sylvester doubling:
    every multiple of 4 below 300 but 92, 116, 156, 172, 184, 188, 232, 236, 260, 268, 292):
    drop the all-ones column, map +1 -> 0 and -1 -> 1; orthogonal +-1 columns are exactly
    balanced pairs."""
    found = _hadamard(_positive("n", n, 2))
    if found is None:
        raise HscaleError(f"hscale has no Hadamard construction of order {n}",
                          "use n = 2^a (q + 1) with q a prime power = 3 mod 4, or "
                          "n = 2^a 2 (q + 1) with q a prime power = 1 mod 4")
    return (1 - found[1][:, 1:]) // 2
