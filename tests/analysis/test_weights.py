"""Component weights estimated from a pilot's main effects, and the spec snippet the report
writes for them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from hscale.analysis import Report, estimate_weights, synthetic_episodes, write_report

# internal: tests the weight estimator's steps
from hscale.analysis._weight_estimates import FLOOR, add_weights, weights_yaml
from hscale.design import parse_weights
from hscale.harness import factor_space
from hscale.train.spec import spec_weights
from tests.analysis.helpers import write_hand_runs


def level(grid: pd.DataFrame, factor: str) -> np.ndarray:
    return grid["harness"].astype(str).str.extract(rf"{factor}(\d)")[0].astype(float).to_numpy()


def pilot(effect=lambda g: 0.2 + 0.6 * (level(g, "C") == 0) + 0.1 * (level(g, "S") == 2)):
    episodes = synthetic_episodes(lambda g: np.nan_to_num(effect(g), nan=0.5), tasks=60,
                                  seeds=(0, 1), runs=2)
    return episodes.assign(source="measured", model="m", algorithm="grpo",
                           method=episodes["arm"])


def test_the_component_that_moves_success_most_weighs_most():
    frame = estimate_weights(pilot())
    weights = dict(zip(frame["factor"], frame["weight"], strict=True))
    assert list(weights) == ["S", "T", "O", "C", "W"]
    assert max(weights, key=weights.get) == "C" and weights["C"] > 2.5
    assert weights["S"] > min(weights["T"], weights["O"], weights["W"])
    assert np.mean(list(weights.values())) == pytest.approx(1.0, abs=0.01)
    assert min(weights.values()) > 0
    c = frame[frame["factor"] == "C"].iloc[0]
    assert 50 < c["range_pp"] < 70 and c["levels"] == 3


def test_a_component_without_effect_still_weighs_the_floor():
    episodes = pilot(lambda g: np.where(level(g, "C") == 0, 1.0, 0.0))  # only C matters
    frame = estimate_weights(episodes)
    weights = dict(zip(frame["factor"], frame["weight"], strict=True))
    raw = np.array([FLOOR] * 4 + [1.0 * 5])  # C's range is 5x the mean range, the rest 0
    assert weights["C"] == pytest.approx(5 / raw.mean(), abs=1e-3)
    assert weights["S"] == pytest.approx(FLOOR / raw.mean(), abs=1e-3)


def test_nothing_to_estimate_gives_no_weights():
    assert estimate_weights(pilot(lambda g: np.full(len(g), 1.0))).empty  # no spread
    episodes = pilot()
    assert estimate_weights(episodes[episodes["setting"] != "in_space"]).empty
    assert estimate_weights(episodes.assign(source="external")).empty


def test_the_snippet_pastes_into_a_spec(tmp_path):
    frame = estimate_weights(pilot())
    text = weights_yaml(frame, "synthetic")
    path = tmp_path / "weights.yaml"
    path.write_text(text)
    parsed = parse_weights(str(path))
    assert parsed == dict(zip(frame["factor"], frame["weight"], strict=True))
    resolved = spec_weights(parsed, factor_space())
    assert resolved.tolist() == pytest.approx(np.array(list(parsed.values())) /
                                              np.mean(list(parsed.values())))
    assert text.startswith("# component weights") and "in-space main effects" in text


def test_add_weights_adds_a_table_a_note_and_the_file(tmp_path):
    report = Report(out=tmp_path / "report", tables=[])
    add_weights(SimpleNamespace(episodes=pilot()), report)
    assert [t.name for t in report.tables] == ["weights"]
    assert (tmp_path / "report" / "weights.yaml").is_file()
    assert report.notes and "component weights of synthetic" in report.notes[0]
    two = pd.concat([pilot(), pilot().assign(experiment="other")])
    report = Report(out=tmp_path / "two", tables=[])
    add_weights(SimpleNamespace(episodes=two), report)
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == [
        "weights-other.yaml", "weights-synthetic.yaml"]
    empty = Report(out=tmp_path / "none", tables=[])
    add_weights(SimpleNamespace(episodes=pilot().iloc[:0]), empty)
    assert not empty.tables and not (tmp_path / "none").exists()


def test_the_report_writes_the_weights(tmp_path):
    report = write_report(write_hand_runs(tmp_path / "runs"), tmp_path / "out", n_boot=100)
    assert "weights" in [t.name for t in report.tables]
    written = parse_weights(str(tmp_path / "out" / "weights.yaml"))
    assert written == {"S": 1, "T": 1, "O": 1, "C": 1, "W": 1}  # the two harnesses differ
    assert (tmp_path / "out" / "weights.csv").is_file()  # in every factor: equal weights
    assert "Component weights" in (tmp_path / "out" / "tables.md").read_text()
