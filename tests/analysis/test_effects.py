"""Component effects recovered from data generated with known effects; distance to training."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hscale.analysis import (
    component_effects,
    distance_to_training,
    main_effects,
    success_by_distance,
    synthetic_episodes,
)

# internal: tests the aliasing check behind component tests
from hscale.analysis._component_tests import aliasing

# internal: tests the effects code's parsing helpers
from hscale.analysis._effects import parse_harnesses, with_levels

# internal: uses the synthetic runs' default eval sets
from hscale.analysis._synthetic import default_eval_sets
from hscale.harness import factor_space

SPACE = factor_space()
ALL = SPACE.labels(SPACE.all_configs())
TRUE = {"S": [-0.6, 0.0, 0.6], "T": [0.4, -0.2, -0.2], "O": [0.0, 0.0, 0.0],
        "C": [0.0, 0.0, 0.0], "W": [0.3, -0.3, 0.0]}


def levels_of(grid: pd.DataFrame) -> pd.DataFrame:
    return parse_harnesses(grid["harness"].astype(str).unique()).reindex(
        grid["harness"].astype(str).to_numpy())


def additive(grid: pd.DataFrame, interaction: float = 0.0) -> np.ndarray:
    lv = levels_of(grid)
    logit = -0.2 + sum(np.asarray(TRUE[f])[lv[f].to_numpy()] for f in TRUE)
    same = (lv["S"] == lv["T"]).to_numpy()  # a pure S x T interaction: rows and columns sum to 0
    logit = logit + interaction * np.where(same, 1.0, -0.5)
    return 1.0 / (1.0 + np.exp(-logit))


def episodes(prob, eval_set, tasks: int, runs: int = 2, seed: int = 0,
             seeds: tuple[int, ...] = (0, 1, 2)) -> pd.DataFrame:
    ep = synthetic_episodes(prob, arms=["structured-18"], seeds=seeds, runs=runs, tasks=tasks,
                            eval_sets={"in_space": eval_set}, rng=seed)
    return ep.assign(model="m", algorithm="grpo", method=ep["arm"], source="measured")


@pytest.fixture(scope="module")
def factorial():
    return episodes(additive, ALL, tasks=12, seeds=tuple(range(6)))


def test_main_effects_over_runs_recover_the_generating_ones(factorial):
    effects, tests = component_effects(factorial, by=["method"], interactions=False)
    lv, _ = with_levels(factorial)
    grand = lv["p_true"].mean()
    for row in effects.itertuples():
        truth = 100 * (lv.loc[lv[row.factor] == row.level, "p_true"].mean() - grand)
        assert row.lo - 1 < truth < row.hi + 1, (row.factor, row.level)
        assert row.runs == 6
    p = tests.set_index("term")["p"]
    assert p["S"] < 1e-3 and p["T"] < 1e-3 and p["W"] < 1e-3
    assert p["O"] > 0.001 and p["C"] > 0.001
    assert (tests["F"] >= 0).all()


def test_an_interaction_is_found_where_it_was_put():
    ep = episodes(lambda g: additive(g, interaction=0.6), ALL, tasks=12, seed=1,
                  seeds=tuple(range(6)))
    _, tests = component_effects(ep, by=["method"])
    inter = tests[tests["kind"] == "interaction"].set_index("term")
    assert inter.loc["S:T", "p"] < 0.01
    assert (inter.drop(index="S:T")["p_holm"] > 0.01).all()
    assert (inter["df1"] == 4).all()


def test_the_18_run_eval_set_says_what_it_cannot_separate():
    ep = episodes(additive, default_eval_sets()["in_space"], tasks=10)
    _, tests = component_effects(ep, by=["method"])
    inter = tests[tests["kind"] == "interaction"]
    aliased = inter[inter["note"].str.startswith("aliased")]
    assert len(aliased) >= 1 and aliased["p"].isna().all()
    main = tests[tests["kind"] == "main"]
    assert main["note"].str.contains("partially aliased with two-factor interactions").all()
    full = parse_harnesses(ALL)
    assert max(aliasing(full, list("STOCW"), dict.fromkeys("STOCW", 3)).values()) < 1e-9


def test_one_seed_an_arm_has_no_test_and_never_a_negative_statistic():
    one = episodes(additive, default_eval_sets()["in_space"], tasks=10, seeds=(0,))
    effects, tests = component_effects(one, by=["method"])
    main = tests[tests["kind"] == "main"]
    assert tests["p"].isna().all() and main["note"].str.contains("one seed an arm").all()
    assert effects["lo"].isna().all() and effects["effect"].notna().all()


def test_marginal_means_on_the_orthogonal_eval_set_match_the_truth():
    ep = episodes(additive, default_eval_sets()["in_space"], tasks=60, runs=3)
    got = main_effects(ep, ["method"], n_boot=500)
    lv, _ = with_levels(ep)
    for row in got.itertuples():
        truth = lv.loc[lv[row.factor] == row.level, "p_true"].mean() * 100
        assert row.lo - 1 < truth < row.hi + 1, (row.factor, row.level)
    s = got[got["factor"] == "S"].sort_values("level")["effect"].to_numpy()
    assert s[0] < -5 and s[2] > 5  # S's effect -0.6 / +0.6 on the logit scale


def test_parse_harnesses_skips_out_of_space_labels():
    table = parse_harnesses(["S0-T1-O2-C0-W1", "oos/shell", "A1-B2"])
    assert list(table.index) == ["S0-T1-O2-C0-W1"] and list(table.columns) == list("STOCW")
    assert table.loc["S0-T1-O2-C0-W1"].tolist() == [0, 1, 2, 0, 1]


def test_success_falls_with_distance_to_training():
    evals = {"base": ["S0-T0-O0-C0-W0"], "in_space": ALL[:81], "out_of_space": ["oos/shell"]}

    def prob(grid: pd.DataFrame) -> np.ndarray:
        lv = levels_of(grid)
        d = (lv.fillna(1) > 0).sum(axis=1).to_numpy()  # distance to h0
        return np.clip(0.9 - 0.15 * d, 0, 1)

    ep = synthetic_episodes(prob, arms=["single-harness"], seeds=(0,), runs=2, tasks=30,
                            eval_sets=evals)
    ep = ep.assign(model="m", algorithm="grpo", method=ep["arm"], source="measured")
    train = {("synthetic", "single-harness"): ["S0-T0-O0-C0-W0"]}
    dist = distance_to_training(ep, train)
    lv = levels_of(ep)
    expected = (lv > 0).sum(axis=1).to_numpy(dtype=float)
    expected[ep["setting"].to_numpy() == "out_of_space"] = np.nan
    np.testing.assert_array_equal(dist.to_numpy(), expected)
    table = success_by_distance(ep, train, n_boot=300).set_index("distance")
    assert list(table.index) == [0, 1, 2, 3, 4]
    assert table["mean"].to_numpy() == pytest.approx(90 - 15 * np.arange(5), abs=4)
    assert table.loc[0, "harnesses"] == 1 and table.loc[4, "harnesses"] == 16


def test_a_level_that_always_fails_is_an_effect_not_a_broken_fit():
    """Quasi-separation (the base model's harnesses a level never solves): the linear fit
    over runs gives a finite, non-negative statistic; the logistic Wald tests this replaced
    printed negative chi-squares there."""
    def never_s2(grid: pd.DataFrame) -> np.ndarray:
        lv = levels_of(grid)
        return np.where(lv["S"].to_numpy() == 2, 0.0, additive(grid))

    ep = episodes(never_s2, default_eval_sets()["in_space"], tasks=10, seeds=(0, 1, 2, 3))
    effects, tests = component_effects(ep, by=["method"])
    main = tests[tests["kind"] == "main"].set_index("term")
    assert (tests["F"].dropna() >= 0).all() and np.isfinite(main["F"]).all()
    assert main.loc["S", "p"] < 0.01
    s2 = effects[(effects["factor"] == "S") & (effects["level"] == 2)]
    assert (s2["effect"] < 0).all() and np.isfinite(s2["lo"]).all()
