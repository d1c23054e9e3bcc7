"""Black-box harnesses in a spec's ``evaluation.out_of_space``: validated with the spec,
refused before anything is written when not installed here, played through the real CLI by
the scripted and the embedded backends (the model served to it), scored by each task's
checker, and shown by the report under the papers' Table 2 column."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.contracts import EVAL, Manifest, read_eval, result_problems
from hscale.harness import HARNESSES
from hscale.train.backends import ScriptedBackend
from hscale.train.running import run_experiment
from tests.cli import hscale

BB = ["bb/claude-code", "bb/codex"]


def _spec(tmp_path: Path, backend: str = "scripted", out_of_space=("oos/shell", *BB)) -> Path:
    path = tmp_path / "bb.yaml"
    path.write_text(yaml.safe_dump({
        "name": "bb", "backend": backend,
        "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
        "algorithm": {"name": "grpo", "tasks_per_step": 2, "rollouts": 2},
        "steps": 2, "seeds": [0],
        "evaluation": {"in_space": 0, "base_model": False, "runs": 1, "tasks": 3,
                       "out_of_space": list(out_of_space)},
        "arms": {"structured": {"train": {"recipe": "structured", "runs": 18}}}}))
    return path


def _installed() -> None:
    for name in BB:
        if not HARNESSES.get(name).installed():
            pytest.skip(f"{name} is not installed here: hscale harness install {name}")


def test_an_unknown_black_box_harness_is_one_line_naming_the_key(tmp_path):
    done = hscale("validate", _spec(tmp_path, out_of_space=["bb/claude"]))
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "\n" not in line and "out_of_space" in line and "'bb/claude'" in line
    assert "bb/claude-code" in line  # the hint names what is there


def test_a_run_refuses_a_harness_not_installed_before_writing_anything(tmp_path):
    empty = tmp_path / "no-harnesses"
    empty.mkdir()
    done = hscale("run", _spec(tmp_path), "--out", tmp_path / "runs",
                  env={"HSCALE_HARNESSES": str(empty)})
    assert done.returncode == 2, done.stderr
    assert "bb/claude-code is not installed" in done.stderr
    assert "hscale harness install bb/claude-code" in done.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.parquet"))


def test_harness_commands_take_a_spec_with_black_box_harnesses(tmp_path):
    spec = _spec(tmp_path)
    check = hscale("harness", "selfcheck", "--spec", spec, "--tasks", "1")
    assert check.returncode == 0, check.stderr
    assert "244 harnesses" in check.stdout  # 243 configurations and oos/shell, no CLI
    render = hscale("harness", "render", "bb/codex")
    assert render.returncode == 2 and "real CLI" in render.stderr
    assert "\n" not in render.stderr.strip()


@pytest.mark.slow
@pytest.mark.parametrize("error_rate", [0.0, 1.0])
def test_the_scripted_backend_plays_each_cli_and_its_checker_scores_it(tmp_path, error_rate):
    """A scripted model that always replays the solution scores 1 under every real CLI; one
    that never acts scores 0: the rewards are the checkers', not the backend's."""
    _installed()
    states = run_experiment(_spec(tmp_path), tmp_path / "runs",
                            backend=ScriptedBackend(error_rate=error_rate))
    assert set(states.values()) == {"COMPLETED"}
    run_dir = Path(next(iter(states)))
    frame = pd.read_parquet(run_dir / EVAL)
    bb = frame[frame.harness.isin(BB)]
    assert sorted(bb.harness.unique()) == BB and len(bb) == 2 * 3 * 2  # greedy and sampled
    assert sorted(bb.decoding.unique()) == ["greedy", "sampled"]
    assert (bb.setting == "out_of_space").all()
    assert (bb.reward == (1.0 - error_rate)).all(), bb[["harness", "task_id", "reward"]]
    # every episode's transcript; a CLI's holds each model call from the server's record
    kept = read_eval(run_dir, transcripts=True)
    assert len(kept) == len(frame) and kept.transcript.notna().all()
    calls = kept[kept.harness.isin(BB)].transcript.map(lambda t: json.loads(t)["model_calls"])
    assert (calls.map(len) == kept[kept.harness.isin(BB)].model_calls).all()
    assert calls.map(lambda c: all("reply" in x for x in c)).all()
    if error_rate == 0.0:
        assert (bb.turns >= 2).all()  # a tool call and the answer, each a request
        report = hscale("report", run_dir.parents[1], "--out", tmp_path / "report")
        assert report.returncode == 0, report.stderr
        text = (tmp_path / "report" / "report.md").read_text()
        table = text.split("### Table 2", 1)[1].split("###", 1)[0]
        header = next(line for line in table.splitlines() if line.startswith("| source"))
        columns = [c.strip() for c in header.strip("|").split("|")]
        measured = next(line for line in table.splitlines() if line.startswith("| measured"))
        cells = [c.strip() for c in measured.strip("|").split("|")]
        assert cells[columns.index("claude-code")] == "100.00"  # beside the reported rows
        assert cells[columns.index("codex")] == "100.00"


@pytest.mark.slow
def test_the_embedded_trainer_serves_its_policy_to_the_cli_at_each_evaluation(tmp_path):
    _installed()
    spec = _spec(tmp_path, backend="local", out_of_space=["bb/claude-code"])
    states = run_experiment(spec, tmp_path / "runs", quick=True)
    assert set(states.values()) == {"COMPLETED"}
    run_dir = Path(next(iter(states)))
    assert result_problems(run_dir, Manifest.read(run_dir)) == []
    frame = pd.read_parquet(run_dir / EVAL)
    bb = frame[frame.harness == "bb/claude-code"]
    assert len(bb) and set(bb.decoding) == {"greedy", "sampled"}
    assert (bb.turns >= 1).all()  # each episode reached the served policy
    assert bb.reward.isin([0.0, 1.0]).all()


@pytest.mark.slow
def test_hscale_evaluate_runs_black_box_episodes_as_ray_tasks(tmp_path):
    """An endpoint model (hscale serve of the scripted solver, standing in for vLLM) and two
    CLIs: each share of episodes is a Ray task on a local head that fronts the endpoint on
    its node and runs the CLIs there; every episode is scored by its checker."""
    pytest.importorskip("ray")
    _installed()
    import ray
    from ray.util.state import list_tasks

    from hscale.harness import BuiltinWorld

    # internal: uses the black-box Ray task's name
    from hscale.train.ray_cluster._blackbox import TASK_NAME
    from hscale.train.running import Request, evaluate
    from hscale.train.serving import ScriptedChat, serve, solution_commands
    from tests.ray_head import local_ray_head

    tasks = BuiltinWorld().tasks(3, 0, "eval")
    solver = ScriptedChat({t.user_query: solution_commands(t) for t in tasks})
    with serve(solver, port=0) as upstream, \
            local_ray_head(cpus=2, both=True) as (address, dashboard):
        run_dir = evaluate(Request(model=upstream.url, harnesses=",".join(BB), tasks=3,
                                   ray_address=address), tmp_path / "runs")
        names = [t.name for t in list_tasks(
            address=dashboard, filters=[("name", "=", TASK_NAME)], limit=100)]
        ray.shutdown()
    frame = pd.read_parquet(run_dir / EVAL)
    assert sorted(frame.harness.unique()) == BB and len(frame) == 2 * 3
    assert (frame.reward == 1.0).all(), frame[["harness", "task_id", "reward"]]
    assert len(names) == 2  # 6 episodes, 4 a task
