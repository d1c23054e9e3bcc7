"""Necessary conditions for an orthogonal array OA(N; L_1..L_k; t) to exist.

Each bound is a function returning a number; :func:`feasibility` collects every bound that a
request violates, with the reason in words, and :func:`smallest_runs` finds the least N that
no bound excludes. Passing every bound does not prove existence: only a construction does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from math import floor, sqrt

import numpy as np

from hscale.design._numbers import factorize, shown
from hscale.design._space import MAX_FACTORS, format_levels, parse_levels
from hscale.errors import HscaleError


def elementary_symmetric(values: Sequence[int], upto: int) -> list[int]:
    """e_0..e_upto of ``values``, exactly, as coefficients of prod(1 + v z).

    Equal values are taken together, (1 + v z)^m = sum C(m, j) v^j z^j, so a space of one
    level count costs O(upto), not O(k upto).
    """
    coeffs = [1]
    for v, m in Counter(values).items():
        power = [1]
        for j in range(1, min(m, upto) + 1):
            power.append(power[-1] * (m - j + 1) // j * v)
        product = [0] * min(upto + 1, len(coeffs) + len(power) - 1)
        for i, c in enumerate(coeffs):
            for j, p in enumerate(power[:len(product) - i]):
                product[i + j] += c * p
        coeffs = product
    return coeffs + [0] * (upto + 1 - len(coeffs))


# Strength t needs at least 2^t runs, so beyond this no array is buildable, and the bounds'
# sums (k x t/2 big-integer terms) would only cost time.
MAX_STRENGTH = 64


def _check(levels: Sequence[int] | str, strength: int) -> tuple[int, ...]:
    lv = parse_levels(levels)
    if not isinstance(strength, int | np.integer) or isinstance(strength, bool):
        raise HscaleError(f"strength must be an integer, got {strength!r}", "use --strength 2")
    if strength > MAX_STRENGTH:
        raise HscaleError(f"strength {shown(strength)} is more than hscale handles "
                          f"({MAX_STRENGTH}): strength t needs at least 2^t runs",
                          "use a strength between 1 and the number of factors")
    if strength < 1:
        raise HscaleError(f"strength must be at least 1, got {shown(strength)}",
                          "use --strength 2")
    if strength > len(lv):
        raise HscaleError(f"strength {strength} exceeds the number of factors {len(lv)}",
                          f"use a strength between 1 and {len(lv)}")
    return lv


def rao_bound(levels: Sequence[int] | str, strength: int = 2) -> int:
    """Rao's bound, pure or mixed levels, even or odd strength.

    t = 2u:   N >= sum_{i<=u} e_i(L_1 - 1, ..., L_k - 1).
    t = 2u+1: N >= max_p L_p * [that sum for t-1 over the other factors], since the runs at any
    one level of factor p form an array of strength t-1 in the others. The sums without p
    divide prod(1 + (L_i - 1) z) by (1 + (L_p - 1) z): one pass per distinct level count.
    """
    lv = _check(levels, strength)
    u = strength // 2
    every = elementary_symmetric([s - 1 for s in lv], u)
    if strength % 2 == 0:
        return sum(every)
    best = 0
    for s in set(lv):
        others = [1]
        for i in range(1, u + 1):
            others.append(every[i] - (s - 1) * others[-1])
        best = max(best, s * sum(others))
    return best


def divisor(levels: Sequence[int] | str, strength: int = 2) -> int:
    """N must be a multiple of L_i1 * ... * L_it for every t factors: the lcm of those products.

    Per prime p, the lcm's exponent is the sum of the t largest exponents of p among the
    level counts, so no enumeration of t-subsets is needed.
    """
    lv = _check(levels, strength)
    factored = {s: factorize(s) for s in set(lv)}
    out = 1
    for p in sorted({p for f in factored.values() for p in f}):
        exponents = sorted((factored[s].get(p, 0) for s in lv), reverse=True)[:strength]
        out *= p ** sum(exponents)
    return out


def bush_bound(s: int, strength: int) -> int:
    """Most factors in an index-unity OA(s^t; s^k; t) (Bush 1952).

    s <= t: k <= t + 1. s > t: k <= s + t - 1, and k <= s + t - 2 when s is odd and t >= 3.
    """
    if s <= strength:
        return strength + 1
    if s % 2 == 1 and strength >= 3:
        return s + strength - 2
    return s + strength - 1


def bose_bush_bound(s: int, lam: int) -> int | None:
    """Most factors in an OA(lam s^2; s^k; 2) by Bose and Bush (1952), or None if it adds nothing.

    Write lam - 1 = a (s - 1) + b with 0 <= b < s - 1. When b >= 1, with
    theta = (sqrt(1 + 4 s (s - 1 - b)) - (2 s - 2 b - 1)) / 2,
    k <= floor((lam s^2 - 1) / (s - 1) - floor(theta) - 1). For lam = 2, s = 3 this is 7.
    """
    if s < 3:
        return None
    b = (lam - 1) % (s - 1)
    if b == 0:
        return None
    theta = (sqrt(1 + 4 * s * (s - 1 - b)) - (2 * s - 2 * b - 1)) / 2
    # floor(theta) exactly: theta >= m iff sqrt(D) >= 2m + c, with integers only
    disc, c = 1 + 4 * s * (s - 1 - b), 2 * s - 2 * b - 1
    m = max(0, floor(theta))
    while m + 1 + c >= 0 and disc >= (2 * (m + 1) + c) ** 2:
        m += 1
    while m > 0 and (2 * m + c < 0 or disc < (2 * m + c) ** 2):
        m -= 1
    return ((lam * s * s - 1) - (m + 1) * (s - 1)) // (s - 1)


@dataclass(frozen=True)
class Feasibility:
    """What the bounds say about OA(N; levels; t): ``reasons`` is empty when none excludes it."""

    levels: tuple[int, ...]
    strength: int
    runs: int
    reasons: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.reasons


def feasibility(levels: Sequence[int] | str, strength: int, runs: int) -> Feasibility:
    """Every bound that excludes OA(runs; levels; strength), each as one sentence."""
    lv = _check(levels, strength)
    name = f"OA({shown(runs)}; {format_levels(lv)}) of strength {strength}"
    reasons: list[str] = []
    if runs < 1:
        raise HscaleError(f"the number of runs must be positive, got {shown(runs)}")
    d = divisor(lv, strength)
    if runs % d:
        reasons.append(f"{name} needs N divisible by {d} (the lcm of the level products of "
                       f"any {strength} factors), got N={shown(runs)}")
    rao = rao_bound(lv, strength)
    if runs < rao:
        reasons.append(f"{name} violates the Rao bound N >= {rao}")
    pure = len(set(lv)) == 1
    s, k = lv[0], len(lv)
    if pure and strength >= 2 and runs == s**strength:
        kmax = bush_bound(s, strength)
        if k > kmax:
            reasons.append(f"{name} has index 1, and the Bush bound allows at most {kmax} "
                           f"factors at {s} levels and strength {strength}, got {k}")
    if pure and strength == 2 and runs % (s * s) == 0:
        kmax = bose_bush_bound(s, runs // (s * s))
        if kmax is not None and k > kmax:
            reasons.append(f"{name} has index {runs // (s * s)}, and the Bose-Bush bound allows at "
                           f"most {kmax} factors at {s} levels, got {k}")
    return Feasibility(lv, strength, runs, reasons)


def smallest_runs(levels: Sequence[int] | str, strength: int = 2, limit: int = 10**7) -> int:
    """The least N that no bound here excludes (a lower limit on any real array's size)."""
    lv = _check(levels, strength)
    d = divisor(lv, strength)
    n = max(d, -(-rao_bound(lv, strength) // d) * d)
    while n <= limit:
        if feasibility(lv, strength, n).ok:
            return n
        n += d
    raise HscaleError(f"no N up to {limit} passes the bounds for {format_levels(lv)}",
                      "use fewer factors or a lower strength")


def max_factors(s: int, strength: int, runs: int, limit: int = 10_000) -> int:
    """The most s-level factors that no bound here excludes in an N-run array of strength t.

    Each bound only grows stricter with more factors, so the feasible counts are 1..k_max
    and a bisection finds k_max.
    """
    if not feasibility((s,) * strength, strength, runs).ok:
        return 0
    low, high = strength, max(strength, min(limit, MAX_FACTORS))  # low is feasible
    while low < high:
        mid = (low + high + 1) // 2
        if feasibility((s,) * mid, strength, runs).ok:
            low = mid
        else:
            high = mid - 1
    return low


__all__ = [
    "Feasibility", "bose_bush_bound", "bush_bound", "divisor", "feasibility", "max_factors",
    "rao_bound", "smallest_runs",
]

