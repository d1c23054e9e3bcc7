"""Broken checkers fail loudly: a benchmark whose reward scripts crash is refused at
``validate``; a run whose checkers failed says how often; ``tasks check`` gives one line per
distinct problem with its first cause; a task that cannot be loaded is left out and named;
prompts longer than the model's context are counted at planning."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hscale.harness.tasks import Task, write_tasks
from tests.cli import hscale

REAL = Path(__file__).resolve().parents[2] / "shared" / "realtasks" / "clawgym"
ARM = "arms:\n  one: {train: single, assignment: {mode: repeat, k: 1}}\n"

# exits 1 whenever the final answer is not empty: fine on an untouched workspace, broken in use
CRASH_ON_ANSWER = """import os, sys
if open(os.environ["FINAL_ANSWER_FILE"]).read():
    sys.exit("reward: cannot parse the answer")
print(0.0)
"""
CRASH = "import sys\nsys.exit('reward: no such column: total')\n"


def _tasks(tmp_path: Path, script: str, n: int = 9) -> Path:
    (tmp_path / "reward.py").write_text(script)
    rows = tmp_path / "tasks.jsonl"
    write_tasks([Task(task_id=f"t{i}", user_query=f"say {i} .", final_answer=str(i),
                      split="eval" if i % 3 else "train",
                      checker={"kind": "script", "path": "reward.py"}) for i in range(n)], rows)
    return rows


SMALL = ("evaluation: {base_model: false, in_space: 0, out_of_space: [], runs: 1}\n"
         "algorithm: {name: grpo, tasks_per_step: 2, rollouts: 2}\n")


def _spec(tmp_path: Path, benchmark: str, backend: str = "scripted") -> Path:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: health\nbackend: {backend}\nsteps: 2\nbenchmark: {benchmark}\n"
                    f"{SMALL}{ARM}")
    return spec


def test_a_benchmark_whose_checkers_all_crash_is_refused_at_validate(tmp_path):
    _tasks(tmp_path, CRASH)
    spec = _spec(tmp_path, "{name: jsonl, path: tasks.jsonl}")
    for command in ("validate", "plan"):
        result = hscale(command, spec, *(["--out", tmp_path / "runs"] if command == "plan"
                                         else []))
        assert result.returncode == 2, result.stdout + result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert "benchmark: the checkers of" in lines[0] and "8 of 8 sampled tasks fail" in lines[0]
        assert "no such column: total" in lines[0] and "hscale tasks check" in lines[0]
    assert not (tmp_path / "runs").exists()


@pytest.mark.skipif(not REAL.is_dir(), reason=f"no real ClawGym tasks at {REAL}")
def test_real_tasks_without_their_check_script_are_refused_and_grouped(tmp_path):
    folder = tmp_path / "cg"
    for name in sorted(p.name for p in REAL.iterdir() if p.name.startswith("task_"))[:4]:
        shutil.copytree(REAL / name, folder / name)
        (folder / name / "reward" / "check.py").unlink()
    spec = _spec(tmp_path, "{name: clawgym, path: cg, split: 0.5}")
    refused = hscale("validate", spec)
    assert refused.returncode == 2 and "can't open file" in refused.stderr
    checked = hscale("tasks", "check", folder)
    lines = checked.stdout.strip().splitlines()
    assert checked.returncode == 2 and lines[-1] == "4 problems in 4 tasks"
    assert len(lines) == 2 and "(and 3 more: " in lines[0], lines  # one line for all four
    first = lines[0].split(": reward script exited with 1: ", 1)[1]
    assert first.startswith("python3: can't open file 'task_0000/reward/check.py'"), first


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_run_prints_the_checker_error_rate(tmp_path):
    _tasks(tmp_path, CRASH_ON_ANSWER)
    spec = _spec(tmp_path, "{name: jsonl, path: tasks.jsonl}")
    assert hscale("validate", spec).returncode == 0  # an untouched workspace scores 0 fine
    result = hscale("run", spec, "--out", tmp_path / "runs")
    assert result.returncode == 0 and "runs completed" in result.stdout
    warning = [line for line in result.stderr.splitlines() if "checker errors" in line]
    assert len(warning) == 1, result.stderr
    assert "of training rollouts" in warning[0] and "evaluated episodes" in warning[0]
    assert "cannot parse the answer" in warning[0]
    report = hscale("report", tmp_path / "runs" / "health")
    assert report.returncode == 0 and warning[0] in report.stderr


def test_a_task_that_cannot_be_loaded_is_left_out_and_named(tmp_path):
    rows = _tasks(tmp_path, "print(0.0)\n")
    lines = rows.read_text().splitlines()
    lines[4] = lines[4].replace('"user_query": "say 4 ."', '"user_query": ""')
    rows.write_text("\n".join(lines) + "\n")
    spec = _spec(tmp_path, "{name: jsonl, path: tasks.jsonl}")
    kept = hscale("validate", spec)
    assert kept.returncode == 0
    assert "1 task left out" in kept.stderr and "line 5" in kept.stderr, kept.stderr
    strict = _spec(tmp_path, "{name: jsonl, path: tasks.jsonl, strict: true}")
    stopped = hscale("validate", strict)
    assert stopped.returncode == 2 and "user_query" in stopped.stderr


def test_prompts_longer_than_the_context_are_counted_at_plan(tmp_path):
    long = " ".join(["zebra quokka"] * 400) + " ?"
    rows = tmp_path / "tasks.jsonl"
    write_tasks([Task(task_id=f"t{i}", user_query=f"{long} {i}" if i < 3 else f"say {i} .",
                      split="eval" if i % 3 else "train",
                      checker={"kind": "answer", "expected": str(i)}) for i in range(9)], rows)
    spec = _spec(tmp_path, "{name: jsonl, path: tasks.jsonl}", backend="local")
    result = hscale("validate", spec)
    assert result.returncode == 0
    fit = [line for line in result.stderr.splitlines() if "do not fit" in line]
    assert fit and "1 of 3 prompts do not fit the model's 384-token context" in fit[0], fit
    assert any("outside the embedded policy's vocabulary" in line
               for line in result.stderr.splitlines())
