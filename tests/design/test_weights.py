"""Weighted Hamming distances: metric properties, reduction to the plain distance, weighted
neighbourhoods against brute force, and the checks on the weights themselves."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.design import (
    FactorSpace,
    WeightError,
    by_name,
    distance_matrix,
    k_nearest,
    neighbours,
    parse_weights,
    resolve_weights,
    tie_key,
)

# internal: tests the weight validation steps
from hscale.design._weights import check_weights, normalised
from hscale.errors import HscaleError
from hscale.harness import factor_space
from tests.design.strategies import level_arrays

positive = st.floats(0.05, 20, allow_nan=False, allow_infinity=False)


@st.composite
def weighted_arrays(draw):
    array, levels = draw(level_arrays(max_rows=10, max_cols=5))
    weights = draw(st.lists(positive, min_size=len(levels), max_size=len(levels)))
    return array, levels, np.asarray(weights)


@settings(max_examples=80, deadline=None)
@given(level_arrays(max_rows=10, max_cols=5), positive)
def test_equal_weights_w_give_w_times_the_hamming_distance(data, w):
    array, levels = data
    plain = distance_matrix(array)
    weighted = distance_matrix(array, weights=[w] * len(levels))
    assert weighted.dtype == np.float64 and plain.dtype == np.int64
    np.testing.assert_allclose(weighted, w * plain, rtol=1e-12)
    # the same ties: rows at equal Hamming distance are at exactly equal weighted distance
    for i in range(len(array)):
        for d in np.unique(plain[i]):
            assert len(np.unique(tie_key(weighted[i][plain[i] == d]))) == 1


@settings(max_examples=80, deadline=None)
@given(weighted_arrays())
def test_weighted_distance_is_a_metric(data):
    array, _, weights = data
    d = distance_matrix(array, weights=weights)
    plain = distance_matrix(array)
    assert np.allclose(d, d.T) and (np.diag(d) == 0).all()
    assert ((d > 0) == (plain > 0)).all()  # zero exactly for equal configurations
    triangle = d[:, None, :] <= d[:, :, None] + d[None, :, :] + 1e-9  # d(a,c) <= d(a,b)+d(b,c)
    assert triangle.all()
    # bounded by the plain distance times the lightest and the heaviest weight
    assert (weights.min() * plain <= d + 1e-9).all() and (d <= weights.max() * plain + 1e-9).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(2, 4), min_size=1, max_size=4), st.data())
def test_weighted_neighbourhoods_match_brute_force(levels, data):
    space = FactorSpace.from_levels(levels)
    weights = np.asarray(data.draw(st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 0.25]),
                                            min_size=len(levels), max_size=len(levels))))
    radius = data.draw(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 2.75, 10.0]))
    idx = data.draw(st.integers(0, space.size - 1))
    dist = tie_key(distance_matrix(space.from_index(idx)[None, :], space.all_configs(),
                                   weights)[0])
    within = neighbours(space, idx, radius, exact=False, weights=weights)
    assert within.tolist() == np.flatnonzero(dist <= radius).tolist()
    at = neighbours(space, idx, radius, weights=weights)
    assert at.tolist() == np.flatnonzero(dist == radius).tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(2, 4), min_size=1, max_size=4), st.integers(0, 4), st.data())
def test_equal_weights_give_the_plain_neighbourhoods(levels, radius, data):
    space = FactorSpace.from_levels(levels)
    radius = min(radius, len(levels))
    idx = data.draw(st.integers(0, space.size - 1))
    w = data.draw(positive)
    for exact in (True, False):
        plain = neighbours(space, idx, radius, exact=exact)
        assert neighbours(space, idx, radius * w, exact=exact,
                          weights=[w] * len(levels)).tolist() == plain.tolist()


@settings(max_examples=60, deadline=None)
@given(weighted_arrays(), st.integers(0, 2**32 - 1))
def test_k_nearest_in_weighted_distance_comes_nearest_first(data, seed):
    array, _, weights = data
    anchor, candidates = array[0], array[1:]
    dist = tie_key(distance_matrix(anchor[None, :], candidates, weights)[0])
    available = int((dist > 0).sum())
    for k in range(1, available + 1):
        picks = k_nearest(anchor, candidates, k, np.random.default_rng(seed), weights=weights)
        assert len(set(picks.tolist())) == k and (dist[picks] > 0).all()
        assert (np.diff(dist[picks]) >= 0).all()  # nearest first
        rest = np.setdiff1d(np.flatnonzero(dist > 0), picks)
        assert not len(rest) or dist[rest].min() >= dist[picks].max()


def test_equal_weights_break_ties_as_the_plain_distance_does():
    space = factor_space()
    train = space.all_configs()[::7]
    for seed in range(20):
        plain = k_nearest(train[0], train, 5, np.random.default_rng(seed))
        weighted = k_nearest(train[0], train, 5, np.random.default_rng(seed), weights=[3.0] * 5)
        assert plain.tolist() == weighted.tolist()


def test_a_heavy_component_pushes_its_neighbours_away():
    space = factor_space()
    w = resolve_weights(space, {"C": 4.0})
    near = neighbours(space, space.base, 1.0, exact=False, weights=w)
    changed = space.from_index(near)
    assert (changed[:, 3] == 0).all()  # no C change within distance 1 (C weighs 4/1.6=2.5)
    assert len(near) == 1 + 8  # the base, and one change in each of the 4 light factors


def test_resolve_weights_names_missing_ones_and_normalises():
    space = factor_space()
    assert resolve_weights(space, None) is None and resolve_weights(space, {}) is None
    assert resolve_weights(space, {"C": 2.0, "S": 2.0, "T": 2, "O": 2, "W": 2}) is None
    assert resolve_weights(space, [0.5] * 5) is None
    w = resolve_weights(space, {"C": 2.0, "S": 0.5})
    assert w.mean() == pytest.approx(1.0)
    assert w.tolist() == pytest.approx(np.array([0.5, 1, 1, 2, 1]) / 1.1)
    aliases = {"context": "C", "system_prompt": "S"}
    assert resolve_weights(space, {"context": 2.0, "system_prompt": 0.5}, aliases).tolist() \
        == w.tolist()
    assert by_name(space, w) == dict(zip("STOCW", w.tolist(), strict=True))
    assert by_name(space, None) is None


@pytest.mark.parametrize("weights, needle, key", [
    ({"contxt": 2.0}, "did you mean 'context'", "contxt"),
    ({"Q": 2.0}, "components: S (system_prompt)", "Q"),
    ({"C": 0.0}, "positive finite", "C"),
    ({"C": -1}, "positive finite", "C"),
    ({"C": float("inf")}, "positive finite", "C"),
    ({"C": float("nan")}, "positive finite", "C"),
    ({"C": True}, "must be a number", "C"),
    ({"C": "2"}, "must be a number", "C"),
    ({"C": 2.0, "context": 3.0}, "twice", "context"),
])
def test_bad_weights_are_refused_with_the_key(weights, needle, key):
    aliases = {"context": "C", "system_prompt": "S"}
    with pytest.raises(WeightError) as info:
        resolve_weights(factor_space(), weights, aliases)
    assert needle in info.value.one_line() and info.value.key == key


def test_check_weights_wants_one_positive_number_per_factor():
    assert check_weights([1, 2.5], 2).tolist() == [1.0, 2.5]
    for bad in ([1.0], [1, 2, 3], [1, -2], [1, np.inf], [[1, 2]]):
        with pytest.raises(HscaleError):
            check_weights(bad, 2) if bad != [[1, 2]] else distance_matrix([[0, 1]], weights=[1])
    assert normalised(np.array([2.0, 2.0])) is None


def test_parse_weights_from_text_and_from_a_report_snippet(tmp_path):
    assert parse_weights("C=2, S=0.5") == {"C": 2.0, "S": 0.5}
    snippet = tmp_path / "weights.yaml"
    snippet.write_text("# estimated\nweights: {S: 0.5, C: 2}\n")
    assert parse_weights(str(snippet)) == {"S": 0.5, "C": 2}
    for bad in ("C", "C=x", "=2", ",", str(tmp_path / "missing.yaml")):
        with pytest.raises(HscaleError):
            parse_weights(bad)
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(WeightError, match="no weights mapping"):
        parse_weights(str(tmp_path / "list.yaml"))


def test_weighted_radius_must_be_a_number_and_listing_is_bounded():
    space = FactorSpace.from_levels("10^18")
    with pytest.raises(HscaleError, match="too many"):
        neighbours(space, [0] * 18, 5.0, exact=False, weights=[1.0] * 18)
    with pytest.raises(HscaleError, match=">= 0"):
        neighbours(space, [0] * 18, -1.0, weights=[1.0] * 18)
    with pytest.raises(HscaleError, match="radius must be"):
        neighbours(space, [0] * 18, 1.5)  # unweighted: a whole number
