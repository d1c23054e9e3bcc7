from collections import Counter
from itertools import combinations, product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.design import (
    InfeasibleError,
    check_strength,
    difference_scheme,
    foldover,
    full_factorial,
    parse_levels,
    replicate,
)

# internal: tests each algebraic construction alone
from hscale.design._algebraic import (
    _paley2_matrix,
    addelman_kempthorne,
    bush,
    from_difference_scheme,
    hadamard_oa,
    linear_oa,
    projective_points,
    rao_hamming,
)

# internal: tests the array operations recipes compose
from hscale.design._arrays import collapse, expand, foldover_join

# internal: tests Galois-field arithmetic directly
from hscale.design._gf import GF

# internal: tests the construction planner's table
from hscale.design._planning import constructions

# internal: tests the OA search itself
from hscale.design._search import search_oa
from hscale.errors import HscaleError

PRIME_POWERS = [2, 3, 4, 5, 7, 8, 9]
ODD_PRIME_POWERS = [3, 5, 7, 9, 11, 13]


def levels_of(arr):
    return [int(arr[:, j].max()) + 1 for j in range(arr.shape[1])]


def brute_ok(arr, t, levels=None):
    """Every t columns hold every level combination N / prod(levels) times (plain counting)."""
    levels = levels or levels_of(arr)
    n = len(arr)
    for cols in combinations(range(arr.shape[1]), t):
        cells = list(product(*(range(levels[c]) for c in cols)))
        counts = Counter(tuple(int(v) for v in row[list(cols)]) for row in arr)
        if any(counts.get(cell, 0) * len(cells) != n for cell in cells):
            return False
    return True


def assert_oa(arr, runs, levels, t):
    levels = tuple(levels)
    assert arr.dtype == np.int64 and arr.shape == (runs, len(levels))
    assert levels_of(arr) == list(levels)
    report = check_strength(arr, t, levels)
    assert report.ok, report.summary()


# --- full factorial, Rao-Hamming, Bush ---------------------------------------------------


def test_full_factorial_first_column_slowest():
    ff = full_factorial((2, 3))
    assert ff.tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    assert_oa(full_factorial((2, 3, 4)), 24, (2, 3, 4), 3)


def test_projective_points_are_normalised_and_distinct():
    pts = projective_points(3, 3)
    assert len(pts) == 13 and len({tuple(p) for p in pts}) == 13
    assert all(p[np.flatnonzero(p)[0]] == 1 for p in pts)


@pytest.mark.parametrize("q,n", [(2, 2), (2, 3), (2, 4), (3, 2), (3, 3), (4, 2), (4, 3), (5, 2),
                                 (7, 2), (8, 2), (9, 2), (3, 4)])
def test_rao_hamming(q, n):
    arr = rao_hamming(q, n)
    assert_oa(arr, q**n, (q,) * ((q**n - 1) // (q - 1)), 2)
    if q**n <= 81:
        assert brute_ok(arr, 2)


def test_rao_hamming_is_not_strength_3():
    arr = rao_hamming(3, 3)
    assert not check_strength(arr, 3).ok and not brute_ok(arr[:, :5], 3)


@pytest.mark.parametrize("q,t,k", [(3, 2, 4), (3, 3, 4), (4, 3, 6), (4, 4, 5), (5, 3, 6),
                                   (5, 4, 6), (8, 3, 10), (2, 3, 4), (7, 3, 8), (9, 3, 10)])
def test_bush(q, t, k):
    arr = bush(q, t)
    assert_oa(arr, q**t, (q,) * k, t)
    if q**t <= 625:
        assert brute_ok(arr, t)


# --- Addelman-Kempthorne and difference schemes -------------------------------------------


# (q, n, t, least k): arcs (n = t = 3) reach q + 1, caps in PG(3, q) at least 8 for q = 3,
# binary caps 2^(n-1); two-level strength 4 and 5 at least n + 1 (the parity vector).
LINEAR = [(2, 4, 3, 8), (2, 5, 3, 16), (2, 4, 4, 5), (2, 6, 4, 7), (2, 7, 5, 8), (3, 3, 3, 4),
          (3, 4, 3, 8), (4, 3, 3, 5), (4, 4, 3, 10), (5, 3, 3, 6), (5, 4, 3, 7), (7, 3, 3, 8),
          (8, 3, 3, 9), (9, 3, 3, 10), (3, 5, 4, 6), (4, 4, 4, 5)]


@pytest.mark.parametrize("q,n,t,least", LINEAR)
def test_linear_oa(q, n, t, least):
    arr = linear_oa(q, n, t)
    k = arr.shape[1]
    assert k >= least
    assert_oa(arr, q**n, (q,) * k, t)


def test_linear_oa_column_counts_are_near_the_known_maxima():
    assert linear_oa(3, 4, 3).shape[1] == 10  # the largest cap in PG(3, 3) has 10 points
    assert linear_oa(5, 4, 3).shape[1] == 26  # ... in PG(3, 5), 26 (an elliptic quadric)
    assert linear_oa(8, 3, 3).shape[1] == 10  # a hyperoval: q + 2 for even q
    assert linear_oa(2, 5, 3).shape[1] == 16  # binary caps: at most 2^(n-1)


@pytest.mark.parametrize("q,n,t", [(2, 4, 4), (3, 4, 3), (4, 3, 3), (2, 6, 4)])
def test_linear_oa_by_plain_counting(q, n, t):
    arr = linear_oa(q, n, t)
    assert brute_ok(arr, t, [q] * arr.shape[1])


def test_linear_oa_k_seed_and_strength_2():
    assert linear_oa(5, 4, 3, k=7).shape == (625, 7)
    assert np.array_equal(linear_oa(3, 5, 3, seed=5), linear_oa(3, 5, 3, seed=5))
    assert check_strength(linear_oa(3, 5, 3, seed=7), 3).ok
    assert np.array_equal(linear_oa(3, 3, 2), rao_hamming(3, 3))  # every point: Rao-Hamming
    with pytest.raises(HscaleError) as err:
        linear_oa(3, 5, 3, k=400)
    assert "k=400" in err.value.message and "seed" in err.value.hint
    with pytest.raises(HscaleError) as err:  # an ovoid is the largest cap: no seed does better
        linear_oa(3, 4, 3, k=40)
    assert "ovoid" in err.value.message and "seed" not in err.value.hint


@pytest.mark.parametrize("q", [3, 5, 7, 9, 11])
def test_addelman_kempthorne(q):
    arr = addelman_kempthorne(q)
    assert_oa(arr, 2 * q * q, (q,) * (2 * q + 1), 2)
    if q <= 5:
        assert brute_ok(arr, 2)


def test_addelman_kempthorne_q3_is_oa18_with_lambda_2():
    arr = addelman_kempthorne(3)
    pair = Counter(map(tuple, arr[:, [1, 5]].tolist()))
    assert set(pair.values()) == {2} and len(pair) == 9


def scheme_ok(d, s):
    f = GF(s)
    r = d.shape[0]
    for a, b in combinations(range(d.shape[1]), 2):
        diffs = Counter(int(f.sub[x, y]) for x, y in zip(d[:, a], d[:, b], strict=True))
        if sorted(diffs.values()) != [r // s] * s:
            return False
    return True


@pytest.mark.parametrize("r,c,s", [(3, 3, 3), (4, 4, 4), (6, 6, 3), (4, 4, 2), (8, 8, 2),
                                   (10, 10, 5), (18, 18, 3), (12, 12, 3), (12, 12, 2),
                                   (8, 8, 4), (6, 4, 3)])
def test_difference_schemes(r, c, s):
    d = difference_scheme(r, c, s, steps=500_000)
    assert d is not None and d.shape == (r, c) and scheme_ok(d, s)
    arr = from_difference_scheme(d, s)
    assert_oa(arr, r * s, (r,) + (s,) * c, 2)


def test_difference_scheme_that_cannot_exist_is_not_found():
    # D(6, 6; 2) would be a Hadamard matrix of order 6: the search proves there is none
    assert difference_scheme(6, 6, 2, steps=500_000) is None


def test_l18_from_difference_scheme_and_expansion():
    oa = from_difference_scheme(difference_scheme(6, 6, 3), 3)
    l18 = expand(oa, 0, full_factorial((2, 3)))
    assert_oa(l18, 18, (2, 3, 3, 3, 3, 3, 3, 3), 2)
    assert brute_ok(l18, 2)


@pytest.mark.parametrize("n", [4, 8, 12, 16, 20, 24, 28, 36, 40, 44, 52, 100])
def test_hadamard_oa(n):
    arr = hadamard_oa(n)
    assert_oa(arr, n, (2,) * (n - 1), 2)
    if n <= 20:
        assert brute_ok(arr, 2)


@pytest.mark.parametrize("q", [5, 9, 13, 17, 25, 29, 37, 49])
def test_paley_ii_is_hadamard(q):
    """Paley II, order 2(q + 1) for q = 1 mod 4 (prime or not): H H^T = n I."""
    n = 2 * (q + 1)
    h = _paley2_matrix(q)
    assert h.shape == (n, n) and set(np.unique(h)) == {-1, 1}
    assert (h @ h.T == n * np.eye(n, dtype=np.int64)).all() and (h[:, 0] == 1).all()


# --- operations ----------------------------------------------------------------------------


def test_replicate_collapse_expand_foldover_examples():
    base = rao_hamming(4, 2)
    assert_oa(replicate(base, 3), 48, (4,) * 5, 2)
    assert_oa(collapse(base, 2, 2), 16, (4, 4, 2, 4, 4), 2)
    expanded = expand(base, 1, rao_hamming(2, 2))
    assert_oa(expanded, 16, (4, 2, 2, 2, 4, 4, 4), 2)
    folded = foldover(rao_hamming(2, 3), extra_column=True)
    assert_oa(folded, 16, (2,) * 8, 3)
    assert brute_ok(folded, 3)


def test_foldover_join_gives_oa24_3_2_16():
    small = search_oa((3, 2, 2, 2, 2), 12)
    arr = foldover_join(small, hadamard_oa(12))
    assert_oa(arr, 24, (3,) + (2,) * 16, 2)
    assert brute_ok(arr, 2)


# --- the search fallback --------------------------------------------------------------------


@pytest.mark.parametrize("levels,runs,t", [("2^11", 12, 2), ("3^1,2^4", 12, 2), ("2^7", 8, 2),
                                           ("2^8", 16, 3), ("3^7", 18, 2), ("2^1,3^7", 18, 2),
                                           ("4^5", 16, 2), ("5^1,2^8", 20, 2)])
def test_search_finds_small_arrays(levels, runs, t):
    lv = parse_levels(levels)
    arr = search_oa(lv, runs, t, steps=1_000_000)
    assert arr is not None
    assert_oa(arr, runs, lv, t)
    assert brute_ok(arr, t)


def test_search_is_reproducible_and_proves_impossible_cases():
    a = search_oa((2,) * 11, 12, seed=3)
    assert a is not None and (a == search_oa((2,) * 11, 12, seed=3)).all()
    assert search_oa((2,) * 12, 12, steps=1_000_000) is None  # Plackett-Burman is maximal
    assert search_oa((3, 3), 10) is None  # 9 does not divide 10


# --- constructions -------------------------------------------------------------------------

REQUIRED = [("3^5", 2, 18), ("3^7", 2, 18), ("3^13", 2, 27), ("3^40", 2, 81), ("5^6", 2, 25),
            ("7^8", 2, 49), ("2^15", 2, 16), ("4^21", 2, 64), ("3^4", 3, 27), ("4^5", 2, 16),
            ("2^7", 2, 8), ("2^1,3^7", 2, 18), ("3^4", 2, 36), ("3^7", 2, 36), ("2^11", 2, 12),
            ("2^31", 2, 32), ("5^31", 2, 125), ("3^4", 2, 9), ("5^11", 2, 50), ("2^8", 3, 16),
            ("3^1,2^16", 2, 24), ("2^1,5^11", 2, 50), ("2^3,4^4", 2, 16)]


def first_verified(lv, t, runs):
    for method, arr in constructions(lv, t, runs):
        assert arr.shape == (runs, len(lv))
        assert all(arr[:, j].max() < s for j, s in enumerate(lv)) and arr.min() >= 0
        if check_strength(arr, t, lv).ok:
            return method, arr
    return None


@pytest.mark.parametrize("levels,t,runs", REQUIRED)
def test_candidates_build_the_required_arrays(levels, t, runs):
    lv = parse_levels(levels)
    found = first_verified(lv, t, runs)
    assert found is not None
    assert_oa(found[1], runs, lv, t)


@pytest.mark.parametrize("levels,runs,method", [("5^7", 625, "ovoid(q=5)"),
                                                ("5^26", 625, "ovoid(q=5)"),
                                                ("3^8", 81, "ovoid(q=3)"),
                                                ("2^8", 16, "linear(q=2,n=4,t=3)"),
                                                ("2^6", 32, "linear(q=2,n=5,t=4)")])
def test_candidates_build_linear_arrays_of_strength_3_and_more(levels, runs, method):
    lv = parse_levels(levels)
    t = 4 if method.endswith("t=4)") else 3
    found = first_verified(lv, t, runs)
    assert found is not None and found[0].startswith(method)
    assert_oa(found[1], runs, lv, t)


def test_orthogonal_array_5_7_strength_3():
    from hscale.design import orthogonal_array

    design = orthogonal_array("5^7", 3)
    assert design.method.startswith("ovoid(") and check_strength(design.array, 3).ok


def test_candidate_methods_are_informative():
    assert first_verified((3,) * 5, 2, 18)[0] == "addelman_kempthorne(q=3)[cols 0,1,2,3,4]"
    assert first_verified((3,) * 40, 2, 81)[0] == "rao_hamming(q=3,n=4)"
    assert first_verified((3,) * 4, 3, 27)[0] == "bush(q=3,t=3)"
    assert first_verified((2,) + (3,) * 7, 2, 18)[0].startswith("from_difference_scheme(D(6,6;3))")


def test_candidates_follow_the_requested_column_order():
    lv = (3, 2, 3, 3, 3, 3, 3, 3)
    method, arr = first_verified(lv, 2, 18)
    assert levels_of(arr) == list(lv)


def test_candidates_for_an_impossible_request_are_all_rejected():
    lv = (3, 3) + (2,) * 10  # 9 does not divide 24
    assert first_verified(lv, 2, 24) is None


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda: rao_hamming(6, 2),
    lambda: rao_hamming(3, 1),
    lambda: bush(3, 4),
    lambda: bush(6, 2),
    lambda: addelman_kempthorne(4),
    lambda: addelman_kempthorne(6),
    lambda: difference_scheme(5, 5, 3),
    lambda: difference_scheme(6, 6, 6),
    lambda: collapse(rao_hamming(3, 2), 0, 2),
    lambda: collapse(rao_hamming(3, 2), 7, 3),
    lambda: expand(rao_hamming(3, 2), 0, full_factorial((2, 2))),
    lambda: foldover(rao_hamming(3, 2)),
    lambda: replicate(rao_hamming(2, 2), 0),
    lambda: search_oa((2, 2), 4, strength=3),
    lambda: hadamard_oa(92),
    lambda: full_factorial((2, 1)),
    lambda: linear_oa(3, 2, 3),
    lambda: linear_oa(6, 3, 3),
    lambda: linear_oa(3, 3, 1),
    lambda: linear_oa(2, 20, 3),
    lambda: linear_oa(5, 4, 3, k=100),
    lambda: next(constructions((3, 1), 2, 9)),
])
def test_bad_parameters_raise_user_errors(call):
    with pytest.raises(HscaleError) as err:
        call()
    assert err.value.message


def test_error_messages_name_values_and_hints():
    with pytest.raises(HscaleError) as err:
        rao_hamming(6, 2)
    assert "6" in err.value.message and "prime power" in err.value.hint
    with pytest.raises(InfeasibleError, match="c > r"):
        difference_scheme(6, 7, 3)


# --- properties ----------------------------------------------------------------------------


@st.composite
def rao_hamming_params(draw):
    q = draw(st.sampled_from(PRIME_POWERS))
    n = draw(st.integers(2, 4 if q <= 3 else 3 if q <= 9 else 2))
    return q, n


@settings(max_examples=25, deadline=None)
@given(rao_hamming_params(), st.data())
def test_rao_hamming_and_column_subsets_verify(params, data):
    q, n = params
    arr = rao_hamming(q, n)
    assert check_strength(arr, 2).ok
    k = arr.shape[1]
    cols = data.draw(st.lists(st.integers(0, k - 1), min_size=2, max_size=min(k, 6), unique=True))
    assert check_strength(arr[:, cols], 2).ok and brute_ok(arr[:, cols], 2)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(PRIME_POWERS), st.integers(2, 4))
def test_bush_verifies_at_its_strength(q, t):
    if (t > q and not (q % 2 == 0 and t == 3)) or q**t > 2500:
        return
    arr = bush(q, t)
    assert check_strength(arr, t).ok


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(ODD_PRIME_POWERS))
def test_addelman_kempthorne_verifies(q):
    arr = addelman_kempthorne(q)
    assert arr.shape == (2 * q * q, 2 * q + 1) and check_strength(arr, 2).ok


BASES = {
    "rh(2,3)": lambda: rao_hamming(2, 3),
    "rh(3,2)": lambda: rao_hamming(3, 2),
    "rh(4,2)": lambda: rao_hamming(4, 2),
    "bush(3,3)": lambda: bush(3, 3),
    "ak(3)": lambda: addelman_kempthorne(3),
    "ds(6,6;3)": lambda: from_difference_scheme(difference_scheme(6, 6, 3), 3),
}
STRENGTH = {"bush(3,3)": 3}


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(BASES)), st.integers(1, 4))
def test_replicate_keeps_strength(name, lam):
    t = STRENGTH.get(name, 2)
    arr = replicate(BASES[name](), lam)
    assert check_strength(arr, t).ok and len(arr) % lam == 0


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(BASES)), st.data())
def test_collapse_keeps_strength(name, data):
    base = BASES[name]()
    t = STRENGTH.get(name, 2)
    col = data.draw(st.integers(0, base.shape[1] - 1))
    n_levels = levels_of(base)[col]
    d = data.draw(st.sampled_from([d for d in range(2, n_levels + 1) if n_levels % d == 0]))
    arr = collapse(base, col, d)
    assert levels_of(arr)[col] == d and check_strength(arr, t).ok


SUBS = {4: [lambda: rao_hamming(2, 2)], 6: [lambda: full_factorial((2, 3)),
                                           lambda: full_factorial((3, 2))],
        9: [lambda: rao_hamming(3, 2)]}


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["rh(4,2)", "ds(6,6;3)", "rh(2,3)"]), st.data())
def test_expand_keeps_strength_2(name, data):
    base = BASES[name]()
    cols = [c for c, s in enumerate(levels_of(base)) if s in SUBS]
    if not cols:
        return
    col = data.draw(st.sampled_from(cols))
    sub = data.draw(st.sampled_from(SUBS[levels_of(base)[col]]))()
    arr = expand(base, col, sub)
    assert arr.shape[1] == base.shape[1] + sub.shape[1] - 1 and check_strength(arr, 2).ok


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["rh", "hadamard"]), st.integers(2, 4), st.booleans(), st.data())
def test_foldover_gives_strength_3(kind, n, extra, data):
    base = rao_hamming(2, n) if kind == "rh" else hadamard_oa(4 * n)
    k = base.shape[1]
    cols = data.draw(st.lists(st.integers(0, k - 1), min_size=3, max_size=min(k, 7), unique=True))
    arr = foldover(base[:, cols], extra_column=extra)
    assert check_strength(arr, 3).ok and brute_ok(arr, 3)


def test_searches_take_a_step_count_not_seconds():
    with pytest.raises(TypeError):
        search_oa((2,) * 7, 8, time_limit=1.0)  # noqa -- the wall-clock budget is gone
    with pytest.raises(HscaleError, match="steps"):
        difference_scheme(12, 12, 4, steps=-1)
    assert difference_scheme(12, 12, 4, steps=0) is None
    assert search_oa((6,) * 5, 72, steps=10_000) is not None
    assert search_oa((6,) * 5, 72, steps=100) is None
