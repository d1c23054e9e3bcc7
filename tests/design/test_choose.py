from itertools import combinations, product

import numpy as np
import pytest

from hscale.design import (
    are_isomorphic,
    candidates,
    enumerate_oas,
    gwlp,
    is_orthogonal,
    min_distance,
    normalize_to_contain,
    place,
)

# internal: tests the chooser's internals
from hscale.design._choose import contains

# internal: tests the ranking criteria's internals
from hscale.design._criteria import rank_key
from hscale.errors import HscaleError
from hscale.harness import factor_space

H0 = [0, 0, 0, 0, 0]


@pytest.fixture(scope="module")
def listed():
    return candidates("3^5", 18)


@pytest.fixture(scope="module")
def parent():
    """An OA(18; 3^7) whose 5-column projections include the best OA(18; 3^5)."""
    try:
        # internal: tests each algebraic construction alone
        from hscale.design._algebraic import addelman_kempthorne
    except ImportError:  # the construction lives in a sibling module; enumeration also works
        addelman_kempthorne = None
    if addelman_kempthorne is not None:
        return addelman_kempthorne(3)
    return max(enumerate_oas([3] * 7, 18),
               key=lambda a: max(min_distance(a[:, list(c)]) for c in combinations(range(7), 5)))


@pytest.fixture(scope="module")
def eval_set(listed):
    """18 held-out configs: the best OA shifted by 1 in every factor (a translate of an OA)."""
    return (listed[0].array + 1) % 3


def test_contains_and_normalize(listed):
    arr = listed[3].array
    rng = np.random.default_rng(3)
    for _ in range(10):
        cfg = rng.integers(0, 3, 5)
        out = normalize_to_contain(arr, cfg)
        assert contains(out, cfg)
        assert are_isomorphic(out, arr)
        assert is_orthogonal(out, 2, [3] * 5)
        nearest = (arr != cfg).sum(axis=1).min()
        changed = int((out != arr).any(axis=0).sum())
        assert changed == nearest  # only the columns that had to change
    out = normalize_to_contain(arr, H0, row=5)
    assert out[5].tolist() == H0
    assert not contains(np.ones((2, 5), dtype=int), H0)
    with pytest.raises(HscaleError):
        normalize_to_contain(arr, [0, 0, 3, 0, 0])
    with pytest.raises(HscaleError):
        normalize_to_contain(arr, H0, row=18)


def test_candidates_have_stable_ids_and_criteria(listed):
    assert [c.id for c in listed] == [f"OA18.3^5#{i}" for i in range(1, 11)]
    assert [c.summary["min_distance"] for c in listed] == [3] + [2] * 9
    keys = [rank_key(c.summary, "gwlp") for c in listed]
    assert keys == sorted(keys)
    for c in listed:
        assert is_orthogonal(c.array, 2, [3] * 5)
        assert gwlp(c.array).tolist() == pytest.approx(c.summary["gwlp"])
    by_radius = candidates("3^5", 18, criterion="covering_radius")
    assert sorted(c.id for c in by_radius) == sorted(c.id for c in listed)
    radii = [c.summary["covering_radius"] for c in by_radius]
    assert radii == sorted(radii)
    by_distance = candidates([3] * 5, 18, criterion=["min_distance", "gwlp"])
    assert by_distance[0].id == "OA18.3^5#1"
    again = {c.id: c.array.tobytes() for c in candidates("3^5", 18)}
    assert again == {c.id: c.array.tobytes() for c in listed}


def test_candidates_keep_the_given_level_order():
    found = candidates("3^1,2^2", 12)
    assert found and all(c.id.startswith("OA12.3^1,2^2#") for c in found)
    for c in found:
        assert c.array[:, 0].max() == 2 and c.array[:, 1:].max() == 1
        assert is_orthogonal(c.array, 2, [3, 2, 2])


def test_place_contains_h0_avoids_eval_set_and_stays_orthogonal(parent, eval_set):
    found = place(parent, 5, include=[H0], exclude=eval_set)
    assert len(found) == 21  # one placement per 5-column subset of 7
    held_out = {tuple(r) for r in eval_set.tolist()}
    keys = [p.key for p in found]
    assert keys == sorted(keys)
    assert found[0].summary["min_distance"] == 3
    for p in found:
        assert contains(p.array, H0)
        assert not held_out & {tuple(r) for r in p.array.tolist()}
        assert is_orthogonal(p.array, 2, [3] * 5)
        rebuilt = np.column_stack([np.array(perm)[parent[:, c]]
                                   for c, perm in zip(p.columns, p.permutations, strict=True)])
        assert np.array_equal(rebuilt, p.array)
        assert "factor 0 <- column" in p.describe()


def test_place_keeps_a_parent_that_already_fits(listed):
    arr = normalize_to_contain(listed[4].array, H0)
    for include in ([H0], None):
        found = place(arr, 5, include=include)
        assert len(found) == 1
        assert found[0].columns == (0, 1, 2, 3, 4)
        assert found[0].permutations == ((0, 1, 2),) * 5
        assert np.array_equal(found[0].array, arr)


def test_place_with_a_factor_space_and_several_per_subset(parent, eval_set):
    found = place(parent, factor_space(), include=[H0], exclude=eval_set, per_subset=3,
                  max_subsets=4, rng=np.random.default_rng(1))
    assert 0 < len(found) <= 12
    assert all(contains(p.array, H0) for p in found)
    again = place(parent, factor_space(), include=[H0], exclude=eval_set, per_subset=3,
                  max_subsets=4, rng=np.random.default_rng(1))
    assert [p.array.tobytes() for p in found] == [p.array.tobytes() for p in again]


def test_place_samples_large_searches(parent):
    rng = np.random.default_rng(0)
    exclude = rng.integers(0, 3, (30, 7))
    found = place(parent, 7, include=[[0] * 7, [1] * 6 + [0]], exclude=exclude, max_tries=20_000,
                  rng=rng)
    assert len(found) == 1
    held_out = {tuple(r) for r in exclude.tolist()}
    assert contains(found[0].array, [0] * 7) and contains(found[0].array, [1] * 6 + [0])
    assert not held_out & {tuple(r) for r in found[0].array.tolist()}
    assert is_orthogonal(found[0].array, 2, [3] * 7)


def test_place_reports_what_cannot_be_satisfied(parent):
    # no OA(18; 3^5) has two runs at Hamming distance 1
    with pytest.raises(HscaleError, match="included") as info:
        place(parent, 5, include=[H0, [0, 0, 0, 0, 1]])
    assert info.value.hint
    everything_else = [c for c in product(range(3), repeat=5) if any(c)]
    with pytest.raises(HscaleError, match="excluded"):
        place(parent, 5, include=[H0], exclude=everything_else)
    with pytest.raises(HscaleError, match="both included and excluded"):
        place(parent, 5, include=[H0], exclude=[H0])
    with pytest.raises(HscaleError, match="columns with 2 levels"):
        place(parent, "2^1,3^4")
    with pytest.raises(HscaleError):
        place(parent, 5, include=[[0, 0, 0, 0, 3]])
    with pytest.raises(HscaleError, match="mixed levels"):
        place(np.column_stack([parent, np.arange(18) % 2]), 3)


def test_shipped_class_catalogue_matches_a_fresh_enumeration():
    """The catalogue that spares users the enumeration holds exactly the real classes."""
    from hscale.design import are_isomorphic, enumerate_oas

    # internal: tests the chooser's internals
    from hscale.design._choose import _shipped_classes

    for levels in [(3,) * 3, (3,) * 4, (3,) * 5]:
        shipped = _shipped_classes(levels, 18, 2)
        fresh = enumerate_oas(levels, 18, 2)
        assert shipped is not None and len(shipped) == len(fresh)
        for rep in fresh:
            assert sum(are_isomorphic(rep, s) for s in shipped) == 1
