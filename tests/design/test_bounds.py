from itertools import combinations
from math import comb, prod

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hscale.design import (
    bose_bush_bound,
    bush_bound,
    divisor,
    feasibility,
    max_factors,
    rao_bound,
    smallest_runs,
)
from hscale.errors import HscaleError


def rao_brute(levels, t):
    """Rao bound straight from its definition, for comparison."""
    def even(ls, u):
        return sum(prod(s - 1 for s in sub) for i in range(u + 1)
                   for sub in combinations(ls, i))
    if t % 2 == 0:
        return even(levels, t // 2)
    return max(levels[p] * even(levels[:p] + levels[p + 1:], t // 2)
               for p in range(len(levels)))


@given(st.lists(st.integers(2, 7), min_size=1, max_size=8), st.integers(1, 4))
def test_rao_matches_definition(levels, t):
    if t > len(levels):
        with pytest.raises(HscaleError):
            rao_bound(levels, t)
        return
    assert rao_bound(levels, t) == rao_brute(tuple(levels), t)


def test_rao_pure_closed_forms():
    # t = 2: 1 + k (s - 1); t = 3: 1 + k (s-1) + (k-1) (s-1)^2
    assert rao_bound("3^5", 2) == 11
    assert rao_bound("3^5", 3) == 1 + 5 * 2 + 4 * 4
    assert rao_bound("2^15", 2) == 16
    assert rao_bound("2^1,3^7", 2) == 1 + 1 + 14
    k, s = 8, 2
    assert rao_bound((s,) * k, 4) == sum(comb(k, i) for i in range(3))


def test_divisibility():
    assert divisor("3^5", 2) == 9
    assert divisor("2^1,3^7", 2) == 18
    assert divisor("2^3", 3) == 8
    assert divisor("4^1,2^4", 2) == 8


def test_paper_facts():
    # at most 7 three-level factors in 18 runs (Bose-Bush), though Rao allows 8
    assert rao_bound("3^8") <= 18
    verdict = feasibility("3^8", 2, 18)
    assert not verdict.ok and "Bose-Bush" in verdict.reasons[0]
    assert feasibility("3^7", 2, 18).ok
    assert max_factors(3, 2, 18) == 7
    # OA(27; 3^5) of strength 3: Rao allows it, Bush excludes it
    assert rao_bound("3^5", 3) == 27
    verdict = feasibility("3^5", 3, 27)
    assert not verdict.ok and "Bush" in verdict.reasons[0]
    assert feasibility("3^4", 3, 27).ok
    assert smallest_runs("3^5") == 18
    assert smallest_runs("3^5", 3) == 54


def test_reasons_name_the_numbers():
    verdict = feasibility("3^5", 2, 12)
    assert any("divisible by 9" in r and "N=12" in r for r in verdict.reasons)
    verdict = feasibility("2^20", 2, 16)
    assert any("Rao" in r and "21" in r for r in verdict.reasons)


def test_bush_and_bose_bush_known_values():
    assert bush_bound(2, 2) == 3 and bush_bound(3, 2) == 4 and bush_bound(7, 2) == 8
    assert bush_bound(4, 3) == 6 and bush_bound(5, 3) == 6 and bush_bound(3, 3) == 4
    for s in (3, 4, 5, 7, 8, 9):  # lambda = 2: Addelman-Kempthorne's 2s + 1 is the maximum
        assert bose_bush_bound(s, 2) == 2 * s + 1
    assert bose_bush_bound(3, 3) is None  # OA(27; 3^13) meets Rao
    assert bose_bush_bound(2, 3) is None


@given(st.integers(2, 9), st.integers(2, 4), st.integers(1, 6))
def test_smallest_runs_passes_every_bound_and_is_least(s, k, t):
    if t > k:
        return
    n = smallest_runs((s,) * k, t)
    assert feasibility((s,) * k, t, n).ok
    d = divisor((s,) * k, t)
    assert all(not feasibility((s,) * k, t, m).ok for m in range(d, n, d))


def test_strength_one_has_no_bush_bound():
    assert feasibility("3^5", 1, 3).ok  # five cyclic columns of three runs


def test_divisor_matches_brute_force_lcm():
    from itertools import combinations
    from math import lcm, prod

    for levels in [(2, 3, 4, 6), (2, 2, 9, 12), (5, 10, 3)]:
        for t in range(1, len(levels) + 1):
            expected = 1
            for sub in combinations(levels, t):
                expected = lcm(expected, prod(sub))
            assert divisor(levels, t) == expected


def test_bad_requests():
    with pytest.raises(HscaleError):
        rao_bound("3^2", 3)
    with pytest.raises(HscaleError):
        feasibility("3^2", 0, 9)
    with pytest.raises(HscaleError):
        feasibility("3^2", 2, 0)


def test_huge_requests_are_quick():
    import time

    start = time.perf_counter()
    assert rao_bound((2,) * 10_000, 3) == 2 * 10_000
    assert rao_bound((2,) * 5000 + (3,) * 5000, 5) == rao_brute_fast((2,) * 5000 + (3,) * 5000)
    assert max_factors(2, 2, 10**6) == 10_000
    with pytest.raises(HscaleError, match="strength 2999"):
        feasibility((2,) * 3000, 2999, 10**6)
    assert "about 10^300" in feasibility((3,) * 5, 2, 10**300 + 1).reasons[0]
    assert time.perf_counter() - start < 2


def rao_brute_fast(levels):
    """Odd-strength Rao bound for t = 5 from e_0..e_2 of the other factors, by formula."""
    best = 0
    for s in set(levels):
        others = list(levels)
        others.remove(s)
        xs = [v - 1 for v in others]
        e1, e2 = sum(xs), (sum(xs) ** 2 - sum(x * x for x in xs)) // 2
        best = max(best, s * (1 + e1 + e2))
    return best
