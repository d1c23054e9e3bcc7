"""Seeds where they resolve the question (hscale.analysis._planning): every question reaches
the power at the plan, the plan costs no more runs than equal allocation, an arm whose runs
vary more gets more seeds, a reference shared by many comparisons gets more than each, a
pilot's variance interval holds it, and a staged design spends fewer runs on a real
difference at the same level."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.analysis import (
    Question,
    equal_plan,
    plan_power,
    plan_seeds,
    staged_design,
    variance_interval,
)


def _questions(var_arms: list[float], var_ref: float, family: str | None = None):
    return [Question(f"a{j}", "ref", v, var_ref, family=family) for j, v in
            enumerate(var_arms)]


@settings(max_examples=15, deadline=None)
@given(sd=st.floats(0.04, 0.12), effect=st.floats(0.08, 0.2))
def test_the_plan_reaches_the_power_at_no_more_runs_than_equal_allocation(sd, effect):
    questions = _questions([sd ** 2, (1.5 * sd) ** 2], sd ** 2, family=None)
    best = plan_seeds(questions, effect, 0.8)
    equal = equal_plan(questions, effect, 0.8)
    assert best.total <= equal.total
    if best.reachable:
        assert min(best.power.values()) >= 0.8
        again = plan_power(questions, best.seeds, effect)
        assert again.power == pytest.approx(best.power)


def test_an_arm_whose_runs_vary_more_gets_more_seeds():
    questions = _questions([0.004, 0.016], 0.004, family=None)
    best = plan_seeds(questions, 0.12, 0.8)
    assert best.seeds["a1"] > best.seeds["a0"]


def test_a_reference_shared_by_many_comparisons_gets_more_seeds_than_each():
    questions = _questions([0.004] * 6, 0.004)
    best = plan_seeds(questions, 0.12, 0.8)
    assert best.seeds["ref"] > max(best.seeds[f"a{j}"] for j in range(6))
    assert best.total < equal_plan(questions, 0.12, 0.8).total


def test_a_pilots_variance_interval_holds_it_and_narrows_with_seeds():
    lo3, hi3 = variance_interval(0.01, 2)
    lo9, hi9 = variance_interval(0.01, 8)
    assert lo3 < lo9 < 0.01 < hi9 < hi3
    assert variance_interval(0.01, math.inf) == (0.01, 0.01)


def test_a_staged_design_keeps_its_level_and_spends_less_on_a_real_difference():
    se, df = 0.04, 14.0
    power_fixed = plan_power([Question("b", "a", 0.0064, 0.0064, sides=1, family=None)],
                             {"a": 8, "b": 8}, 0.12).power["b vs a"]
    power, seeds = staged_design(se, df, [4, 8], 0.12)
    false, seeds_null = staged_design(se, df, [4, 8], 0.0)
    assert false <= 0.055 and seeds_null > 7.5
    assert power >= power_fixed - 0.1 and seeds < 8
