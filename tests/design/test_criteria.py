from itertools import combinations, product
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.design import (
    FactorSpace,
    covering_radius,
    distance_distribution,
    distance_range,
    gwlp,
    min_distance,
)

# internal: tests the ranking criteria's internals
from hscale.design._criteria import CRITERIA, rank_key, summary
from hscale.errors import HscaleError
from hscale.harness import factor_space
from tests.design.strategies import level_arrays


def contrasts(size):
    """Orthonormal contrasts (size x size-1), scaled so each squared column sums to ``size``."""
    basis = np.vander(np.arange(size), size, increasing=True).astype(float)
    q, _ = np.linalg.qr(basis)
    return q[:, 1:] * np.sqrt(size)


def brute_gwlp(arr, levels):
    """A_j = N^-2 sum over j-column subsets of the squared column sums of the contrast products."""
    n, k = arr.shape
    mats = [contrasts(s)[arr[:, i]] for i, s in enumerate(levels)]
    out = np.zeros(k + 1)
    out[0] = 1.0
    for j in range(1, k + 1):
        for cols in combinations(range(k), j):
            model = np.ones((n, 1))
            for c in cols:
                model = (model[:, :, None] * mats[c][:, None, :]).reshape(n, -1)
            out[j] += (model.sum(axis=0) ** 2).sum() / n**2
    return out


def brute_distances(arr):
    k = arr.shape[1]
    counts = np.zeros(k + 1, dtype=int)
    for a, b in combinations(range(len(arr)), 2):
        counts[int((arr[a] != arr[b]).sum())] += 1
    return counts


def arrays(max_rows=12, max_cols=4):
    return level_arrays(max_rows, max_cols, 4)


def oa9():
    """OA(9; 3^4) from the lines x, y, x+y, x+2y over Z_3: strength 2, distance 3 apart."""
    x, y = np.divmod(np.arange(9), 3)
    return np.column_stack([x, y, (x + y) % 3, (x + 2 * y) % 3])


@given(arrays())
@settings(max_examples=60, deadline=None)
def test_gwlp_matches_contrast_brute_force(case):
    arr, levels = case
    assert np.allclose(gwlp(arr, levels), brute_gwlp(arr, levels), atol=1e-9)


@given(arrays())
@settings(max_examples=40, deadline=None)
def test_gwlp_sum_counts_coincident_pairs(case):
    # z = 1 in the generating function: sum_j A_j = prod(L) / N^2 * #(ordered identical pairs)
    arr, levels = case
    same = int((arr[:, None, :] == arr[None, :, :]).all(axis=2).sum())
    assert gwlp(arr, levels).sum() == pytest.approx(np.prod(levels) * same / len(arr) ** 2)


def test_gwlp_of_strength_t_arrays_starts_with_t_zeros():
    full = np.array(list(product(range(2), range(3), range(2))))
    assert gwlp(full, [2, 3, 2]).tolist() == [1, 0, 0, 0]
    a = gwlp(oa9(), [3] * 4)
    assert a[0] == 1 and a[1] == 0 and a[2] == 0 and a[3:].sum() > 0
    half = full[full[:, 0] == full[:, 2]]  # 6 runs: strength 1 only (columns 0 and 2 alias)
    g = gwlp(half, [2, 3, 2])
    assert g[1] == 0 and g[2] > 0


def test_gwlp_known_value_of_the_zero_sum_fraction():
    arr = np.array([r for r in product(range(3), repeat=3) if sum(r) % 3 == 0])
    assert gwlp(arr, [3, 3, 3]).tolist() == [1, 0, 0, 2]


def test_gwlp_infers_levels_and_handles_repeated_rows():
    arr = np.repeat(oa9()[:, :3], 2, axis=0)
    assert gwlp(arr).tolist() == gwlp(arr, [3, 3, 3]).tolist()
    part = arr[:5]  # rows repeat and levels go unused: not an OA, A_1 > 0
    assert gwlp(part, [3, 3, 3]) == pytest.approx(brute_gwlp(part, [3, 3, 3]))
    assert gwlp(part, [3, 3, 3])[1] > 0


@given(arrays(), st.data())
@settings(max_examples=40, deadline=None)
def test_gwlp_is_invariant_under_isomorphism(case, data):
    arr, levels = case
    rows = data.draw(st.permutations(range(len(arr))))
    cols = data.draw(st.permutations(range(arr.shape[1])))
    moved = arr[list(rows)][:, list(cols)]
    relabel = [np.array(data.draw(st.permutations(range(levels[c])))) for c in cols]
    moved = np.column_stack([relabel[i][moved[:, i]] for i in range(len(cols))])
    assert np.allclose(gwlp(moved, [levels[c] for c in cols]), gwlp(arr, levels))


@given(arrays(max_rows=15, max_cols=5))
@settings(max_examples=60, deadline=None)
def test_distance_distribution_matches_brute_force(case):
    arr, _ = case
    dd = distance_distribution(arr)
    assert dd.tolist() == brute_distances(arr).tolist()
    assert dd.sum() == comb(len(arr), 2)
    present = np.flatnonzero(dd)
    assert distance_range(arr) == (present[0], present[-1])
    assert min_distance(arr) == present[0]


def test_distances_of_small_designs():
    assert distance_distribution(oa9()).tolist() == [0, 0, 0, 36, 0]
    assert distance_range(oa9()) == (3, 3)
    twice = np.vstack([oa9(), oa9()[:1]])
    assert min_distance(twice) == 0
    with pytest.raises(HscaleError):
        distance_range(oa9()[:1])


def brute_covering(arr, levels):
    best = 0
    for cfg in product(*(range(s) for s in levels)):
        best = max(best, int((arr != np.array(cfg)).sum(axis=1).min()))
    return best


@given(arrays(max_rows=8, max_cols=4))
@settings(max_examples=40, deadline=None)
def test_covering_radius_matches_brute_force(case):
    arr, levels = case
    assert covering_radius(arr, levels) == brute_covering(arr, levels)


def test_covering_radius_extremes():
    full = np.array(list(product(range(3), range(2), range(3))))
    assert covering_radius(full, [3, 2, 3]) == 0
    assert covering_radius(full[:1], [3, 2, 3]) == 3
    assert covering_radius(np.zeros((1, 5), dtype=int), factor_space()) == 5
    assert covering_radius(oa9(), "3^4") == 1  # a perfect code: every config within 1 of a run


def test_covering_radius_refuses_huge_spaces():
    with pytest.raises(HscaleError) as info:
        covering_radius(np.zeros((2, 15), dtype=int), [3] * 15)
    assert info.value.hint


def test_summary_and_ranking():
    info = summary(oa9(), FactorSpace.from_levels("3^4"))
    assert info["strength"] == 2 and info["runs"] == 9 and info["levels"] == [3] * 4
    assert (info["min_distance"], info["max_distance"], info["covering_radius"]) == (3, 3, 1)
    assert info["distance_distribution"] == [0, 0, 0, 36, 0]
    worse = summary(np.vstack([oa9()[:8], [0, 0, 0, 1]]), [3] * 4)
    assert worse["strength"] < 2
    for name in CRITERIA:
        assert rank_key(info, name) <= rank_key(worse, name)
    assert rank_key(info, "gwlp") < rank_key(worse, "gwlp")
    assert rank_key(info, ["min_distance", "gwlp"]) < rank_key(worse, ["min_distance", "gwlp"])
    big = summary(np.zeros((2, 15), dtype=int), [3] * 15)
    assert big["covering_radius"] is None
    with pytest.raises(HscaleError) as info_err:
        rank_key(info, "nonsense")
    assert "gwlp" in info_err.value.hint
