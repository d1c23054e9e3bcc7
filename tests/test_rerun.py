"""``hscale rerun``: a finished run run again from its manifest into a scratch folder and
compared with its folder. On the embedded trainer (the CI check, on a seconds-sized run) the
rows are identical; a row, a checkpoint or the code changed on purpose is shown by file,
column and first differing row; veRL's runs are compared by Pass@1, and say so."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.contracts import EVAL, Manifest, RunState, read_provenance, rng_for, write_status
from hscale.train.backends import get_backend
from hscale.train.running import rerun, run_experiment
from tests.cli import hscale

TINY = {
    "name": "tiny",
    "model": "hscale-test",
    "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 2, "rollouts": 2},
    "steps": 2, "seeds": [0],
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 2, "tasks": 3,
                   "episodes": 3, "base_model": False},
    "defaults": {"train": {"recipe": "structured", "runs": 18},
                 "assignment": {"mode": "locality", "k": 2}},
    "arms": {"structured-18": {}},
}


def _run(folder: Path, backend: str = "local", **changes) -> Path:
    spec = folder / "tiny.yaml"
    spec.write_text(yaml.safe_dump({**TINY, **changes}))
    states = run_experiment(spec, folder / "runs", backend=get_backend(backend))
    assert set(states.values()) == {"COMPLETED"}
    return folder / "runs" / "tiny" / "structured-18" / "0"


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Path:
    """A finished run of the embedded trainer (2 steps of the seconds-sized base model)."""
    return _run(tmp_path_factory.mktemp("local"))


@pytest.fixture(scope="module")
def scripted_run(tmp_path_factory) -> Path:
    """A finished run of the scripted backend (no model), made with a non-default setting."""
    folder = tmp_path_factory.mktemp("scripted")
    spec = folder / "tiny.yaml"
    spec.write_text(yaml.safe_dump({**TINY, "steps": 4}))
    run_experiment(spec, folder / "runs", backend=get_backend("scripted", error_rate=0.6))
    return folder / "runs" / "tiny" / "structured-18" / "0"


def test_a_rerun_of_an_embedded_run_has_identical_rows(local_run, tmp_path):
    """The CI check: the rows of a quick run come back identical, and it says how long."""
    done = hscale("rerun", local_run, "--out", tmp_path / "scratch")
    assert done.returncode == 0, done.stderr + done.stdout
    first = done.stdout.splitlines()[0]
    assert first.startswith("structured-18/0: identical rows (schedule.parquet, "
                            "train.parquet, eval.parquet"), first
    assert "checkpoint.pt" in first and "rerun in " in first and first.endswith(" s")
    assert "1 of 1 runs reproduced" in done.stdout
    scratch = tmp_path / "scratch" / "tiny" / "structured-18" / "0"
    records, _ = read_provenance(scratch)
    assert [r.event for r in records] == ["start"] and records[0].backend == "local"


def _copy(run: Path, into: Path) -> Path:
    import shutil

    target = into / "runs" / "tiny" / "structured-18" / "0"
    shutil.copytree(run, target)
    return target


def test_a_changed_row_is_shown_by_file_column_and_first_row(scripted_run, tmp_path):
    run = _copy(scripted_run, tmp_path)
    rows = pd.read_parquet(run / EVAL)
    rows.loc[4, "success"] = not bool(rows.loc[4, "success"])
    rows.to_parquet(run / EVAL)
    done = hscale("rerun", run)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("structured-18/0: differs from its rerun (rerun in ")
    row = rows.iloc[4]
    assert lines[1] == (
        f"  eval.parquet: column success, first at row 4 (run {row['run']}, step "
        f"{row['step']}, benchmark {row['benchmark']!r}, setting {row['setting']!r}, harness "
        f"{row['harness']!r}, task_id {row['task_id']!r}, decoding {row['decoding']!r}): "
        f"{bool(row['success'])!r} in the run, {not row['success']!r} in the rerun")
    assert lines[2].startswith("  the rerun is in ") and "0 of 1 runs reproduced; 1 differ" \
        in done.stdout
    assert Path(lines[2].split(" is in ")[1]).is_dir()  # kept to look at


def test_a_rerun_uses_the_settings_the_run_was_made_with(scripted_run):
    """The scripted run was made with error_rate 0.6 (its provenance says so); the default
    0.3 would give other rows."""
    records, _ = read_provenance(scripted_run)
    assert records[-1].settings == {"error_rate": 0.6}
    result = rerun(scripted_run)
    assert result.ok and result.identical and result.differences == []
    assert not result.scratch.exists()  # a temporary scratch is removed when it matches


def test_a_code_change_shows_in_the_rerun(scripted_run, monkeypatch):
    """Another random stream (as a refactor that draws in another order would give)."""
    monkeypatch.setattr(Manifest, "rng", lambda self, purpose: rng_for(
        self.seed, self.arm, purpose + "-changed"))
    result = rerun(scripted_run)
    assert not result.ok and result.differences
    said = "\n".join(result.lines())
    assert "differs from its rerun" in said and "first at row" in said


def test_a_changed_checkpoint_is_shown_by_its_first_differing_element(local_run, tmp_path):
    import torch

    run = _copy(local_run, tmp_path)
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    name = sorted(state["model"])[0]
    state["model"][name].view(-1)[2] += 1.0
    torch.save(state, run / "checkpoint.pt")
    result = rerun(run)
    assert [d.file for d in result.differences] == ["checkpoint.pt"]
    line = result.differences[0].line()
    assert line.startswith(f"checkpoint.pt: model.{name}, first at element 2: ")


def test_verl_runs_are_compared_by_pass1_and_say_so(tmp_path):
    from hscale.train.running import Rerun

    # internal: tests the comparison step itself
    from hscale.train.running._compare import compare_pass1

    def rows(successes: list[int]) -> pd.DataFrame:
        return pd.DataFrame({"task_id": [f"t{i % 10}" for i in range(len(successes))],
                             "decoding": "sampled", "success": [bool(s) for s in successes]})

    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir(), (tmp_path / "c").mkdir()
    rows([1, 0] * 20).to_parquet(tmp_path / "a" / EVAL)
    rows([0, 1] * 20).to_parquet(tmp_path / "b" / EVAL)
    rows([1] * 40).to_parquet(tmp_path / "c" / EVAL)
    near = compare_pass1(tmp_path / "a", tmp_path / "b")
    far = compare_pass1(tmp_path / "a", tmp_path / "c")
    assert near.within and not far.within and near.tasks == 10 and near.episodes == 40
    result = Rerun(tmp_path / "x" / "arm" / "0", tmp_path / "b", "verl", seconds=3.0,
                   identical=False, state=RunState.COMPLETED.value, pass1=far)
    line = result.lines()[0]
    assert not result.ok
    assert "verl does not promise identical rows, so the rerun is compared statistically" \
        in line and "Pass@1 50.0% in the run, 100.0% in the rerun: outside" in line


def test_wall_clock_columns_and_transcript_seconds_are_left_out():
    # internal: tests the comparison step itself
    # internal: the row comparison, on frames that differ in wall clock only, then in more
    from hscale.train.running._compare import _comparable, compare_frame

    a = pd.DataFrame({"step": [0, 1], "loss": [0.5, 0.25], "rollout_s": [1.0, 2.0],
                      "transcript": [json.dumps({"m": 1, "model_calls": [{"seconds": 1.5}]})] * 2})
    b = a.assign(rollout_s=[9.0, 9.0], transcript=[json.dumps(
        {"model_calls": [{"seconds": 7.0}], "m": 1})] * 2)
    assert compare_frame("train.parquet", _comparable(a), _comparable(b)) == []
    c = a.assign(loss=[0.5, 0.3]).drop(columns="transcript")
    said = [d.line() for d in compare_frame("train.parquet", _comparable(a), _comparable(c))]
    assert said == ["train.parquet: (columns): transcript in the run, none more in the rerun",
                    "train.parquet: column loss, first at row 1 (step 1): 0.25 in the run, "
                    "0.3 in the rerun"]
    short = compare_frame("train.parquet", _comparable(a), _comparable(a.iloc[:1]))
    assert [d.line() for d in short] == ["train.parquet: (rows): 2 rows in the run, 1 rows in "
                                         "the rerun"]


def test_bad_input_is_one_line_and_exit_status_2(scripted_run, tmp_path):
    missing = hscale("rerun", tmp_path / "nowhere")
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    empty = tmp_path / "empty"
    (empty / "e" / "a" / "0").mkdir(parents=True)
    assert hscale("rerun", empty).returncode == 2
    run = _copy(scripted_run, tmp_path / "unfinished")
    write_status(run, RunState.INTERRUPTED, Manifest.read(run).hash)
    unfinished = hscale("rerun", run)
    assert unfinished.returncode == 2 and "not a completed run" in unfinished.stderr
    taken = tmp_path / "taken" / "tiny" / "structured-18" / "0"
    taken.mkdir(parents=True)
    (taken / "x").write_text("mine")
    refused = hscale("rerun", scripted_run, "--out", tmp_path / "taken")
    assert refused.returncode == 2 and "already holds files" in refused.stderr
    assert (taken / "x").read_text() == "mine"


def test_sample_draws_that_many_completed_runs(scripted_run):
    done = hscale("rerun", scripted_run.parents[2], "--sample", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "rerunning 1 completed runs drawn at random (seed 0)"
