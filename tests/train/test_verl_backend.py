"""veRL backend preparation: rows in schedule order, a launch script, overrides checked
against veRL's own Hydra config on CPU (no GPU, no Ray)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest
import yaml

from design.errors import HscaleError
from train.plan import plan

pytest.importorskip("verl")
pytest.importorskip("hydra")

SPEC = {
    "name": "tinyverl",
    "benchmark": {"name": "builtin", "tasks": 20, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 4, "rollouts": 2},
    "steps": 4, "seeds": [0], "backend": "verl",
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 1},
    "defaults": {"train": {"recipe": "structured", "runs": 18},
                 "assignment": {"mode": "locality", "k": 2}},
    "arms": {"structured-18": {}},
}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    from train.backends.verl_backend import prepare_verl_run

    tmp = tmp_path_factory.mktemp("verl")
    spec = tmp / "tiny.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    (done,) = plan(spec, tmp / "runs")
    manifest = json.loads((done.path / "manifest.json").read_text())
    return done.path, manifest, prepare_verl_run(done.path, manifest)


def test_train_rows_follow_the_schedule(prepared):
    run_dir, manifest, result = prepared
    schedule = pd.read_parquet(run_dir / "schedule.parquet").sort_values(["step", "slot"])
    train = pd.read_parquet(result["train"])
    assert len(train) == len(schedule) == 4 * 4
    info = list(train.extra_info)
    assert [e["step"] for e in info] == schedule.step.tolist()
    assert [e["task_id"] for e in info] == schedule.task_id.tolist()
    assert [e["harness"] for e in info] == schedule.harness.tolist()
    assert [e["index"] for e in info] == list(range(len(train)))
    assert set(train.agent_name) == {"hscale_harness"}
    # each batch of tasks_per_step rows is one scheduled step
    for b in range(4):
        assert {e["step"] for e in info[4 * b: 4 * b + 4]} == {b}


def test_val_rows_cover_every_eval_setting(prepared):
    from train.backends.local import EVAL_TASKS

    _, manifest, result = prepared
    val = pd.read_parquet(result["val"])
    expected = sum(len(v) for v in manifest["eval_sets"].values()) * EVAL_TASKS
    assert len(val) == expected == result["val_rows"]
    assert {e["setting"] for e in val.extra_info} == set(manifest["eval_sets"])
    assert set(val.data_source) == {f"hscale/{s}" for s in manifest["eval_sets"]}


def test_launch_script_and_agent_loop_config(prepared):
    run_dir, _, result = prepared
    out = Path(run_dir) / "verl"
    loop = yaml.safe_load((out / "agent_loop.yaml").read_text())
    assert loop[0]["name"] == "hscale_harness"
    text = (out / "launch.sh").read_text()
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    assert words[words.index("exec") + 1:][:3] == ["python", "-m", "verl.trainer.main_ppo"]
    for override in result["overrides"]:
        assert override in words
    keys = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in result["overrides"]}
    assert keys["data.train_batch_size"] == "4" and keys["actor_rollout_ref.rollout.n"] == "2"
    assert keys["algorithm.adv_estimator"] == "grpo" and keys["data.shuffle"] == "False"
    assert keys["trainer.total_training_steps"] == "4"
    assert keys["trainer.default_local_dir"] == str((out / "checkpoints").resolve())


def test_overrides_compose_and_a_typo_is_named(prepared):
    from train.backends.verl_backend import validate_overrides

    _, _, result = prepared
    cfg = validate_overrides(result["overrides"])
    assert cfg.trainer.total_training_steps == 4 and list(cfg.trainer.logger) == ["console"]
    assert cfg.actor_rollout_ref.rollout.mode == "async"
    with pytest.raises(HscaleError, match="total_trainig_steps") as err:
        validate_overrides([*result["overrides"], "trainer.total_trainig_steps=3"])
    assert "total_training_steps" in (err.value.hint or "")


def test_ppo_maps_to_gae(prepared):
    from train.backends.verl_backend import build_overrides

    run_dir, manifest, _ = prepared
    ppo = {**manifest, "algorithm": {**manifest["algorithm"], "name": "ppo", "gamma": 0.99,
                                     "lam": 0.95}}
    overrides = build_overrides(run_dir, ppo)
    assert "algorithm.adv_estimator=gae" in overrides
    assert "algorithm.gamma=0.99" in overrides and "algorithm.lam=0.95" in overrides
