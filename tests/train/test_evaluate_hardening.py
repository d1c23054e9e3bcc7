"""``hscale evaluate`` under a kill and under bad input: a kill -9 and rerun gives the rows of
an uninterrupted run, sampled ones included; nothing is written outside --out, nor before the
model opens; bad input is one line, before any work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from hscale.journal import read_journal
from hscale.train.running import Request, evaluate

# internal: tests the evaluator's internals
from hscale.train.running._evaluate import PARTIAL

from ..cli import assert_user_error, hscale

pytest.importorskip("torch")

LABELS = "S0-T0-O0-C0-W0,S1-T1-O1-C1-W1,S2-T0-O1-C2-W0,oos/shell"
ARGS = ["hscale-tiny", "--harnesses", LABELS, "--tasks", "6", "--decoding", "both",
        "--runs", "2", "--batch", "1"]
KEY = ["decoding", "run", "setting", "harness", "task_id"]


def _rows(run_dir: Path) -> pd.DataFrame:
    frame = pd.read_parquet(run_dir / "eval.parquet")
    return frame.sort_values(KEY).reset_index(drop=True)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> pd.DataFrame:
    out = tmp_path_factory.mktemp("whole")
    done = hscale("evaluate", *ARGS, "--out", out)
    assert done.returncode == 0, done.stderr
    return _rows(out / "evaluate" / "hscale-tiny" / "0")


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_kill_9_and_rerun_gives_the_uninterrupted_rows(tmp_path, uninterrupted):
    run_dir = tmp_path / "evaluate" / "hscale-tiny" / "0"
    proc = subprocess.Popen([sys.executable, "-m", "hscale.cli", "evaluate", *ARGS,
                             "--out", str(tmp_path)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(read_journal(run_dir / PARTIAL)) < 10 and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    saved = len(read_journal(run_dir / PARTIAL))
    assert proc.returncode == -signal.SIGKILL and not (run_dir / "eval.parquet").exists(), \
        "the evaluation finished before the kill: make it longer"
    assert 10 <= saved < len(uninterrupted)
    done = hscale("evaluate", *ARGS, "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    again = _rows(run_dir)
    assert not again.duplicated(KEY).any() and len(again) == len(uninterrupted) == 4 * 6 * 3
    columns = [*KEY, "reward", "success", "turns", "error"]
    pd.testing.assert_frame_equal(again[columns], uninterrupted[columns])
    assert (uninterrupted.decoding == "sampled").sum() == 4 * 6 * 2


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_the_rows_do_not_depend_on_the_batch(tmp_path):
    """Sampled episodes draw from seeds of their own: the same whatever shares their batch."""
    rows = []
    for batch in (1, 5, 32):
        run_dir = evaluate(Request(model="hscale-tiny", harnesses=LABELS, tasks=4, runs=2,
                                   decoding="both", max_batch=batch), tmp_path / str(batch))
        rows.append(_rows(run_dir)[[*KEY, "reward", "turns"]])
    pd.testing.assert_frame_equal(rows[0], rows[1])
    pd.testing.assert_frame_equal(rows[0], rows[2])


@pytest.mark.parametrize("experiment", ["../../escaped-exp", "/abs/path", "a/b", "..", "",
                                        ".hidden", "x" * 65, "a\nb"])
def test_the_experiment_is_a_folder_name_under_out(tmp_path, experiment):
    out = tmp_path / "deep" / "runs"
    done = hscale("evaluate", "hscale-tiny", "--tasks", "1", "--harnesses", "base",
                  "--out", out, "--experiment", experiment, cwd=tmp_path)
    assert_user_error(done, "--experiment")
    assert list(tmp_path.iterdir()) == [] and not Path("/abs/path").exists()


def test_a_dead_endpoint_is_refused_at_once_and_leaves_nothing(tmp_path):
    start = time.monotonic()
    done = hscale("evaluate", "http://127.0.0.1:9/v1", "--tasks", "1", "--out", tmp_path / "o")
    assert_user_error(done, "endpoint http://127.0.0.1:9/v1", "no answer")
    assert time.monotonic() - start < 10 and not (tmp_path / "o").exists()


@pytest.mark.parametrize("args, words", [
    (["--benchmark", "jsonl"], ["benchmark jsonl", "no path"]),
    (["--benchmark", "clawgym"], ["benchmark clawgym", "no path"]),
    (["--tasks", "100000"], ["--tasks 100000", "at most"]),
    (["--runs", "100000", "--decoding", "sampled"], ["--runs 100000", "at most"]),
    (["--harnesses", "all", "--tasks", "1000", "--decoding", "both", "--runs", "60"],
     ["episodes", "at most"]),
    (["--harnesses", "S0-T0-O0-C0-W0,,oos/shell"], ["--harnesses", "empty label"]),
    (["--harnesses", "S0-T0-O0-C0-W0,"], ["--harnesses", "empty label"]),
    (["--harnesses", "base++in_space"], ["--harnesses", "empty set"]),
    (["--decoding", "beam"], ["--decoding"]),
])
def test_bad_input_is_one_line_before_any_work(tmp_path, args, words):
    start = time.monotonic()
    done = hscale("evaluate", "hscale-tiny", *args, "--out", tmp_path / "o")
    assert_user_error(done, *words)
    assert time.monotonic() - start < 10 and not (tmp_path / "o").exists()
