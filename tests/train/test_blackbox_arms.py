"""Arms that train through a black-box harness (``blackbox:``): validated with the spec,
planned as one harness outside the space with every task under it, refused by the embedded
trainer before anything is written, and read back from the manifest by the backends."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.train.planning import plan_runs
from tests.cli import hscale

ARMS = {"structured-18": {"train": {"recipe": "structured", "runs": 18}},
        "black-box-sft": {"blackbox": {"harness": "bb/openclaw", "method": "sft",
                                       "episodes": 6, "lora_rank": 4}},
        "black-box-rl": {"blackbox": {"harness": "bb/openclaw", "method": "rl"}}}


def _spec(tmp_path: Path, arms=None, backend: str = "scripted") -> Path:
    path = tmp_path / "bb-arms.yaml"
    path.write_text(yaml.safe_dump({
        "name": "bb-arms", "backend": backend,
        "benchmark": {"name": "builtin", "tasks": 10, "seed": 0},
        "algorithm": {"name": "grpo", "tasks_per_step": 2, "rollouts": 2},
        "steps": 4, "seeds": [0, 1],
        "evaluation": {"in_space": 0, "base_model": False, "runs": 1, "tasks": 2,
                       "out_of_space": ["oos/shell"]},
        # defaults that a black-box arm must not take: K = 2 over an in-space set
        "defaults": {"assignment": {"mode": "locality", "k": 2}},
        "arms": arms or ARMS}))
    return path


def test_a_black_box_arm_trains_every_task_under_its_one_harness(tmp_path):
    planned = {(p.manifest.arm, p.manifest.seed): p for p in plan_runs(_spec(tmp_path))}
    rl, sft = planned[("black-box-rl", 0)], planned[("black-box-sft", 1)]
    for run in (rl, sft):
        assert run.manifest.train_harnesses == ("bb/openclaw",)
        assert (run.manifest.assignment.mode, run.manifest.assignment.k) == ("repeat", 1)
        frame = run.schedule.frame
        assert set(frame.harness) == {"bb/openclaw"} and len(frame) == 4 * 2
        assert frame.groupby("step").size().tolist() == [2, 2, 2, 2]
    assert rl.manifest.blackbox.model_dump() == {"harness": "bb/openclaw", "method": "rl"}
    assert sft.manifest.blackbox.episodes == 6
    assert sft.manifest.blackbox.lora_rank == 4
    assert planned[("structured-18", 0)].manifest.blackbox is None
    # the evaluation is every arm's: the same harnesses and tasks
    assert rl.manifest.eval_sets == planned[("structured-18", 0)].manifest.eval_sets
    # the seeds' teachers and schedules differ, as every arm's do
    assert not planned[("black-box-rl", 1)].schedule.frame.equals(frame)


@pytest.mark.parametrize(("blackbox", "said"), [
    ({"harness": "bb/claude", "method": "rl"}, "'bb/claude'"),
    ({"harness": "oos/shell", "method": "sft"}, "'oos/shell'"),
    ({"harness": "bb/codex", "method": "dpo"}, "method"),
    ({"harness": "bb/codex", "method": "rl", "episodes": 8}, "episodes is a black-box SFT"),
    ({"harness": "bb/codex", "method": "sft", "episodes": 0}, "episodes"),
    ({"harness": "bb/codex"}, "method"),
])
def test_a_bad_black_box_arm_is_one_line_naming_the_key(tmp_path, blackbox, said):
    done = hscale("validate", _spec(tmp_path, {"bb": {"blackbox": blackbox}}))
    assert done.returncode == 2, done.stdout
    line = done.stderr.strip()
    assert "\n" not in line and said in line and "blackbox" in line, line


def test_the_embedded_trainer_refuses_a_black_box_arm_before_writing(tmp_path):
    done = hscale("run", _spec(tmp_path, backend="local"), "--out", tmp_path / "runs")
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "trains through bb/openclaw" in line
    assert "--backend verl" in line
    assert not any((tmp_path / "runs").rglob("*.parquet"))


def test_the_plan_says_a_cli_prompt_longer_than_the_verl_budget(tmp_path):
    spec = yaml.safe_load(_spec(tmp_path).read_text())
    spec["verl"] = {"rollout": "hscale_hf", "prompt_length": 256, "response_length": 64}
    spec["model"] = "Qwen/Qwen2.5-0.5B-Instruct"  # a hub id: no download to plan
    spec["arms"] = {"black-box-rl": ARMS["black-box-rl"]}
    path = tmp_path / "verl.yaml"
    path.write_text(yaml.safe_dump(spec))
    with pytest.warns(Warning, match="bb/openclaw's first request is about"):
        (run, *_) = plan_runs(path)
    record = run.manifest.verl.model_dump()
    assert record["max_segments"] >= 8  # each model call of a CLI episode is a segment
    assert isinstance(run.schedule.frame, pd.DataFrame)


@pytest.mark.slow
def test_three_arms_through_real_clis_give_table_2_rows_beside_structured(tmp_path):
    """Structured-18, black-box SFT and black-box RL through Codex CLI, each evaluated on
    Claude Code out of space (the papers' Table 2 protocol), on the scripted backend: the
    teacher's and the rollouts' episodes are real CLI episodes, scored by the checkers; the
    report's Table 2 holds a measured row for each arm beside the reported ones."""
    from hscale.harness import HARNESSES

    for name in ("bb/codex", "bb/claude-code"):
        if not HARNESSES.get(name).installed():
            pytest.skip(f"{name} is not installed here: hscale harness install {name}")
    spec = yaml.safe_load(_spec(tmp_path).read_text())
    spec.update(steps=2, seeds=[0], algorithm={"name": "grpo", "tasks_per_step": 1,
                                                "rollouts": 2})
    spec["evaluation"]["out_of_space"] = ["bb/claude-code"]
    spec["arms"] = {name: body for name, body in ARMS.items()}
    for name in ("black-box-sft", "black-box-rl"):
        spec["arms"][name] = {"blackbox": {**ARMS[name]["blackbox"], "harness": "bb/codex"}}
    spec["arms"]["black-box-sft"]["blackbox"]["episodes"] = 2
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump(spec))
    done = hscale("run", path, "--out", tmp_path / "runs", "--backend", "scripted")
    assert done.returncode == 0, done.stderr[-3000:]
    runs = tmp_path / "runs" / "bb-arms"
    sft = pd.read_parquet(runs / "black-box-sft" / "0" / "train.parquet")
    assert sft.teacher_episodes.tolist() == [2.0, 2.0] and (sft.teacher_calls >= 4).all()
    rl = pd.read_parquet(runs / "black-box-rl" / "0" / "train.parquet")
    assert rl.episodes.tolist() == [2.0, 2.0]  # 1 task x 2 rollouts through the CLI a step
    report = hscale("report", runs, "--out", tmp_path / "report")
    assert report.returncode == 0, report.stderr
    table = pd.read_csv(tmp_path / "report" / "out_of_space.csv")
    measured = table[(table.source == "measured") & (table.harness == "bb/claude-code")]
    assert sorted(measured.method) == ["black-box-rl", "black-box-sft", "structured-18"]
    text = (tmp_path / "report" / "report.md").read_text().split("### Table 2", 1)[1]
    rows = [line for line in text.split("###", 1)[0].splitlines() if "| measured" in line]
    assert {m for m in ("black-box-sft", "black-box-rl", "structured-18")
            if any(m in line for line in rows)} == {"black-box-sft", "black-box-rl",
                                                    "structured-18"}


def test_a_verl_sft_run_validates_the_model_hscale_fine_tuned(tmp_path):
    """On veRL a black-box SFT run is veRL validating (val_only) the model that hscale
    fine-tuned into the run folder's sft/; its exported launch.sh refuses to start without
    it, naming the command that makes it."""
    pytest.importorskip("verl")
    import subprocess

    from hscale.train.backends.verl import VerlBackend, build_overrides

    spec = yaml.safe_load(_spec(tmp_path).read_text())
    spec.update(backend="verl", model="Qwen/Qwen2.5-0.5B-Instruct", seeds=[0],
                verl={"rollout": "hscale_hf", "prompt_length": 12288, "gpus_per_node": 1})
    spec["arms"] = {"black-box-sft": ARMS["black-box-sft"]}
    path = tmp_path / "verl.yaml"
    path.write_text(yaml.safe_dump(spec))
    (run, *_) = plan_runs(path, tmp_path / "runs")
    overrides = build_overrides(run.path, run.manifest)
    assert "trainer.val_only=True" in overrides and "trainer.total_training_steps=0" in overrides
    model = next(o for o in overrides if o.startswith("actor_rollout_ref.model.path="))
    assert model.endswith("/verl/../sft/model")
    run.schedule.write(run.path)
    run.manifest.write(run.path)
    launch = VerlBackend().export(run.path, run.manifest)
    done = subprocess.run(["bash", str(launch)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "no fine-tuned model" in done.stderr
    assert "run hscale run for this arm" in done.stderr
