"""Component effects recovered from data generated with known effects; distance to training."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hscale.analysis._effects import (
    _cells,
    _design,
    _fit,
    distance_to_training,
    logit_effects,
    main_effects,
    parse_harnesses,
    success_by_distance,
    with_levels,
)
from hscale.analysis._synthetic import default_eval_sets, synthetic_episodes
from hscale.harness._space import factor_space

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


def episodes(prob, eval_set, tasks: int, runs: int = 2, seed: int = 0) -> pd.DataFrame:
    ep = synthetic_episodes(prob, arms=["structured-18"], seeds=(0,), runs=runs, tasks=tasks,
                            eval_sets={"in_space": eval_set}, rng=seed)
    return ep.assign(model="m", algorithm="grpo", method=ep["arm"], source="measured")


@pytest.fixture(scope="module")
def factorial():
    return episodes(additive, ALL, tasks=40)


def test_logit_main_effects_recover_the_generating_ones(factorial):
    effects, tests = logit_effects(factorial, by=["method"], interactions=False)
    for row in effects.itertuples():
        truth = TRUE[row.factor][row.level]
        assert abs(row.coef - truth) < max(4 * row.se, 0.05), (row.factor, row.level)
        assert abs(row.coef - truth) < 0.12
    p = tests.set_index("term")["p"]
    assert p["S"] < 1e-6 and p["T"] < 1e-6 and p["W"] < 1e-6
    assert p["O"] > 0.001 and p["C"] > 0.001
    assert set(tests["cov"]) == {"cluster(task)"}


def test_an_interaction_is_found_where_it_was_put():
    ep = episodes(lambda g: additive(g, interaction=0.6), ALL, tasks=40, seed=1)
    _, tests = logit_effects(ep, by=["method"])
    inter = tests[tests["kind"] == "interaction"].set_index("term")
    assert inter.loc["S:T", "p_holm"] < 1e-4
    assert (inter.drop(index="S:T")["p_holm"] > 0.01).all()
    assert (inter["df"] == 4).all()
    assert (inter["note"] == "fitted jointly with all pairs").all()  # a full factorial can


def test_interactions_the_18_run_eval_set_cannot_separate_are_marked():
    ep = episodes(additive, default_eval_sets()["in_space"], tasks=10)
    _, tests = logit_effects(ep, by=["method"])
    inter = tests[tests["kind"] == "interaction"]
    aliased = inter[inter["note"].str.startswith("aliased")]
    assert len(aliased) >= 1 and aliased["p"].isna().all()
    alone = inter[inter["note"] == "fitted alone beside the main effects"]
    assert len(alone) + len(aliased) == 10 and alone["p"].notna().all()
    assert set(tests.loc[tests["kind"] == "main", "cov"]) == {"quasi-binomial"}  # 10 tasks


def test_marginal_means_on_the_orthogonal_eval_set_match_the_truth():
    ep = episodes(additive, default_eval_sets()["in_space"], tasks=60, runs=3)
    got = main_effects(ep, ["method"], n_boot=500)
    lv, _ = with_levels(ep)
    for row in got.itertuples():
        truth = lv.loc[lv[row.factor] == row.level, "p_true"].mean() * 100
        assert row.lo - 1 < truth < row.hi + 1, (row.factor, row.level)
    s = got[got["factor"] == "S"].sort_values("level")["effect"].to_numpy()
    assert s[0] < -5 and s[2] > 5  # S's effect -0.6 / +0.6 on the logit scale


def test_cluster_sandwich_equals_statsmodels_cluster_covariance(factorial):
    import statsmodels.api as sm

    lv, factors = with_levels(factorial)
    cells = _cells(lv, factors)
    x, _ = _design(cells.configs, factors, {f: 3 for f in factors})
    params, vcov, kind = _fit(cells, x)
    xc = x[cells.harness]
    ref = sm.GLM(np.column_stack([cells.y, cells.n - cells.y]), xc,
                 family=sm.families.Binomial()).fit(
        cov_type="cluster", cov_kwds={"groups": cells.cluster, "use_correction": True})
    n, k = xc.shape
    assert kind == "cluster(task)"
    assert params == pytest.approx(ref.params, abs=1e-6)
    assert vcov * (n - 1) / (n - k) == pytest.approx(np.asarray(ref.cov_params()), rel=1e-4,
                                                      abs=1e-10)


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
