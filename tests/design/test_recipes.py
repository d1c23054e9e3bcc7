import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.design import (
    RECIPES,
    FactorSpace,
    distance_matrix,
    distance_range,
    eval_set,
    first_order,
    full,
    is_orthogonal,
    random_n,
    recipe,
    single,
    structured,
)
from hscale.errors import HscaleError
from hscale.harness import factor_space

SPACE = factor_space()


def idx(design):
    return set(design.indices.tolist())


def test_single_and_full():
    assert single(SPACE).labels == ["S0-T0-O0-C0-W0"]
    everything = full(SPACE)
    assert everything.runs == 243 and len(idx(everything)) == 243


def test_first_order_uses_every_realization_once():
    fo = first_order(SPACE)
    assert fo.runs == 3 and 0 in idx(fo)
    for j in range(5):
        assert sorted(fo.array[:, j].tolist()) == [0, 1, 2]
    mixed = first_order(FactorSpace.from_levels("2^1,3^2"))
    assert [set(mixed.array[:, j].tolist()) for j in range(3)] == [{0, 1}, {0, 1, 2}, {0, 1, 2}]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 60), st.integers(0, 2**32 - 1))
def test_random_n_is_seeded_distinct_and_avoids_exclusions(n, seed):
    excluded = SPACE.all_configs()[::7]
    a = random_n(SPACE, n, seed=seed, exclude=excluded)
    b = random_n(SPACE, n, seed=seed, exclude=excluded)
    assert np.array_equal(a.array, b.array)
    assert len(idx(a)) == n
    assert not idx(a) & set(SPACE.to_index(excluded).tolist())


def test_random_n_in_a_huge_space_and_errors():
    big = FactorSpace.from_levels("3^30")
    draw = random_n(big, 50, seed=1, include_base=True)
    assert draw.runs == 50 and 0 in idx(draw)
    with pytest.raises(HscaleError, match="243"):
        random_n(SPACE, 244)
    with pytest.raises(HscaleError, match="h0"):
        random_n(SPACE, 3, include_base=True, exclude=[SPACE.base])


def test_structured_is_the_gwlp_best_oa_with_h0():
    train = structured(SPACE, runs=18)
    assert train.runs == 18 and is_orthogonal(train.array, 2)
    assert 0 in idx(train)
    assert distance_range(train.array) == (3, 5)  # the best class has minimum distance 3
    assert train.notes["min_distance"] == 3
    from hscale.design import are_isomorphic, candidates

    assert are_isomorphic(train.array, candidates(SPACE.levels, 18)[0].array)


def test_structured_avoids_an_excluded_set():
    evals = eval_set(SPACE, structured(SPACE, runs=18))
    again = structured(SPACE, runs=18, exclude=evals)
    assert not idx(again) & idx(evals)
    assert is_orthogonal(again.array, 2) and 0 in idx(again)


def test_structured_for_a_larger_space_uses_the_constructed_array():
    space = FactorSpace.from_levels("3^7")
    design = structured(space, runs=18)
    assert is_orthogonal(design.array, 2) and 0 in idx(design)


def test_paper_eval_set():
    train = structured(SPACE, runs=18)
    fo = first_order(SPACE)
    evals = eval_set(SPACE, [train, fo])
    assert evals.runs == 18 and is_orthogonal(evals.array, 2)
    assert evals.notes["level_counts"] == [[6, 6, 6]] * 5
    assert evals.notes["pairwise_distance_range"] == (2, 5)
    assert not idx(evals) & (idx(train) | idx(fo) | {0})
    assert distance_matrix(evals.array, train.array).min() >= 1


def test_eval_set_from_a_given_base_and_errors():
    train = structured(SPACE, runs=18)
    evals = eval_set(SPACE, train, base=train)
    assert evals.notes["pairwise_distance_range"] == (3, 5)
    assert not idx(evals) & idx(train)
    with pytest.raises(HscaleError, match="orthogonal"):
        eval_set(SPACE, train, base=train.array[:5])
    with pytest.raises(HscaleError, match="avoids"):
        eval_set(SPACE, full(SPACE))
    doubled = np.vstack([evals.array, evals.array])  # still strength 2, but repeats runs
    with pytest.raises(HscaleError, match="repeats"):
        eval_set(SPACE, train, base=doubled)


def test_structured_follows_its_criterion():
    space = FactorSpace.from_levels("3^4")
    from hscale.design import candidates, covering_radius

    best_radius = min(c.summary["covering_radius"] for c in candidates(space.levels, 18))
    design = structured(space, runs=18, criterion="covering_radius")
    assert covering_radius(design.array, space.levels) == best_radius


def test_eval_set_is_reproducible_in_a_large_space():
    space = FactorSpace.from_levels("3^10")
    train = structured(space, runs=27)
    a = eval_set(space, train, max_translations=200)
    b = eval_set(space, train, max_translations=200)
    assert np.array_equal(a.array, b.array)


def test_recipe_lookup_suggests():
    assert recipe("structured") is structured
    with pytest.raises(HscaleError) as err:
        recipe("structurd")
    assert "structured" in err.value.hint


def test_recipes_registry_names_every_recipe():
    import hscale.design as design

    assert design.RECIPES is RECIPES
    assert RECIPES.names() == ["single", "first_order", "structured", "random", "full"]
    assert recipe("random") is random_n
    with pytest.raises(HscaleError, match="unknown harness-set recipe 'nope'"):
        recipe("nope")
