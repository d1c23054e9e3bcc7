"""experiments/new-space.yaml end to end: trained, evaluated and reported by ``--quick`` on
the embedded trainer; veRL inputs written in a dry run, whose rows rebuild the same harnesses
in the agent loop."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from hscale.contracts import EVAL, Manifest
from hscale.train.planning import harness_of, harness_space
from tests.cli import hscale

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("new-space")
    for name in ("new-space.yaml", "new_space_plugin.py"):
        shutil.copy(EXPERIMENTS / name, folder / name)
    return folder / "new-space.yaml"


@pytest.mark.slow  # 27 s: the fast suite keeps its 10 minutes
def test_the_example_trains_evaluates_and_reports_with_quick(spec):
    runs = spec.parent / "runs"
    done = hscale("run", spec, "--quick", "--out", runs)
    assert done.returncode == 0, done.stderr[-2000:]
    experiment = runs / "new-space-quick"
    manifest = Manifest.read(experiment / "structured-36" / "0")
    rows = pd.read_parquet(experiment / "structured-36" / "0" / EVAL)
    assert set(rows.setting) == {"base", "in_space", "out_of_space"}
    assert set(rows[rows.setting == "in_space"].harness) <= set(manifest.eval_sets["in_space"])
    assert (rows.error.fillna("") == "").all()
    report = hscale("report", experiment)
    assert report.returncode == 0, report.stderr[-2000:]
    effects = pd.read_csv(experiment / "report" / "effects.csv")
    assert set(effects.factor) == {"S", "T", "O", "C", "W"}
    assert set(effects[effects.factor == "S"].level) == {0, 1, 2, 3}  # four system prompts
    markdown = (experiment / "report" / "report.md").read_text()
    assert "S3-" in markdown or "steps" in markdown or "Table" in markdown


def test_the_example_writes_verl_inputs_whose_rows_carry_the_space(spec, tmp_path):
    pytest.importorskip("verl")
    from hscale.harness.tasks import task_from_row
    from hscale.harness.verl_agent_loop import row_space

    runs = tmp_path / "runs"
    hf = spec.with_name("new-space-hf.yaml")  # veRL trains a Hugging Face model
    hf.write_text(spec.read_text().replace("model: hscale-tiny",
                                           "model: Qwen3-4B-Instruct-2507"))
    done = hscale("run", hf, "--quick", "--backend", "verl", "--dry-run", "--out", runs)
    assert done.returncode == 0, done.stderr[-2000:]
    run_dir = runs / "new-space-quick" / "structured-36" / "0"
    manifest = Manifest.read(run_dir)
    train = pd.read_parquet(run_dir / "verl" / "train.parquet")
    val = pd.read_parquet(run_dir / "verl" / "val.parquet")
    for frame in (train, val):
        info = frame.extra_info.iloc[0]
        space = row_space(info["space"])
        assert space == harness_space(manifest) and space.described
        label = info["harness"]
        expected = harness_of(manifest, label).fresh()
        task = task_from_row(json.loads(info["task"]), "row")
        assert [m["content"] for m in frame.prompt.iloc[0]] == [
            m.content for m in expected.start(task.user_query, task.tools)]
    assert {p["sha256"] for p in json.loads(train.extra_info.iloc[0]["space"])["plugins"]} \
        == {p.sha256 for p in manifest.space.plugins}
