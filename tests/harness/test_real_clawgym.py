"""Real ClawGym tasks (ClawGym-Agents ``RL/data``, Apache-2.0, read from the folder beside the
project): every reward script runs as ClawGym's runner runs it, with no checker error, and
hscale's reward equals a re-statement of that runner, in every containment this machine
gives (the workspace mounted at /root/.openclaw/workspace, or the path mapped)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from hscale.harness.env import Env
from hscale.harness.tasks import load_tasks
from hscale.harness.tasks.jail import probe

REAL = Path(__file__).resolve().parents[3] / "shared" / "realtasks" / "clawgym"
MOUNT = "/root/.openclaw/workspace"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"no real ClawGym tasks at {REAL}")


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(REAL)


def _runner_reward(task, workspace: Path) -> float:
    """ClawGym's runner, restated: reward/ copied into a copy of the workspace, the script's
    path to the workspace pointing at that copy, ``bash reward.sh`` from / with no argument
    and a 120 s limit; the last non-empty output line as a number, 0 for a non-zero exit or
    no number."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "workspace"
        shutil.copytree(workspace, copy)
        shutil.copytree(Path(task.checker["path"]).parent, copy / "reward", dirs_exist_ok=True)
        script = copy / "reward" / "reward.sh"
        script.write_text(script.read_text().replace(MOUNT, str(copy)))
        done = subprocess.run(["bash", str(script)], cwd="/", capture_output=True, text=True,
                              timeout=120, env={"PATH": os.environ["PATH"]})
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        return 0.0
    try:
        return float(lines[-1])
    except ValueError:
        return 0.0


def test_every_real_task_loads_with_the_runners_layout(tasks):
    assert len(tasks) == len([p for p in REAL.iterdir() if p.name.startswith("task_")]) == 100
    assert {t.checker.get("mount") for t in tasks} == {MOUNT}


@pytest.mark.parametrize("kind", ["bubblewrap", "namespaces", "limits"])
def test_every_reward_script_runs_and_scores_as_the_runner(tasks, kind, monkeypatch):
    if probe(kind).kind != kind:
        pytest.skip(f"{kind} containment does not work here")
    monkeypatch.setenv("HSCALE_CONTAINMENT", kind)
    sample = tasks if kind == "bubblewrap" else tasks[::5]  # the others: every fifth
    errors, unequal = [], []
    for task in sample:
        with Env(task) as env:
            reward = env.score("")
            if env.checker_error:
                errors.append(f"{task.task_id}: {env.checker_error}")
            untouched = Path(tempfile.mkdtemp())
            try:
                for rel, data in task.input_files.items():
                    (untouched / rel).parent.mkdir(parents=True, exist_ok=True)
                    (untouched / rel).write_bytes(data if isinstance(data, bytes)
                                                  else data.encode())
                if reward != _runner_reward(task, untouched):
                    unequal.append(task.task_id)
            finally:
                shutil.rmtree(untouched)
    assert errors == [] and unequal == []
