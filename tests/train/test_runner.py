"""hscale run with the local backend (the embedded trainer, on the seconds-sized
``hscale-test`` base model): result files, skipping, resume after kill -9, the runner lock,
parallel workers."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.errors import HscaleError
from hscale.train.running import run_experiment

# internal: tests the runner's lock
from hscale.train.running._runner import runner_lock
from tests.cli import hscale

SPEC = {
    "name": "small",
    "model": "hscale-test",
    "benchmark": {"name": "builtin", "tasks": 40, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 4, "rollouts": 2},
    "steps": 6, "seeds": [0],
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 1, "tasks": 6,
                   "episodes": 6, "base_model": False},
    "defaults": {"train": {"recipe": "structured", "runs": 18},
                 "assignment": {"mode": "locality", "k": 2}},
    "arms": {"structured-18": {}, "single-harness": {"train": "single",
                                                     "assignment": {"mode": "repeat", "k": 1}}},
}


def write_spec(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump({**SPEC, **changes}))
    return path


TIMINGS = ["rollout_s", "update_s", "tokens_per_s"]  # wall-clock metrics differ run to run


def results(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    train = pd.read_parquet(run_dir / "train.parquet").drop(columns=TIMINGS)
    return train, pd.read_parquet(run_dir / "eval.parquet")


def test_run_writes_the_contracted_files_and_skips_finished_runs(tmp_path):
    spec = write_spec(tmp_path)
    states = run_experiment(spec, tmp_path / "runs")
    assert set(states.values()) == {"COMPLETED"} and len(states) == 2
    run_dir = tmp_path / "runs" / "small" / "structured-18" / "0"
    status = json.loads((run_dir / "status.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert status["state"] == "COMPLETED" and status["manifest_hash"] == manifest["hash"]
    train, evals = results(run_dir)
    assert train.step.tolist() == list(range(6)) and train.reward_mean.between(0, 1).all()
    for column in ("experiment", "arm", "seed", "run", "step", "benchmark", "setting",
                   "harness", "task_id", "reward", "success", "turns"):
        assert column in evals.columns
    assert set(evals.setting) == {"base", "in_space", "out_of_space"}
    before = (run_dir / "train.parquet").stat().st_mtime_ns
    run_experiment(spec, tmp_path / "runs")
    assert (run_dir / "train.parquet").stat().st_mtime_ns == before


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_kill_9_then_resume_gives_the_rows_of_an_uninterrupted_run(tmp_path):
    spec = write_spec(tmp_path, steps=16, arms={"structured-18": {}})
    clean = tmp_path / "clean"
    run_experiment(spec, clean)
    broken = tmp_path / "broken"
    run_dir = broken / "small" / "structured-18" / "0"
    proc = subprocess.Popen([sys.executable, "-m", "hscale.cli", "run", str(spec), "--out",
                             str(broken)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        path = run_dir / "train.parquet"
        # read the bytes once: the writer may replace the file between pyarrow's opens
        if path.is_file() and len(pd.read_parquet(io.BytesIO(path.read_bytes()))) >= 3:
            break
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = pd.read_parquet(run_dir / "train.parquet")
    assert 3 <= len(partial) < 16, "the kill should land mid-run"
    assert json.loads((run_dir / "status.json").read_text())["state"] == "RUNNING"
    states = run_experiment(spec, broken)
    assert set(states.values()) == {"COMPLETED"}
    for got, want in zip(results(run_dir), results(clean / "small" / "structured-18" / "0"),
                         strict=True):
        pd.testing.assert_frame_equal(got, want)


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_parallel_workers_give_the_rows_of_a_serial_run(tmp_path):
    spec = write_spec(tmp_path, steps=2)
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    run_experiment(spec, serial)
    seen = []
    states = run_experiment(spec, parallel, workers=2, progress=lambda *a: seen.append(a))
    assert set(states.values()) == {"COMPLETED"}
    assert {name for name, _, _ in seen} >= {"structured-18/0", "single-harness/0"}
    for arm in ("structured-18", "single-harness"):
        for got, want in zip(results(parallel / "small" / arm / "0"),
                             results(serial / "small" / arm / "0"), strict=True):
            pd.testing.assert_frame_equal(got, want)


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_workers_end_when_the_runner_is_killed_and_the_rerun_completes_them(tmp_path):
    """Workers fork from a server, not from the runner: a kill -9 of the runner still ends
    them at once (no writer is left behind to race the rerun), and the rerun resumes."""
    spec = write_spec(tmp_path, steps=40)
    runs = tmp_path / "runs" / "small"
    proc = subprocess.Popen([sys.executable, "-m", "hscale.cli", "run", str(spec), "--out",
                             str(tmp_path / "runs"), "--workers", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    files = [runs / arm / "0" / "train.parquet" for arm in ("structured-18", "single-harness")]
    deadline = time.monotonic() + 120
    while not all(f.is_file() for f in files) and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(2)  # a worker notices within moments
    written = [f.stat().st_mtime_ns for f in files]
    time.sleep(3)  # a live worker writes train.parquet after every step (well under 1 s)
    assert [f.stat().st_mtime_ns for f in files] == written, "a worker outlived its runner"
    assert {json.loads((f.parent / "status.json").read_text())["state"] for f in files} == {
        "RUNNING"}
    assert set(run_experiment(spec, tmp_path / "runs", workers=2).values()) == {"COMPLETED"}


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_workers_run_where_the_runner_is_now(tmp_path, monkeypatch):
    """Workers fork from a server that outlives one call (it keeps the folder it started
    in): a later call from another folder, with a relative runs folder, still runs there."""
    spec = write_spec(tmp_path, steps=2)
    first, second = tmp_path / "first", tmp_path / "second"
    for folder in (first, second):
        folder.mkdir()
        monkeypatch.chdir(folder)
        states = run_experiment(spec, "runs", workers=2)
        assert set(states.values()) == {"COMPLETED"} and len(states) == 2
        assert len(list((folder / "runs" / "small").glob("*/0/eval.parquet"))) == 2


def test_a_second_runner_is_refused(tmp_path):
    spec = write_spec(tmp_path)
    with runner_lock(tmp_path / "runs" / "small"), pytest.raises(HscaleError,
                                                                  match="another hscale"):
        run_experiment(spec, tmp_path / "runs")


def test_unknown_backend(tmp_path):
    with pytest.raises(HscaleError, match="unknown backend") as err:
        run_experiment(write_spec(tmp_path), tmp_path / "runs", backend="locale")
    assert "did you mean 'local'" in err.value.hint


def test_verl_dry_run_writes_launch_scripts_and_real_runs_need_a_gpu(tmp_path):
    pytest.importorskip("verl")
    spec = write_spec(tmp_path, backend="verl", arms={"structured-18": {}},
                      model="Qwen/Qwen3-4B-Instruct-2507")
    out = tmp_path / "runs"
    cmd = ["run", str(spec), "--backend", "verl", "--out", str(out)]
    dry = hscale(*cmd, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    launch = out / "small" / "structured-18" / "0" / "verl" / "launch.sh"
    assert launch.is_file() and "verl.trainer.main_ppo" in launch.read_text()
    real = hscale(*cmd)
    assert real.returncode == 2 and "--dry-run" in real.stderr
    assert len(real.stderr.strip().splitlines()) == 1


def test_a_run_another_backend_completed_is_refused_not_redone(tmp_path):
    """Results of the scripted fake must never pass for a trained run's (or be overwritten)."""
    spec = write_spec(tmp_path, arms={"structured-18": {}})
    out = tmp_path / "runs"
    assert set(run_experiment(spec, out, backend="scripted").values()) == {"COMPLETED"}
    with pytest.raises(HscaleError, match="completed by the scripted backend") as err:
        run_experiment(spec, out, backend="local")
    assert "--out" in err.value.hint


def test_clean_drops_the_checkpoints_of_completed_runs_only(tmp_path):
    from hscale.cli import main

    spec = write_spec(tmp_path)
    out = tmp_path / "runs"
    run_experiment(spec, out, backend="scripted")
    done, unfinished = out / "small" / "structured-18" / "0", out / "small" / "single-harness" / "0"
    for run_dir in (done, unfinished):
        (run_dir / "verl" / "checkpoints" / "global_step_2").mkdir(parents=True)
        (run_dir / "verl" / "checkpoints" / "global_step_2" / "model.pt").write_bytes(b"x" * 4096)
        (run_dir / "checkpoint.pt").write_bytes(b"y" * 1024)
    status = json.loads((unfinished / "status.json").read_text())
    (unfinished / "status.json").write_text(json.dumps({**status, "state": "INTERRUPTED"}))
    with pytest.raises(SystemExit) as exit_info:
        main(["clean", str(out)])
    assert exit_info.value.code == 0
    assert not (done / "checkpoint.pt").exists() and not (done / "verl" / "checkpoints").exists()
    assert (done / "eval.parquet").is_file()  # results stay
    assert (unfinished / "checkpoint.pt").is_file()  # it may resume from it
