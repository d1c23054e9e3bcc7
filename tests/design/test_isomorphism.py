from itertools import combinations, permutations, product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.design import are_isomorphic, classify, enumerate_oas, gwlp, is_orthogonal, min_distance

# internal: tests the canonical-form machinery
from hscale.design._isomorphism import canonical_form, invariant, to_graph
from hscale.errors import HscaleError
from tests.design.strategies import level_arrays


@pytest.fixture(scope="module")
def oa18_3_5():
    return enumerate_oas([3] * 5, 18)


def transform(arr, levels, rng):
    """A random isomorphic copy: permute rows, equal-level columns, and levels in each column."""
    arr = arr[rng.permutation(len(arr))]
    levels = np.asarray(levels)
    cols = np.arange(arr.shape[1])
    for s in set(levels.tolist()):
        idx = np.flatnonzero(levels == s)
        cols[idx] = rng.permutation(idx)
    arr = arr[:, cols]
    return np.column_stack([rng.permutation(levels[c])[arr[:, i]] for i, c in enumerate(cols)])


def brute_isomorphic(a, b, levels):
    """Try every column map (equal levels) and level relabelling; compare row multisets."""
    k = a.shape[1]
    target = sorted(map(tuple, b.tolist()))
    for cols in permutations(range(k)):
        if any(levels[c] != levels[i] for i, c in enumerate(cols)):
            continue
        for perms in product(*(permutations(range(levels[c])) for c in cols)):
            image = np.column_stack([np.array(p)[a[:, c]]
                                     for p, c in zip(perms, cols, strict=True)])
            if sorted(map(tuple, image.tolist())) == target:
                return True
    return False


def small_arrays(max_rows=8, max_cols=3):
    return level_arrays(max_rows, max_cols, 3)


@given(small_arrays(max_rows=10, max_cols=4), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_canonical_form_is_invariant_under_random_isomorphisms(case, seed):
    arr, levels = case
    moved = transform(arr, levels, np.random.default_rng(seed))
    assert np.array_equal(canonical_form(arr, levels), canonical_form(moved, levels))
    assert are_isomorphic(arr, moved, levels, levels)
    assert invariant(arr, levels) == invariant(moved, levels)


@given(small_arrays(), small_arrays())
@settings(max_examples=80, deadline=None)
def test_are_isomorphic_agrees_with_brute_force(case_a, case_b):
    (a, la), (b, lb) = case_a, case_b
    if a.shape != b.shape or sorted(la) != sorted(lb):
        assert not are_isomorphic(a, b, la, lb)
        return
    # put b's columns in a's level order so the brute force maps position to position
    order = sorted(range(len(lb)), key=lambda c: lb[c])
    b_sorted = b[:, order][:, np.argsort(np.argsort(la, kind="stable"), kind="stable")]
    expected = brute_isomorphic(a, b_sorted, la)
    assert are_isomorphic(a, b, la, lb) == expected
    assert are_isomorphic(a, b, la, lb, method="graph") == expected


@given(small_arrays(max_rows=6), st.data())
@settings(max_examples=40, deadline=None)
def test_one_changed_entry_is_detected_by_brute_force_agreement(case, data):
    arr, levels = case
    i = data.draw(st.integers(0, len(arr) - 1))
    j = data.draw(st.integers(0, arr.shape[1] - 1))
    other = arr.copy()
    other[i, j] = (other[i, j] + 1) % levels[j]
    assert are_isomorphic(arr, other, levels, levels) == brute_isomorphic(arr, other, levels)


def test_graph_has_row_column_and_level_nodes():
    arr = np.array([[0, 1, 0], [1, 0, 2], [1, 1, 1]])
    graph = to_graph(arr, [2, 2, 3])
    colors = [d["color"] for _, d in graph.nodes(data=True)]
    assert colors.count("row") == 3 and colors.count("level") == 7
    assert sorted(c for c in colors if c.startswith("col")) == ["col2", "col2", "col3"]
    assert graph.number_of_edges() == 3 * 3 + 7


def test_mixed_levels_columns_only_swap_within_their_level_count():
    a = np.array([[0, 0], [0, 1], [1, 2], [1, 0]])
    b = a[:, ::-1]
    assert are_isomorphic(a, a[[2, 0, 3, 1]], [2, 3], [2, 3])
    assert not are_isomorphic(a, b, [2, 3], [3, 3])
    assert are_isomorphic(a, b, [2, 3], [3, 2])


def test_unknown_method_is_a_user_error():
    a = np.array([[0, 1], [1, 0]])
    with pytest.raises(HscaleError):
        are_isomorphic(a, a, method="magic")


def test_classify_keeps_one_per_class(oa18_3_5):
    rng = np.random.default_rng(7)
    pool = [transform(a, [3] * 5, rng) for a in oa18_3_5[:4] for _ in range(3)]
    order = rng.permutation(len(pool))
    reps = classify([pool[i] for i in order], [3] * 5)
    assert len(reps) == 4
    assert all(not are_isomorphic(x, y) for x, y in combinations(reps, 2))


def test_ten_classes_of_oa18_3_5(oa18_3_5):
    assert len(oa18_3_5) == 10
    assert all(is_orthogonal(a, 2, [3] * 5) for a in oa18_3_5)
    assert len({canonical_form(a, [3] * 5).tobytes() for a in oa18_3_5}) == 10
    ranked = sorted(oa18_3_5, key=lambda a: tuple(gwlp(a, [3] * 5)))
    assert tuple(gwlp(ranked[0])) < tuple(gwlp(ranked[1]))
    assert [min_distance(a) for a in ranked] == [3] + [2] * 9
    assert gwlp(ranked[0], [3] * 5)[3:].tolist() == [5, 7.5, 0]


def test_small_counts_and_progress():
    calls = []
    assert len(enumerate_oas("3^3", 18, progress=lambda *a: calls.append(a))) == 4
    assert calls and calls[-1] == ("column 3 of 3", 1, 1)
    assert len(enumerate_oas([3] * 4, 18)) == 12
    assert len(enumerate_oas([2] * 11, 12)) == 1
    assert len(enumerate_oas([2] * 4, 8, strength=3)) == 1  # the half fraction x4 = x1+x2+x3
    assert enumerate_oas([3] * 3, 10) == []  # 10 is not a multiple of 9
    assert len(enumerate_oas([3] * 5, 9)) == 0  # at most 4 factors at 9 runs
    with pytest.raises(HscaleError):
        enumerate_oas([3] * 2, 18, strength=3)
    with pytest.raises(HscaleError):
        enumerate_oas([3] * 3, 18, strength=0)


def test_mixed_levels_enumeration():
    found = enumerate_oas("2^2,3^1", 12)
    assert found and all(is_orthogonal(a, 2, [2, 2, 3]) for a in found)
    assert len(classify(found, [2, 2, 3])) == len(found)


@pytest.mark.slow
def test_oa18_3_7_has_three_classes():
    found = enumerate_oas([3] * 7, 18)
    assert len(found) == 3
    assert all(is_orthogonal(a, 2, [3] * 7) for a in found)
