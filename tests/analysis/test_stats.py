"""Intervals and tests: coverage by simulation, Holm by a worked example, known effects found,
seed luck not mistaken for an effect, and the interval drawn always the verdict's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hscale.analysis import (
    StudySize,
    arm_intervals,
    bootstrap_ci,
    cluster_bootstrap,
    compare_arms,
    holm,
    paired_differences,
    planted,
    synthetic_episodes,
)


def test_holm_against_a_worked_example():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> max-so-far 0.06
    p = [0.01, 0.04, 0.03, 0.005]
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])  # capped at 1
    got = holm([0.01, np.nan, 0.02])
    assert np.isnan(got[1]) and got[[0, 2]] == pytest.approx([0.02, 0.02])


@settings(deadline=None, max_examples=30)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_holm_is_statsmodels_holm(p):
    from unittest import mock

    from statsmodels.stats.multitest import multipletests

    with mock.patch("gc.collect"):  # statsmodels collects garbage each call: 1 s here
        expected = multipletests(p, method="holm")[1]
    assert holm(p) == pytest.approx(expected)


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


def _two_arm_episodes(effect: float, tasks: int = 30, seed: int = 0) -> pd.DataFrame:
    base = np.random.default_rng(seed).uniform(0.2, 0.6, tasks)

    def prob(grid: pd.DataFrame) -> np.ndarray:
        task = base[grid["task_id"].cat.codes.to_numpy()]
        return np.clip(task + effect * (grid["arm"] == "better").to_numpy(), 0, 1)

    ep = synthetic_episodes(prob, arms=["structured-18", "better", "same"], seeds=(0, 1, 2, 3),
                            runs=2, tasks=tasks, rng=seed)
    return ep.assign(model="m", algorithm="grpo", method=ep["arm"], source="measured")


def test_compare_arms_finds_a_known_gain_and_not_a_null_one():
    ep = _two_arm_episodes(effect=0.2)
    out = compare_arms(ep, settings=("in_space",)).set_index("method")
    assert set(out.index) == {"better", "same"}
    assert out.loc["better", "reference"] == "structured-18"
    assert out.loc["better", "diff"] == pytest.approx(20, abs=4)
    assert out.loc["better", "lo"] < 20 < out.loc["better", "hi"]
    assert out.loc["better", "p_adj"] < 0.05 and out.loc["better", "lo"] > 0
    assert out.loc["same", "lo"] < 0 < out.loc["same", "hi"]
    assert out.loc["same", "p_adj"] > 0.05
    # pairs: 30 tasks x 18 held-out harnesses x 4 seeds x 2 runs
    assert out.loc["better", "pairs"] == 30 * 18 * 8 and out.loc["better", "tasks"] == 30
    assert (out["seeds"] == 4).all() and (out["m"] == 2).all()
    # the family's intervals are simultaneous: wider than each comparison's own
    assert ((out["hi"] - out["lo"]) > (out["hi_each"] - out["lo_each"])).all()


SEED_LUCK = {"seed": 0.045, "task": 0.002, "harness": 0.0, "seed_task": 0.002, "run": 0.0,
             "residual": 0.36}


def test_seed_luck_is_not_an_effect_and_an_effect_on_every_seed_is():
    """Two arms that differ only by which seeds they drew (a seed effect of about 15 pp)
    are not resolved, whatever a task-only analysis would say; a large effect that holds on
    every seed is."""
    design = StudySize(seeds=5, tasks=30, harnesses=6, runs=2)
    luck = planted(SEED_LUCK, design, effect=0.0, rng=11)
    row = compare_arms(luck, "reference").iloc[0]
    per_seed = (luck[luck["arm"] == "other"].groupby("seed")["success"].mean()
                - luck[luck["arm"] == "reference"].groupby("seed")["success"].mean())
    assert per_seed.std() > 0.1  # the seeds disagree by more than 10 pp
    assert abs(row["diff"]) > 5  # and this draw's mean difference is sizeable
    assert row["lo"] < 0 < row["hi"] and row["p_adj"] > 0.05
    assert 4 <= row["df"] <= 8  # five seeds an arm: Welch's df, between one arm's and both
    # a task-only bootstrap of the same rows (what a report over tasks would say) is narrow
    diffs = paired_differences(luck, "reference", ["other"])
    by_task = diffs.groupby("task_id", observed=True)["diff"].agg(["sum", "count"])
    _, lo, hi = cluster_bootstrap(by_task["sum"], by_task["count"], n_boot=1000)
    assert (hi - lo) * 100 < (row["hi"] - row["lo"]) / 2
    strong = planted({**SEED_LUCK, "seed": 0.002}, design, effect=0.3, rng=11)
    row = compare_arms(strong, "reference").iloc[0]
    assert row["lo"] > 0 and row["p_adj"] < 0.001


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed_var=st.sampled_from([0.0, 0.005, 0.04]), seeds=st.integers(1, 4),
       arms=st.integers(2, 4), effect=st.sampled_from([0.0, 0.1, 0.25]),
       draw=st.integers(0, 10_000))
def test_the_interval_drawn_is_the_one_the_verdict_reads(seed_var, seeds, arms, effect, draw):
    """Resolved (adjusted p < 0.05) exactly when the simultaneous interval leaves out 0, for
    any family; each comparison's own interval sits inside the family's."""
    design = StudySize(seeds, 12, 6, 2)
    episodes = planted({**SEED_LUCK, "seed": seed_var}, design, [effect] * (arms - 1), draw)
    found = compare_arms(episodes, "reference")
    assert len(found) == arms - 1 and (found["m"] == arms - 1).all()
    for row in found.itertuples():
        if np.isnan(row.p_adj):
            continue
        assert (row.p_adj < 0.05) == (row.lo > 0 or row.hi < 0), row
        assert row.lo <= row.lo_each <= row.diff <= row.hi_each <= row.hi


def test_one_seed_says_training_randomness_is_not_covered():
    one = planted(SEED_LUCK, StudySize(1, 20, 6, 2), effect=0.0, rng=3)
    row = compare_arms(one, "reference").iloc[0]
    assert row["seeds"] == 1 and np.isfinite(row["se"]) and row["se"] > 0
    assert "training randomness is not covered" in row["note"]


def test_arm_levels_pool_the_runs_and_widen_with_seed_variance():
    calm = planted({**SEED_LUCK, "seed": 0.0}, StudySize(4, 20, 6, 2), 0.1, rng=5)
    wild = planted(SEED_LUCK, StudySize(4, 20, 6, 2), 0.1, rng=5)
    levels = [arm_intervals(e).set_index("method") for e in (calm, wild)]
    for frame, episodes in zip(levels, (calm, wild), strict=True):
        means = episodes.groupby("method", observed=True)["success"].mean() * 100
        assert frame["mean"].to_numpy() == pytest.approx(means[frame.index].to_numpy())
        assert (frame["lo"] < frame["mean"]).all() and (frame["mean"] < frame["hi"]).all()
    width = [float((f["hi"] - f["lo"]).mean()) for f in levels]
    assert width[1] > 1.5 * width[0]


def test_paired_differences_equal_a_pivot():
    ep = _two_arm_episodes(effect=0.1, tasks=4)
    got = paired_differences(ep, "structured-18", ["better"])
    keys = ["benchmark", "setting", "harness", "task_id", "seed", "run"]
    wide = ep.pivot_table(index=keys, columns="arm", values="success", observed=True)
    want = (wide["better"] - wide["structured-18"]).sort_index()
    got = got.set_index(keys)["diff"].sort_index()
    assert len(got) == len(want) and got.to_numpy() == pytest.approx(want.to_numpy())
