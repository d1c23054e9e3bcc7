"""The base model's reference run: its row in the tables, every arm's RL gain with an
interval, and evaluation curves that start from it."""

from __future__ import annotations

import pandas as pd
import pytest

from hscale.analysis import (
    BASE_MODEL,
    all_tables,
    build_report,
    compare_arms,
    default_reference,
    load_results,
    rl_gains,
    synthetic_episodes,
    write_runs,
)

# internal: tests the figure registry and rendering
from hscale.analysis._plots import curve_data

TRUE = {"base-model": 0.3, "single-harness": 0.45, "structured-18": 0.6}


def episodes_at(step: int, arms=tuple(TRUE), rng: int = 0) -> pd.DataFrame:
    return synthetic_episodes(TRUE, arms=list(arms), tasks=30, experiment="exp", step=step,
                              rng=rng)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    base = episodes_at(0, ["base-model"], rng=1)
    trained = episodes_at(20, ["single-harness", "structured-18"], rng=2)
    write_runs(root, pd.concat([base, trained], ignore_index=True))
    return load_results(root / "exp", reported=False)


def test_the_reference_run_is_named_for_people_and_is_never_the_compared_arm(results):
    methods = set(results.episodes["method"].astype(str))
    assert methods == {BASE_MODEL, "single-harness", "structured-18"}
    assert default_reference([BASE_MODEL, "single-harness"]) == "single-harness"
    comparisons = compare_arms(results.episodes, settings=("in_space", "out_of_space"))
    assert set(comparisons["method"]) == {"single-harness"}
    assert set(comparisons["reference"]) == {"structured-18"}


def test_rl_gains_recover_the_known_gain_with_an_interval(results):
    gains = rl_gains(results.episodes)
    assert set(gains["reference"]) == {BASE_MODEL}
    assert set(gains["setting"]) == {"base", "in_space", "out_of_space"}
    assert set(gains["method"]) == {"single-harness", "structured-18"}
    in_space = gains[gains["setting"] == "in_space"].set_index("method")
    for arm, gain in (("structured-18", 30.0), ("single-harness", 15.0)):
        row = in_space.loc[arm]
        assert row["lo"] < gain < row["hi"] and row["lo"] > 0, row
        assert abs(row["diff"] - gain) < 6
    assert (gains["p_adj"] >= gains["p"]).all() and (gains["m"] == len(gains)).all()


def test_rl_gains_are_empty_without_a_base_model_run(results):
    trained = results.episodes[results.episodes["method"].astype(str) != BASE_MODEL]
    assert rl_gains(trained).empty


def test_tables_show_the_base_model_row_and_the_gain_table(results):
    tables, _, comparisons = all_tables(results)
    by_name = {t.name: t for t in tables}
    for name in ("settings", "ablation"):
        assert BASE_MODEL in set(by_name[name].frame["method"]), name
    gain = by_name["rl_gain"]
    assert "RL gain (pp)" in gain.frame.columns and len(gain.frame) == 6
    assert BASE_MODEL not in set(comparisons["method"])


def test_the_report_states_the_gain_of_the_reference_arm(results, tmp_path):
    report = build_report(results, tmp_path, n_boot=200)
    line = next(s for s in report.ordering if s.startswith("RL gain"))
    assert "structured-18" in line and "in-space +" in line
    ordering = next(s for s in report.ordering if s.startswith("Ordering"))
    assert BASE_MODEL not in ordering


def test_evaluation_curves_start_every_arm_at_the_base_model(tmp_path):
    parts = [episodes_at(0, ["base-model"], rng=1)]
    parts += [episodes_at(step, ["single-harness", "structured-18"], rng=step)
              for step in (5, 10)]
    write_runs(tmp_path, pd.concat(parts, ignore_index=True))
    data = curve_data(load_results(tmp_path / "exp", reported=False))
    assert data["kind"].iloc[0] == "Pass@1 (%)"
    assert set(data["method"]) == {"single-harness", "structured-18"}
    start = data[data["step"] == 0].set_index(["method", "setting"])["mean"]
    assert start.loc["single-harness"].equals(start.loc["structured-18"])
    for method, line in data.groupby("method"):
        assert sorted(line["step"].unique()) == [0, 5, 10], method


def test_without_intermediate_evaluations_curves_show_training_reward(results):
    assert curve_data(results)["kind"].iloc[0].startswith("training reward")


def test_a_report_without_in_space_rows_still_builds(tmp_path):
    sets = {"base": ["S0-T0-O0-C0-W0"], "out_of_space": ["oos/shell"]}
    episodes = synthetic_episodes(TRUE, arms=list(TRUE), tasks=8, experiment="exp",
                                  eval_sets=sets)
    write_runs(tmp_path, episodes)
    report = build_report(load_results(tmp_path / "exp", reported=False), tmp_path, n_boot=50)
    assert not any(s.startswith("Ordering") for s in report.ordering)
    assert any(s.startswith("RL gain") for s in report.ordering)
