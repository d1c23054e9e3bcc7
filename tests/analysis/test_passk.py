"""Pass@1 / Pass@k / Avg@k against numbers computed by hand or by brute force."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from hscale.analysis import load_results, pass1, pass_at_k, passk, synthetic_episodes

# internal: tests pass@k's step choice
from hscale.analysis._passk import final_step

from .helpers import write_hand_runs


def brute_pass_at_k(n: int, c: int, k: int) -> float:
    """Share of the k-subsets of n samples (c successes) holding at least one success."""
    samples = [1] * c + [0] * (n - c)
    subsets = list(combinations(range(n), k))
    return sum(any(samples[i] for i in s) for s in subsets) / len(subsets)


@pytest.mark.parametrize("n", [1, 3, 5, 8])
def test_pass_at_k_equals_brute_force(n):
    for c in range(n + 1):
        for k in range(1, n + 1):
            assert pass_at_k(n, c, k) == pytest.approx(brute_pass_at_k(n, c, k), abs=1e-12)


def test_pass_at_k_is_nan_when_fewer_samples_than_k():
    assert np.isnan(pass_at_k(2, 1, 3))
    assert pass_at_k(np.array([3, 3]), np.array([0, 3]), 3).tolist() == [0.0, 1.0]


@pytest.fixture
def hand(tmp_path):
    return load_results(write_hand_runs(tmp_path), reported=False)


def cell(table: pd.DataFrame, method: str, benchmark: str, setting: str = "in_space"):
    row = table[(table["method"] == method) & (table["benchmark"] == benchmark)
                & (table["setting"] == setting)]
    assert len(row) == 1
    return row.iloc[0]


def test_pass1_equals_hand_computed_means(hand):
    table = pass1(hand.episodes)
    sd = np.std([25, 50], ddof=1)  # 17.68: two runs 25 points apart
    got = cell(table, "single-harness", "b1")
    assert (got["mean"], got["std"], got["n"]) == pytest.approx((37.5, sd, 2))
    assert cell(table, "single-harness", "b2")[["mean", "std"]].tolist() == pytest.approx(
        [87.5, sd])
    assert cell(table, "structured-18", "b1")[["mean", "std"]].tolist() == pytest.approx(
        [37.5, np.std([75, 0], ddof=1)])
    # benchmark average per run, then over runs: single 62.5 and 62.5; structured 62.5, 37.5
    assert cell(table, "single-harness", "average")[["mean", "std"]].tolist() == pytest.approx(
        [62.5, 0.0])
    assert cell(table, "structured-18", "average")[["mean", "std"]].tolist() == pytest.approx(
        [50.0, sd])
    assert cell(table, "structured-18", "average", "overall")["mean"] == pytest.approx(50.0)


def test_pass1_on_balanced_synthetic_equals_plain_means():
    arms = ["a", "b", "c"]
    ep = synthetic_episodes({"a": 0.2, "b": 0.5, "c": 0.8}, arms=arms, seeds=(0, 1),
                            runs=2, benchmarks=("x", "y"), tasks=10)
    ep = ep.assign(model="m", algorithm="grpo", method=ep["arm"], source="measured")
    table = pass1(ep)
    for (arm, bench, setting), part in ep.groupby(["arm", "benchmark", "setting"],
                                                  observed=True):
        per_run = part.groupby(["seed", "run"])["success"].mean() * 100
        got = cell(table, arm, bench, setting)
        assert got["mean"] == pytest.approx(part["success"].mean() * 100)
        assert got["std"] == pytest.approx(per_run.std(ddof=1))
        assert got["n"] == 4


def test_final_step_keeps_each_runs_last_checkpoint():
    ep = synthetic_episodes(0.5, arms=["a"], seeds=(0,), runs=1, tasks=2, step=10)
    later = ep.assign(step=20, success=True)
    both = pd.concat([ep, later], ignore_index=True).assign(
        model="m", algorithm="g", method="a", source="measured")
    kept = final_step(both)
    assert set(kept["step"]) == {20} and len(kept) == len(later)


def test_passk_and_avgk_on_known_counts():
    # one harness, two tasks, three runs: task t0 succeeds once, task t1 never
    rows = [{"experiment": "e", "arm": "a", "seed": 0, "run": r, "step": 1, "benchmark": "b",
             "setting": "base", "harness": "S0-T0-O0-C0-W0", "task_id": t,
             "success": (t == "t0" and r == 0), "reward": 0.0, "turns": 1}
            for r in range(3) for t in ("t0", "t1")]
    ep = pd.DataFrame(rows).assign(model="m", algorithm="g", method="a", source="measured")
    table, k = passk(ep)
    assert k == 3
    by = table.set_index(["benchmark", "metric"])["mean"]
    assert by[("b", "pass@3")] == pytest.approx(50.0)  # t0: 1, t1: 0
    assert by[("b", "avg@3")] == pytest.approx(100 / 6)  # (1/3 + 0) / 2
    table2, _ = passk(ep, k=2)
    assert table2.set_index(["benchmark", "metric"])["mean"][("b", "pass@2")] == pytest.approx(
        100 * (2 / 3) / 2)  # t0: 1 - C(2,2)/C(3,2) = 1 - 1/3; t1: 0; mean of the two
