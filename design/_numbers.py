"""Integer factorisation, in one place for the field, bound and construction code.

Level counts, field orders and run counts are small, so trial division is all it takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import log10

import numpy as np


def factorize(n: int) -> dict[int, int]:
    """{p: e} with n the product of the p^e, primes ascending ({} for n < 2)."""
    out: dict[int, int] = {}
    p = 2
    while p * p <= n:
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
        p += 1
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def prime_power(q: int) -> tuple[int, int] | None:
    """(p, n) with q = p^n and p prime, or None when q is not a prime power."""
    if not isinstance(q, int | np.integer) or q < 2:
        return None
    parts = factorize(int(q))
    return next(iter(parts.items())) if len(parts) == 1 else None


def prime_parts(levels: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """For each prime p, the p-part p^e of every level count (1 where p does not divide it)."""
    factored = [factorize(s) for s in levels]
    primes = sorted({p for f in factored for p in f})
    return {p: tuple(p ** f.get(p, 0) for f in factored) for p in primes}


def shown(n: int) -> str:
    """``n`` for a message: exact up to 15 digits, else its order of magnitude (``str`` refuses
    integers past 4300 digits, and a user can type one)."""
    if abs(n) < 10**15:
        return str(n)
    return f"{'-' if n < 0 else ''}about 10^{int(log10(abs(n)))}"
