"""README's main job at smoke-test scale, end to end through the command line: every demo
arm runs (2 worker processes) from the shipped base model, then the report is written; and
its rows are the recorded ones (golden/demo_quick.json): a refactor must not change what a
run produces. Recorded before the seams were reshaped; recorded again when the sampler began
choosing each tick's width (which regroups the random draws) and the base model's reference
run was added; again when each episode began drawing from its own stream through a
batch-invariant forward (issue 56), so that batching no longer changes a row; and again when
the sampler began drawing one uniform a token and summing attention's values 128 slots at a
time (benchmarks/golden_rows.py writes them from a --quick run's folder)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hscale.contracts import BEHAVIOUR, COST, EVAL_KEY, TRANSCRIPTS, Termination, transcript_views

pytest.importorskip("torch")
pytest.importorskip("verl")

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("golden") / "demo_quick.json"
TIMINGS = ["rollout_s", "update_s", "tokens_per_s"]  # wall-clock metrics differ run to run


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "runs"
    run = subprocess.run([sys.executable, "-m", "hscale.cli", "run",
                          str(ROOT / "experiments" / "demo.yaml"), "--quick", "--out", str(out),
                          "--workers", "2"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "10 of 10 runs completed" in run.stdout  # 9 arms and the base model
    return out / "demo-quick"


@pytest.mark.slow
def test_demo_quick_runs_every_arm_and_reports(demo):
    for run_dir in sorted(demo.glob("*/0")):
        assert json.loads((run_dir / "status.json").read_text())["state"] == "COMPLETED"
        evals = pd.read_parquet(run_dir / "eval.parquet")
        assert set(evals.setting) == {"base", "in_space", "out_of_space"}
    assert len(list(demo.glob("*/0"))) == 10
    report = subprocess.run([sys.executable, "-m", "hscale.cli", "report", str(demo)],
                            capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stderr[-2000:]
    html = (demo / "report" / "report.html").read_text()
    assert "structured-18" in html and "<img" in html
    assert "base model (no RL)" in html and "RL gain over the base model" in html
    # the behaviour frequencies of every arm, from its trajectories
    behaviour = pd.read_csv(demo / "report" / "behaviour.csv")
    assert set(behaviour.method) == {p.parent.name.replace("base-model", "base model (no RL)")
                                     for p in demo.glob("*/0")}
    calls = behaviour[behaviour.measure == "tool calls per episode"]
    # every arm calls tools in the syntax it trained on; out of the space (another syntax, 6
    # episodes at this scale) an arm may make none
    inside = calls[calls.setting != "out_of_space"]
    assert set(inside.method) == set(behaviour.method) and inside["mean"].gt(0).all()
    assert calls["mean"].ge(0).all() and "Behaviour: what the trajectories did" in html


@pytest.mark.slow
def test_demo_quick_rows_are_the_recorded_ones(demo):
    golden = json.loads(GOLDEN.read_text())
    assert sorted(p.parent.name for p in demo.glob("*/0")) == sorted(golden)
    for arm, want in golden.items():
        run_dir = demo / arm / "0"
        evals = pd.read_parquet(run_dir / "eval.parquet")
        expected = pd.DataFrame(want["eval"])
        # columns added to the contract since the golden rows: present, and empty here
        assert set(evals.columns) == set(expected.columns) | {"error", "termination",
                                                               *BEHAVIOUR, *COST}, arm
        assert (evals["error"] == "").all(), arm
        assert evals["termination"].isin(list(Termination)).all(), arm  # every one seen
        assert evals["tool_calls"].notna().all(), arm  # every episode's trajectory counted
        evals = evals[list(expected.columns)]
        for column in expected.columns:
            got, ref = evals[column].tolist(), expected[column].tolist()
            assert got == ref, f"{arm}: eval.parquet column {column} differs"
        train = pd.read_parquet(run_dir / "train.parquet").drop(columns=TIMINGS,
                                                                  errors="ignore")
        expected = pd.DataFrame(want["train"])
        # metrics added since the golden rows: present, and zero here (no checker failed)
        added = {"checker_error_rate"} if len(expected) else set()  # a base model trains not
        assert set(train.columns) == set(expected.columns) | added, arm
        assert (train.get("checker_error_rate", pd.Series(dtype=float)) == 0).all(), arm
        # float32 means over a step's tokens (kl, loss): another CPU's kernels round them
        # differently, by up to float32's resolution; the eval rows above stay exact
        for column in expected.columns:
            np.testing.assert_allclose(train[column].to_numpy(dtype=float),
                                       expected[column].to_numpy(dtype=float),
                                       rtol=1e-6, atol=1e-7,
                                       err_msg=f"{arm}: train.parquet column {column}")


@pytest.mark.slow
def test_every_evaluated_episode_has_its_transcript_and_cost(demo):
    for run_dir in sorted(demo.glob("*/0")):
        evals = pd.read_parquet(run_dir / "eval.parquet")
        kept = pd.read_parquet(run_dir / TRANSCRIPTS)
        assert len(kept) == len(evals), run_dir
        key = list(EVAL_KEY)
        assert not kept.duplicated(key).any()
        joined = evals.merge(kept, on=key, validate="one_to_one")
        assert len(joined) == len(evals)
        assert joined[list(COST)].notna().all().all()  # the embedded policy counts its tokens
        assert (joined.seconds > 0).all()
        for _, row in joined.head(40).iterrows():
            record = json.loads(row.transcript)
            assert record["reward"] == row.reward
            assert len(record["tokens"]) == row.model_calls == row.turns
            assert sum(p for p, _ in record["tokens"]) == row.prompt_tokens
            assert len(record["calls"]) == row.tool_calls
            # the first view is the harness's rendering: its system prompt, then the task
            first = transcript_views(record)[0]
            assert first[0][0] == "system" and first[1][0] == "user"


@pytest.mark.slow
def test_a_quick_demo_run_reruns_to_identical_rows(demo, tmp_path):
    """``hscale rerun`` on one arm of the quick demo (CI's check that a run reproduces):
    every row and the checkpoint come back identical, with the time it took; a run whose
    checkpoint was changed on purpose is shown to differ, by entry and element."""
    import shutil

    import torch

    run_dir = demo / "k1" / "0"
    done = subprocess.run([sys.executable, "-m", "hscale.cli", "rerun", str(run_dir)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "k1/0: identical rows" in done.stdout and "1 of 1 runs reproduced" in done.stdout
    changed = tmp_path / "demo-quick" / "k1" / "0"
    shutil.copytree(run_dir, changed)
    state = torch.load(changed / "checkpoint.pt", weights_only=True)
    name = next(iter(state["model"]))
    state["model"][name] = state["model"][name] + 1.0
    torch.save(state, changed / "checkpoint.pt")
    differs = subprocess.run([sys.executable, "-m", "hscale.cli", "rerun", str(changed)],
                             capture_output=True, text=True, timeout=600)
    assert differs.returncode == 1, differs.stdout + differs.stderr[-2000:]
    assert f"checkpoint.pt: model.{name}, first at element 0" in differs.stdout
