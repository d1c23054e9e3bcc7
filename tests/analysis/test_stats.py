"""Intervals and tests: coverage by simulation, Holm by a worked example, known effects found."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from hscale.analysis.stats import (
    bootstrap_ci,
    cluster_bootstrap,
    compare_arms,
    holm,
    paired_differences,
    sign_flip_test,
)
from hscale.analysis.synthetic import synthetic_episodes


def test_holm_against_a_worked_example():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max-so-far 0.06
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    got = holm([0.01, np.nan, 0.02])
    assert np.isnan(got[1]) and got[[0, 2]] == pytest.approx([0.02, 0.02])


def coverage(sims: int, tasks: int, per_task: int, naive: bool, seed: int) -> float:
    """Share of 95% intervals holding the true mean 0.4 of Beta(2, 3) task success rates."""
    rng = np.random.default_rng(seed)
    hits = 0
    for i in range(sims):
        p = rng.beta(2, 3, size=tasks)
        successes = rng.binomial(per_task, p)
        if naive:  # every episode its own cluster: ignores that a task's episodes correlate
            flat = np.repeat(np.tile([1.0, 0.0], tasks), np.column_stack(
                [successes, per_task - successes]).ravel())
            _, lo, hi = cluster_bootstrap(flat, np.ones_like(flat), n_boot=500, rng=i)
        else:
            _, lo, hi = cluster_bootstrap(successes, np.full(tasks, per_task), n_boot=1000,
                                          rng=i)
        hits += lo <= 0.4 <= hi
    return hits / sims


def test_cluster_bootstrap_covers_near_nominal():
    cluster = coverage(sims=400, tasks=40, per_task=15, naive=False, seed=7)
    assert 0.91 <= cluster <= 0.98
    naive = coverage(sims=150, tasks=40, per_task=15, naive=True, seed=7)
    assert naive < cluster - 0.15  # resampling episodes would claim far too much precision


def test_bootstrap_ci_groups_share_clusters_and_match_the_plain_mean():
    ep = synthetic_episodes({"a": 0.3, "b": 0.7}, arms=["a", "b"], seeds=(0,), runs=2,
                            tasks=15)
    ep = ep.assign(method=ep["arm"])
    out = bootstrap_ci(ep, ["method"], n_boot=500).set_index("method")
    for arm in ("a", "b"):
        part = ep[ep["arm"] == arm]
        assert out.loc[arm, "mean"] == pytest.approx(part["success"].mean() * 100)
        assert out.loc[arm, "lo"] < out.loc[arm, "mean"] < out.loc[arm, "hi"]
        assert out.loc[arm, "clusters"] == 15


def test_sign_flip_matches_scipy_exact_and_monte_carlo():
    x = np.random.default_rng(1).normal(0.2, 1, 10)
    exact = sps.permutation_test((x,), lambda v, axis: v.mean(axis=axis),
                                 permutation_type="samples", vectorized=True)
    assert sign_flip_test(x) == pytest.approx(exact.pvalue)
    y = np.random.default_rng(2).normal(0.15, 1, 60)
    mc = sps.permutation_test((y,), lambda v, axis: v.mean(axis=axis),
                              permutation_type="samples", vectorized=True, n_resamples=20000)
    assert sign_flip_test(y, n_resamples=20000) == pytest.approx(mc.pvalue, abs=0.02)
    assert sign_flip_test(np.full(30, 0.5)) < 0.001


def _two_arm_episodes(effect: float, tasks: int = 30, seed: int = 0) -> pd.DataFrame:
    base = np.random.default_rng(seed).uniform(0.2, 0.6, tasks)

    def prob(grid: pd.DataFrame) -> np.ndarray:
        task = base[grid["task_id"].cat.codes.to_numpy()]
        return np.clip(task + effect * (grid["arm"] == "better").to_numpy(), 0, 1)

    ep = synthetic_episodes(prob, arms=["structured-18", "better", "same"], seeds=(0, 1),
                            runs=2, tasks=tasks, rng=seed)
    return ep.assign(model="m", algorithm="grpo", method=ep["arm"], source="measured")


def test_compare_arms_finds_a_known_gain_and_not_a_null_one():
    ep = _two_arm_episodes(effect=0.2)
    out = compare_arms(ep, settings=("in_space",), n_boot=1000).set_index("method")
    assert set(out.index) == {"better", "same"}
    assert out.loc["better", "reference"] == "structured-18"
    assert out.loc["better", "diff"] == pytest.approx(20, abs=4)
    assert out.loc["better", "lo"] < 20 < out.loc["better", "hi"]
    assert out.loc["better", "p_holm"] < 0.001
    assert out.loc["same", "lo"] < 0 < out.loc["same", "hi"]
    assert out.loc["same", "p_holm"] > 0.05
    # pairs: 30 tasks x 18 held-out harnesses x 2 seeds x 2 runs
    assert out.loc["better", "pairs"] == 30 * 18 * 4 and out.loc["better", "tasks"] == 30
    wil = compare_arms(ep, settings=("in_space",), test="wilcoxon", n_boot=200)
    assert wil.set_index("method").loc["better", "p"] < 0.001


def test_paired_differences_equal_a_pivot():
    ep = _two_arm_episodes(effect=0.1, tasks=4)
    got = paired_differences(ep, "structured-18", ["better"])
    keys = ["benchmark", "setting", "harness", "task_id", "seed", "run"]
    wide = ep.pivot_table(index=keys, columns="arm", values="success", observed=True)
    want = (wide["better"] - wide["structured-18"]).sort_index()
    got = got.set_index(keys)["diff"].sort_index()
    assert len(got) == len(want) and got.to_numpy() == pytest.approx(want.to_numpy())
