"""orthogonal_array(): every returned array verifies, and nothing beats a bound."""

from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.design import (
    InfeasibleError,
    feasibility,
    max_factors,
    orthogonal_array,
    parse_levels,
    rao_bound,
    smallest_runs,
)
from hscale.errors import HscaleError
from hscale.harness import factor_space


def brute_strength_ok(arr, t, levels):
    n = len(arr)
    for cols in combinations(range(arr.shape[1]), t):
        cells = int(np.prod([levels[c] for c in cols]))
        counts = Counter(map(tuple, arr[:, cols]))
        if len(counts) != cells or len(set(counts.values())) != 1 or n % cells:
            return False
    return True


ISSUE_ARRAYS = [("3^5", 2, 18), ("3^7", 2, 18), ("3^13", 2, 27), ("3^40", 2, 81),
                ("5^6", 2, 25), ("7^8", 2, 49), ("2^15", 2, 16), ("4^21", 2, 64),
                ("3^4", 3, 27), ("2^1,3^7", 2, 18), ("2^11", 2, 12), ("2^8", 3, 16)]


@pytest.mark.parametrize("levels, t, runs", ISSUE_ARRAYS)
def test_standard_arrays(levels, t, runs):
    design = orthogonal_array(levels, t, runs=runs)
    lv = parse_levels(levels)
    assert design.array.shape == (runs, len(lv))
    assert design.strength == t and design.levels == lv
    assert brute_strength_ok(design.array, t, lv)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([2, 3, 4, 5, 7, 8, 9]), st.integers(2, 10), st.sampled_from([2, 3]))
def test_smallest_array_verifies_and_respects_every_bound(s, k, t):
    if t > k or k > 2 * s + 1:
        return
    levels = (s,) * k
    design = orthogonal_array(levels, t)
    assert brute_strength_ok(design.array, t, levels)
    assert feasibility(levels, t, design.runs).ok  # no construction beats a bound
    assert design.runs >= smallest_runs(levels, t) >= rao_bound(levels, t)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([2, 3, 4, 6, 10]), min_size=2, max_size=5))
def test_mixed_levels_verify(levels):
    design = orthogonal_array(levels, 2)
    assert brute_strength_ok(design.array, 2, levels)
    assert feasibility(levels, 2, design.runs).ok


@pytest.mark.parametrize("levels, runs", [("2^35", 36), ("2^51", 52), ("2^20", 36)])
def test_paley_ii_hadamard_orders_are_built(levels, runs):
    """Hadamard orders 36 and 52 come from Paley II (17 and 25 are 1 mod 4), not refused."""
    design = orthogonal_array(levels, runs=runs)
    assert design.method.startswith("paley2(q=")
    assert brute_strength_ok(design.array, 2, parse_levels(levels))
    if len(design.levels) == runs - 1:  # saturated: the automatic N is this one too
        assert orthogonal_array(levels).runs == runs


@pytest.mark.parametrize("s, runs", [(3, 18), (3, 27), (2, 16), (4, 16), (5, 25), (5, 50),
                                     (2, 36), (2, 52)])
def test_reaches_the_bound_where_algebra_does(s, runs):
    """Constructions reach the largest factor count the bounds allow in these cases."""
    k = max_factors(s, 2, runs)
    design = orthogonal_array((s,) * k, 2, runs=runs)
    assert design.array.shape == (runs, k)
    with pytest.raises(InfeasibleError):
        orthogonal_array((s,) * (k + 1), 2, runs=runs)


def test_impossible_requests_say_why():
    with pytest.raises(InfeasibleError, match="Bose-Bush") as err:
        orthogonal_array("3^8", runs=18)
    assert "smallest N" in err.value.hint
    with pytest.raises(InfeasibleError, match="Bush"):
        orthogonal_array("3^5", 3, runs=27)
    with pytest.raises(InfeasibleError, match="divisible by 9"):
        orthogonal_array("3^5", runs=24)
    with pytest.raises(HscaleError, match="either"):
        orthogonal_array("3^5", runs=18, lam=2)


def test_lambda_and_seed():
    assert orthogonal_array("3^5", lam=3).runs == 27
    assert orthogonal_array("3^4", 3, lam=2).runs == 54
    a = orthogonal_array("3^5", runs=18, seed=7).array
    b = orthogonal_array("3^5", runs=18, seed=7).array
    c = orthogonal_array("3^5", runs=18, seed=8).array
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert brute_strength_ok(c, 2, (3,) * 5)


def test_space_names_carry_through():
    design = orthogonal_array("3^5", runs=18, space=factor_space())
    assert design.labels[0].startswith("S") and len(design.labels) == 18
    with pytest.raises(HscaleError, match="levels"):
        orthogonal_array("3^4", runs=9, space=factor_space())


def test_huge_requests_are_refused_before_any_work():
    import time

    start = time.perf_counter()
    with pytest.raises(HscaleError, match="multiply-adds"):
        orthogonal_array("2^5000")  # the smallest N alone would take minutes to check
    with pytest.raises(HscaleError, match=r"OA\(about 10\^29; 3\^5\)"):
        orthogonal_array("3^5", runs=10**29)
    with pytest.raises(HscaleError, match="more than hscale handles"):
        orthogonal_array("2^100", strength=70)
    with pytest.raises(HscaleError, match="strength"):
        orthogonal_array("2^3", strength=0)
    assert time.perf_counter() - start < 2


def test_the_auto_search_is_a_step_count():
    """Without N the search gets a fixed number of steps per candidate N, never seconds."""
    design = orthogonal_array("3^5", 3)
    assert design.runs == 54 and design.method == "search_oa(steps=10000)"
    assert smallest_runs("3^5", 3) == 54  # the bound: nothing smaller can exist
    assert brute_strength_ok(design.array, 3, (3,) * 5)
    assert orthogonal_array("4^10").runs == 48
