"""Bring your own tasks, end to end: experiments/examples trains on a ClawGym task set and
evaluates on it and on the builtin world, through both backends and the report; a
benchmark's content hash is the same on any machine and changes with any task file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.contracts import Manifest
from hscale.errors import HscaleError
from hscale.train.planning import plan_runs
from tests.cli import hscale

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "experiments" / "examples"
TASKS = EXAMPLES / "tasks"


def spec_file(tmp_path: Path, name: str = "spec.yaml", arms: list[str] | None = None,
              **changes: object) -> Path:
    """experiments/examples/examples.yaml, its task paths absolute, ``changes`` applied."""
    spec = yaml.safe_load((EXAMPLES / "examples.yaml").read_text())
    spec["benchmark"]["path"] = str(TASKS)
    for bench in spec["evaluation"]["benchmarks"]:
        if "path" in bench:
            bench["path"] = str(TASKS)
    if arms is not None:
        spec["arms"] = {k: v for k, v in spec["arms"].items() if k in arms}
    spec.update(changes)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.slow
def test_the_example_spec_trains_and_reports_both_benchmarks(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "runs"
    run = hscale("run", str(EXAMPLES / "examples.yaml"), "--quick", "--out", str(out))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "6 of 6 runs completed" in run.stdout  # 5 arms and the base model
    runs = out / "examples-quick"
    for run_dir in sorted(runs.glob("*/0")):
        evals = pd.read_parquet(run_dir / "eval.parquet")
        assert set(evals.benchmark) == {"examples", "builtin"}, run_dir
        examples = evals[evals.benchmark == "examples"]
        assert set(examples.task_id) <= {f"ex-{c}-{i:02d}" for c in
                                          ("files", "notes", "arithmetic") for i in range(1, 11)}
        assert (evals.error == "").all()
    report = hscale("report", str(runs))
    assert report.returncode == 0, report.stderr[-2000:]
    table1 = (runs / "report" / "report.md").read_text().split("### Table 1")[1]
    header = table1.split("\n")[2]
    assert "in-space examples" in header and "in-space builtin" in header


def test_the_example_spec_writes_verl_inputs_for_both_benchmarks(tmp_path):
    pytest.importorskip("verl")
    spec = spec_file(tmp_path, arms=["structured-18"], model="Qwen3-4B-Instruct-2507")
    run = hscale("run", str(spec), "--quick", "--backend", "verl", "--dry-run",
                 "--out", str(tmp_path / "runs"))
    assert run.returncode == 0, run.stderr[-2000:]
    verl = tmp_path / "runs" / "examples-quick" / "structured-18" / "0" / "verl"
    train, val = pd.read_parquet(verl / "train.parquet"), pd.read_parquet(verl / "val.parquet")
    assert {info["task_id"][:3] for info in train.extra_info} == {"ex-"}
    assert {info["benchmark"] for info in val.extra_info} == {"examples", "builtin"}
    # the reward scripts travel as paths the rollout workers run
    checkers = {json.loads(r["ground_truth"])["checker"]["kind"] for r in val.reward_model}
    assert checkers == {"script", "answer"}


def manifests(spec: Path, out: Path) -> dict[str, Manifest]:
    return {p.manifest.arm: p.manifest for p in plan_runs(spec, out)}


def test_the_content_hash_is_the_same_anywhere_and_follows_every_file(tmp_path):
    for where in ("a", "b"):
        shutil.copytree(TASKS, tmp_path / where / "tasks")
        spec = yaml.safe_load((EXAMPLES / "examples.yaml").read_text())
        spec["arms"] = {"structured-18": {}}
        (tmp_path / where / "spec.yaml").write_text(yaml.safe_dump(spec))
    a = manifests(tmp_path / "a" / "spec.yaml", tmp_path / "runs-a")["structured-18"]
    b = manifests(tmp_path / "b" / "spec.yaml", tmp_path / "runs-b")["structured-18"]
    assert a.benchmark.path != b.benchmark.path  # each its own folder ...
    assert a.benchmark.content == b.benchmark.content and a.hash == b.hash  # ... one hash
    # one byte of one reward script changes the content, and the manifest
    script = tmp_path / "b" / "tasks" / "task_0007" / "reward" / "reward.py"
    script.write_text(script.read_text() + "\n")
    c = manifests(tmp_path / "b" / "spec.yaml", tmp_path / "runs-c")["structured-18"]
    assert c.benchmark.content != b.benchmark.content and c.hash != b.hash
    # a run planned before the edit refuses the changed tasks
    from hscale.train.planning import train_tasks

    with pytest.raises(HscaleError, match="changed since the run was planned"):
        train_tasks(b)
    assert len(train_tasks(c)) == 20


def test_evaluating_on_training_tasks_is_refused_at_plan(tmp_path):
    spec = spec_file(tmp_path, arms=["structured-18"])
    body = yaml.safe_load(spec.read_text())
    body["evaluation"]["benchmarks"][0]["split"] = "eval"  # every task, trained ones too
    spec.write_text(yaml.safe_dump(body))
    result = hscale("validate", str(spec))
    assert result.returncode == 2
    assert "evaluation.benchmarks[0]: 20 evaluated tasks are also training tasks" in \
        result.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(("bench", "words"), [
    ({"name": "clawgym"}, "give its path"),
    ({"name": "clawgym", "path": "nowhere"}, "nowhere: no such file or folder"),
    ({"name": "clawgym", "path": str(TASKS), "tasks": 25}, "25 train tasks asked for"),
    ({"name": "builtin", "path": str(TASKS)}, "takes no path"),
    ({"name": "jsonl", "path": str(TASKS)}, "not a .jsonl task list"),
    ({"name": "clawgym", "path": str(TASKS), "split": 1.5}, "benchmark.split"),
])
def test_bad_benchmarks_are_one_line_errors(tmp_path, bench, words):
    spec = spec_file(tmp_path, arms=["structured-18"], benchmark=bench)
    result = hscale("validate", str(spec))
    assert result.returncode == 2, result.stdout
    assert words in result.stderr and result.stderr.count("\n") == 1, result.stderr
