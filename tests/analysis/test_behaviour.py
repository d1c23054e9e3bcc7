"""The report's behaviour table: frequencies per arm and setting from the episodes'
trajectory counts, read back through the run files, with planted answers."""

from __future__ import annotations

import numpy as np
import pytest

from hscale.analysis import load_results, synthetic_episodes, write_runs

# internal: tests the behaviour tables' building blocks
from hscale.analysis._behaviour import behaviour_frame, behaviour_table


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("behaviour")
    episodes = synthetic_episodes(0.5, arms=["single-harness", "structured-18"], tasks=10,
                                  runs=2, seeds=(0,))
    careful = (episodes["arm"] == "structured-18").to_numpy()
    task = episodes["task_id"].cat.codes.to_numpy()
    episodes = episodes.assign(
        # structured-18 always looks first; single-harness on even tasks only
        looked_first=np.where(careful, 1.0, (task % 2 == 0).astype(float)),
        tool_calls=np.where(careful, 4.0, 2.0),
        tool_errors=np.where(task < 5, 1.0, 0.0),  # half the tasks hit an error
        # structured-18 recovers from every error, single-harness from none
        recovered=np.where(task < 5, careful.astype(float), np.nan),
        repeats=0.0)
    write_runs(root, episodes, steps=4)
    return load_results(root / "synthetic")


def test_each_frequency_is_the_planted_one(results):
    data = behaviour_frame(results, n_boot=200)
    inside = data[data.setting == "in_space"].set_index(["method", "measure"])["mean"]
    assert inside["structured-18", "looked before acting (%)"] == pytest.approx(100)
    assert inside["single-harness", "looked before acting (%)"] == pytest.approx(50)
    assert inside["structured-18", "recovered after an error (%)"] == pytest.approx(100)
    assert inside["single-harness", "recovered after an error (%)"] == pytest.approx(0)
    assert inside["single-harness", "a tool error (%)"] == pytest.approx(50)
    assert inside["structured-18", "tool calls per episode"] == pytest.approx(4)
    assert inside["single-harness", "repeated a call (%)"] == pytest.approx(0)
    # recovery is counted over the episodes with an error only
    counted = data[(data.measure == "recovered after an error (%)")
                   & (data.setting == "in_space")]["episodes"]
    whole = data[(data.measure == "tool calls per episode")
                 & (data.setting == "in_space")]["episodes"]
    assert (counted.to_numpy() * 2 == whole.to_numpy()).all()


def test_the_table_says_what_it_measures_and_what_it_does_not(results):
    table = behaviour_table(results, n_boot=200)
    assert list(table.frame["method"].unique()) == ["single-harness", "structured-18"]
    assert "not correctness" in table.notes[0]
    cell = table.frame.set_index(["method", "setting"]).loc[
        ("single-harness", "in-space"), "looked before acting (%)"]
    assert cell.startswith("50.0 [")


def test_runs_without_trajectory_counts_say_so(tmp_path):
    episodes = synthetic_episodes(0.5, arms=["structured-18"], tasks=4, runs=1, seeds=(0,))
    write_runs(tmp_path, episodes, steps=2)
    table = behaviour_table(load_results(tmp_path / "synthetic"), n_boot=100)
    assert table.frame.empty and "No trajectory counts" in table.notes[0]
