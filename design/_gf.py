"""Finite fields GF(q), q = p^n, as lookup tables over the integer codes 0..q-1.

Orthogonal-array constructions do all their arithmetic by indexing these tables, so a whole
array is a handful of numpy gathers. For prime q the element a is the residue a mod p. For
q = p^n (n > 1) the element with code a is the polynomial whose coefficient of x^i is the
i-th base-p digit of a, reduced modulo a primitive polynomial found by search; because x is
then a generator of the multiplicative group, products come from exp/log tables.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from hscale.design._numbers import prime_power
from hscale.errors import HscaleError

# Tables are q x q; 1024^2 int64 entries is 8 MB each, which is as far as arrays here need.
MAX_ORDER = 1024


def _check_order(q: int) -> tuple[int, int]:
    pn = prime_power(q)
    if pn is None:
        raise HscaleError(f"GF({q}) does not exist: {q} is not a prime power",
                          "use a prime power q such as 2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 25, 27")
    if q > MAX_ORDER:
        raise HscaleError(f"GF({q}) is too large for lookup tables (at most {MAX_ORDER})",
                          "use a smaller field")
    return pn


def _times_x(poly: tuple[int, ...], low: tuple[int, ...], p: int) -> tuple[int, ...]:
    """poly * x modulo the monic polynomial x^n + low[n-1] x^(n-1) + ... + low[0]."""
    top = poly[-1]
    shifted = (0,) + poly[:-1]
    return tuple((c - top * m) % p for c, m in zip(shifted, low, strict=True))


def _powers_of_x(low: tuple[int, ...], p: int) -> list[tuple[int, ...]] | None:
    """x^0 .. x^(q-2) when x has order q-1 modulo the polynomial (so it is primitive)."""
    n = len(low)
    one = (1,) + (0,) * (n - 1)
    powers = [one]
    current = _times_x(one, low, p)
    while current != one:
        powers.append(current)
        if len(powers) > p**n - 1:
            return None
        current = _times_x(current, low, p)
    return powers if len(powers) == p**n - 1 else None


def primitive_polynomial(p: int, n: int) -> tuple[int, ...]:
    """Coefficients (c_0, ..., c_{n-1}, 1) of the first monic primitive polynomial of degree n.

    x having order p^n - 1 modulo f forces f to be irreducible (the quotient ring then has
    p^n - 1 units), so one order computation tests both properties.
    """
    for code in range(1, p**n):
        low = tuple((code // p**i) % p for i in range(n))
        if low[0] != 0 and _powers_of_x(low, p) is not None:
            return low + (1,)
    raise AssertionError(f"no primitive polynomial of degree {n} over GF({p})")  # never: exists


def _encode(digits: np.ndarray, p: int) -> np.ndarray:
    return digits @ (p ** np.arange(digits.shape[-1], dtype=np.int64))


@lru_cache(maxsize=64)
def _tables(q: int) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """(modulus, addition table, multiplication table) for GF(q), built once per q."""
    p, n = _check_order(q)
    codes = np.arange(q, dtype=np.int64)
    if n == 1:
        add = (codes[:, None] + codes[None, :]) % p
        mul = (codes[:, None] * codes[None, :]) % p
        return (0, 1), add, mul
    modulus = primitive_polynomial(p, n)
    digits = (codes[:, None] // p ** np.arange(n)) % p
    add = np.zeros((q, q), dtype=np.int64)
    for i in range(n):
        add += ((digits[:, None, i] + digits[None, :, i]) % p) * p**i
    exp = _encode(np.asarray(_powers_of_x(modulus[:-1], p), dtype=np.int64), p)
    log = np.zeros(q, dtype=np.int64)
    log[exp] = np.arange(q - 1)
    mul = exp[(log[:, None] + log[None, :]) % (q - 1)]
    mul[0, :] = 0
    mul[:, 0] = 0
    return modulus, add, mul


class GF:
    """The field GF(q): ``add``, ``sub``, ``mul`` (q x q), ``neg`` and ``inv`` (q) tables.

    Elements are the codes 0..q-1 (0 and 1 are the field's zero and one); ``inv[0]`` is 0 as
    a placeholder. Tables are shared between instances of the same order and read-only.
    """

    def __init__(self, q: int) -> None:
        if not isinstance(q, int | np.integer):
            raise HscaleError(f"a field order must be an integer, got {q!r}")
        p, n = _check_order(int(q))
        self.q, self.p, self.n = int(q), p, n
        self.modulus, self.add, self.mul = _tables(self.q)
        self.neg = np.argmin(self.add, axis=1)
        self.sub = self.add[:, self.neg]
        self.inv = np.argmax(self.mul == 1, axis=1)
        for table in (self.add, self.mul, self.neg, self.sub, self.inv):
            table.setflags(write=False)

    def __repr__(self) -> str:
        return f"GF({self.q})"

    def power(self, a: int, k: int) -> int:
        """a^k for k >= 0 (0^0 = 1), by repeated multiplication."""
        result = 1
        for _ in range(k):
            result = int(self.mul[result, a])
        return result

    def squares(self) -> np.ndarray:
        """The nonzero squares, sorted: quadratic-character arguments need them."""
        return np.unique(self.mul[np.arange(1, self.q), np.arange(1, self.q)])

    def dot(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Matrix product rows @ cols.T over GF(q): (N, m) x (k, m) -> (N, k)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        if self.n == 1:
            return (rows @ cols.T) % self.p
        out = np.zeros((rows.shape[0], cols.shape[0]), dtype=np.int64)
        for i in range(rows.shape[1]):
            out = self.add[out, self.mul[rows[:, i, None], cols[None, :, i]]]
        return out


@lru_cache(maxsize=64)
def field(q: int) -> GF:
    """The cached GF(q): constructions call this so each field is built once per process."""
    return GF(q)
