"""``hscale harness evolve`` is bounded, shows where it stands from the start, and resumes: an
evolution interrupted anywhere (kill -9, Ctrl-C) and rerun does not repeat its finished
rounds and freezes the pool an uninterrupted one freezes, byte for byte."""

from __future__ import annotations

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

# internal: tests the evolve command's resume helper
from hscale.cli.evolve import _saved
from hscale.harness import BuiltinWorld, Harness
from hscale.train.harness_s import Evolution, ScriptedEditor
from tests.cli import assert_user_error, hscale
from tests.train.test_evolve import BASE, REPLIES, _play

ROUNDS = "4,1"  # REPLIES: two children join in round 1, one in round 2
ARGS = ("--model", "hscale-tiny", "--rounds", ROUNDS, "--tasks", "4")


class Stop(Exception):
    """Stands for the interruption, wherever it lands."""


def _evolution(editor: ScriptedEditor, play=_play, saves: list | None = None) -> Evolution:
    tasks = BuiltinWorld().tasks(12, 0)
    return Evolution(play, Harness.from_label(BASE), "harness", tasks[:6], tasks[6:], editor,
                     (4, 3), on_save=None if saves is None else saves.append)


def _stopping_at(stop: int) -> tuple[ScriptedEditor, object]:
    """An editor and a play that raise Stop at the ``stop``-th call of either."""
    calls = [0]

    def counted(fn):
        def wrapped(*args):
            calls[0] += 1
            if calls[0] == stop:
                raise Stop
            return fn(*args)
        return wrapped

    editor = ScriptedEditor(list(REPLIES))
    editor.propose = counted(editor.propose)
    return editor, counted(_play)


def _resumed(state: dict | None) -> tuple[Evolution, list]:
    """A fresh evolution gone on from ``state`` (None: from the start), and what it played."""
    played: list = []
    evolution = _evolution(ScriptedEditor(list(REPLIES)),
                           lambda jobs: played.append(jobs) or _play(jobs))
    if state is not None:
        evolution.resume(state)
    return evolution, played


def test_an_evolution_stopped_anywhere_resumes_to_the_uninterrupted_pool():
    whole = _evolution(ScriptedEditor(list(REPLIES)), saves=(states := []))
    want = whole.run()
    assert [len(s["rounds"]) for s in states] == [0, 1, 2] and whole.requests == 7
    for stop in range(1, 3 + 7 + 1):  # each evaluation (the base harness, 2 rounds), request
        editor, play = _stopping_at(stop)
        with pytest.raises(Stop):
            _evolution(editor, play, saves := []).run()
        resumed, played = _resumed(saves[-1] if saves else None)
        assert resumed.run().record() == want.record(), stop
        pd.testing.assert_frame_equal(resumed.evaluations(), whole.evaluations())
        # the finished rounds were not repeated: neither their requests nor their episodes
        done = len(saves[-1]["rounds"]) if saves else 0
        made = sum(want.rounds[r]["proposals"] for r in range(done))
        assert resumed.editor.asked == whole.editor.asked[made:], stop
        assert len(played) == (3 if not saves else 2 - done), stop


@pytest.fixture
def replies(tmp_path: Path) -> Path:
    path = tmp_path / "replies.yaml"
    path.write_text(yaml.safe_dump(REPLIES))
    return path


def test_a_million_proposals_are_refused_at_once(tmp_path, replies):
    for rounds in ("1000000", "8,65", ",".join(["64"] * 5)):
        started = time.monotonic()
        refused = hscale("harness", "evolve", "--editor", replies, "--out",
                         tmp_path / "pool.json", "--rounds", rounds)
        assert_user_error(refused, "--rounds", "at most 64 proposals a round and 256 in all")
        assert time.monotonic() - started < 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["replies.yaml"]
    shown = hscale("harness", "evolve", "--help").stdout.replace("│", " ")
    assert "at most 64 a round, 256 in all" in " ".join(shown.split())


def _start(replies: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hscale.cli", "harness", "evolve",
                             "--editor", str(replies), "--out", str(out), *ARGS, *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _wait_for(proc: subprocess.Popen, words: str) -> list[str]:
    """stderr's lines up to the first holding ``words`` (off a terminal: plain lines)."""
    seen = []
    for line in proc.stderr:
        seen.append(line.rstrip())
        if words in line:
            return seen
    proc.wait()
    raise AssertionError(f"ended ({proc.returncode}) before {words!r}: {seen}")


def test_progress_shows_off_a_terminal_before_the_first_rounds_work(tmp_path, replies):
    proc = _start(replies, tmp_path / "pool.json")
    try:
        started = time.monotonic()
        seen = _wait_for(proc, "evaluating the base harness")
        assert time.monotonic() - started < 30
    finally:
        proc.kill()
        proc.wait()
    assert seen[0].startswith("evolving a pool from S0-T0-O0-C0-W0 for hscale-tiny: 2 rounds "
                              "of 4,1 proposals, checkpointed in")
    assert seen[-1] == ("evaluating the base harness on 4 training and 20 validation tasks "
                        "(24 episodes)")
    assert not (tmp_path / "pool.evolving.json").exists()  # killed before its checkpoint


def test_a_checkpoint_of_other_inputs_is_refused_and_force_starts_over(tmp_path, replies):
    checkpoint = tmp_path / "pool.evolving.json"
    checkpoint.write_text(json.dumps({"format": "hscale-evolving/1", "state": {},
                                      "inputs": {"--rounds": [9], "--tasks": 4}}))
    refused = hscale("harness", "evolve", "--editor", replies, "--out", tmp_path / "pool.json",
                     *ARGS)
    assert_user_error(refused, "pool.evolving.json", "other inputs", "--rounds",
                      "--force to start over")
    assert "--tasks" not in refused.stderr.split("(")[1]  # only what differs is named
    checkpoint.write_text("{")
    assert_user_error(hscale("harness", "evolve", "--editor", replies, "--out",
                             tmp_path / "pool.json", *ARGS), "not a checkpoint")
    with pytest.warns(UserWarning, match="starting over"):
        assert _saved(checkpoint, {"--rounds": [4, 3]}, force=True) is None
    checkpoint.write_text(json.dumps({"format": "hscale-evolving/1", "state": {"x": 1},
                                      "inputs": {"--rounds": [4, 3]}}))
    assert _saved(checkpoint, {"--rounds": [4, 3]}, force=False) == {"x": 1}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("whole")
    (folder / "replies.yaml").write_text(yaml.safe_dump(REPLIES))
    done = hscale("harness", "evolve", "--editor", folder / "replies.yaml", "--out",
                  folder / "pool.json", *ARGS)
    assert done.returncode == 0, done.stderr
    assert not (folder / "pool.evolving.json").exists()
    return folder


def _rounds_saved(checkpoint: Path) -> int | None:
    return len(json.loads(checkpoint.read_text())["state"]["rounds"]) \
        if checkpoint.exists() else None


# where the interruption lands: the stderr line it waits for, the rounds the checkpoint then
# holds (None: none yet), and the rounds the rerun resumes after
POINTS = {"during the base harness's evaluation": ("evaluating the base harness", None),
          "during round 1's evaluation": ("evaluating round 1", 0),
          "after round 1's checkpoint, during round 2": ("evaluating round 2", 1)}


@pytest.mark.slow  # 6 interrupted runs and their reruns: about 2 minutes on 2 cores
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
@pytest.mark.parametrize("point", list(POINTS))
def test_an_interrupted_evolution_resumes_to_the_uninterrupted_pool(tmp_path, replies, sig,
                                                                    point, uninterrupted):
    words, saved = POINTS[point]
    out, checkpoint = tmp_path / "pool.json", tmp_path / "pool.evolving.json"
    proc = _start(replies, out)
    try:
        _wait_for(proc, words)
        os.kill(proc.pid, sig)
        _, tail = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert _rounds_saved(checkpoint) == saved and not out.exists(), tail
    if sig == signal.SIGINT:  # Ctrl-C: the project's message and status, the work kept
        assert proc.returncode == 130 and tail.strip().endswith("interrupted"), tail
        assert ("rerun the same command to resume" in tail) == (saved is not None), tail
    else:
        assert proc.returncode == -signal.SIGKILL
    if saved is not None:  # other inputs do not resume the wrong state
        other = hscale("harness", "evolve", "--editor", replies, "--out", out,
                       *ARGS[:-1], "5")
        assert_user_error(other, "other inputs (--tasks, the tasks differ)")
    again = hscale("harness", "evolve", "--editor", replies, "--out", out, *ARGS)
    assert again.returncode == 0, again.stderr
    if saved is None:
        assert "resuming" not in again.stderr
        assert "evaluating the base harness" in again.stderr
    else:
        assert ("resuming after " + ("the base harness's evaluation (0 editor requests"
                                     if saved == 0 else "round 1 of 2 (4 editor requests")
                in again.stderr), again.stderr
        assert "evaluating the base harness" not in again.stderr
        assert ("round 1: asking" in again.stderr) == (saved == 0)
    assert out.read_bytes() == (uninterrupted / "pool.json").read_bytes()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "pool.episodes.parquet"),
                                  pd.read_parquet(uninterrupted / "pool.episodes.parquet"))
    assert not checkpoint.exists()
