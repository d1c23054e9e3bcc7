"""veRL backend preparation: rows in schedule order, a launch script, overrides checked
against veRL's own Hydra config on CPU (no GPU, no Ray)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.errors import HscaleError
from hscale.train.planning import plan

pytest.importorskip("verl")
pytest.importorskip("hydra")

SPEC = {
    "model": "Qwen/Qwen3-4B-Instruct-2507",  # a hub id: never loaded by these tests
    "name": "tinyverl",
    "benchmark": {"name": "builtin", "tasks": 20, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 4, "rollouts": 2},
    "steps": 4, "seeds": [0], "backend": "verl",
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 1, "base_model": False},
    "defaults": {"train": {"recipe": "structured", "runs": 18},
                 "assignment": {"mode": "locality", "k": 2}},
    "arms": {"structured-18": {}},
}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    from hscale.train.backends.verl import prepare_verl_run

    tmp = tmp_path_factory.mktemp("verl")
    spec = tmp / "tiny.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    (done,) = plan(spec, tmp / "runs")
    return done.path, done.manifest, prepare_verl_run(done.path, done.manifest)


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
    # internal: uses the spec's default eval tasks
    from hscale.train.spec._experiment import EVAL_TASKS

    _, manifest, result = prepared
    val = pd.read_parquet(result["val"])
    # a greedy pass over run 0's episodes, then each sampled run
    passes = 1 + manifest.evaluation.runs
    expected = sum(len(v) for v in manifest.eval_sets.values()) * EVAL_TASKS * passes
    assert len(val) == expected == result["val_rows"]
    assert {e["setting"] for e in val.extra_info} == set(manifest.eval_sets)
    assert {e["decoding"] for e in val.extra_info} == {"greedy", "sampled"}
    assert set(val.data_source) == {f"hscale/{s}{g}" for s in manifest.eval_sets
                                    for g in ("", "/greedy")}


def run_launch_script(script: Path, tmp: Path, env: dict[str, str] | None = None) -> list[str]:
    """launch.sh's command line as bash expands it, with a stand-in ``python`` that records
    its arguments instead of starting veRL."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "python"
    fake.write_text('#!/usr/bin/env bash\nprintf "%s\\0" "$@" > "$ARGS_FILE"\n')
    fake.chmod(0o755)
    args = tmp / "args"
    run_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "ARGS_FILE": str(args),
               "HSCALE_GPUS_PER_NODE": "1", **(env or {})}
    subprocess.run(["bash", str(script), "trainer.nnodes=1"], env=run_env, check=True)
    # each launch writes its metrics to a file of its own: name it as the overrides do
    return [re.sub(r"/metrics/[^/]+\.jsonl$", "/metrics/@STAMP@.jsonl", w)
            for w in args.read_text().split("\0")[:-1]]


def test_launch_script_and_agent_loop_config(prepared, tmp_path):
    run_dir, _, result = prepared
    out = Path(run_dir) / "verl"
    loop = yaml.safe_load((out / "agent_loop.yaml").read_text())
    assert loop[0]["name"] == "hscale_harness"
    words = run_launch_script(out / "launch.sh", tmp_path)
    assert words[:2] == ["-m", "verl.trainer.main_ppo"]
    # bash expands the script to exactly the validated overrides, plus the extra arguments
    assert words[2:] == [*result["overrides"], "trainer.nnodes=1"]
    assert result["command"] == ["python", *words[:-1]]
    keys = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in result["overrides"]}
    assert keys["data.train_batch_size"] == "4" and keys["actor_rollout_ref.rollout.n"] == "2"
    assert keys["algorithm.adv_estimator"] == "grpo" and keys["data.shuffle"] == "False"
    assert keys["trainer.total_training_steps"] == "4"
    assert keys["trainer.default_local_dir"] == str((out / "checkpoints").resolve())
    assert keys["trainer.validation_data_dir"] == str((out / "validation").resolve())
    assert keys["actor_rollout_ref.rollout.val_kwargs.n"] == "1"


def test_launch_script_reads_beside_itself_and_writes_to_the_out_variable(prepared, tmp_path):
    """A copied verl/ folder (a GPU node, a Ray job's working_dir) reads its own inputs;
    $HSCALE_VERL_OUT moves checkpoints and validation dumps."""
    run_dir, _, result = prepared
    copy = tmp_path / "copied folder"
    shutil.copytree(Path(run_dir) / "verl", copy)
    words = run_launch_script(copy / "launch.sh", tmp_path, {"HSCALE_VERL_OUT": "/shared/x"})
    keys = {w.split("=", 1)[0]: w.split("=", 1)[1] for w in words[2:]}
    assert keys["data.train_files"] == f"{copy}/train.parquet"
    assert keys["data.val_files"] == f"{copy}/val.parquet"
    assert keys["actor_rollout_ref.rollout.agent.agent_loop_config_path"] == \
        f"{copy}/agent_loop.yaml"
    assert keys["trainer.default_local_dir"] == "/shared/x/checkpoints"
    assert keys["trainer.validation_data_dir"] == "/shared/x/validation"
    assert keys["trainer.logger"] == "[console,file]"
    assert keys["+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH"] == \
        "/shared/x/metrics/@STAMP@.jsonl"
    assert keys["trainer.n_gpus_per_node"] == "1"  # $HSCALE_GPUS_PER_NODE on this node


def test_val_ground_truth_carries_the_row_index_and_the_checker(prepared):
    """veRL dumps gts but not extra_info: the row index must travel in the ground truth."""
    _, _, result = prepared
    val = pd.read_parquet(result["val"])
    for i, (rm, info) in enumerate(zip(val.reward_model, val.extra_info, strict=True)):
        truth = json.loads(rm["ground_truth"])
        assert truth["hscale_val_index"] == info["index"] == i
        assert truth["checker"] == json.loads(info["task"])["checker"]


def test_evaluation_runs_are_sampled_once_per_val_row(prepared):
    """val.parquet holds a row per run; veRL samples each once, at temperature 1."""
    from hscale.train.backends.verl import build_overrides, validate_overrides

    run_dir, manifest, _ = prepared
    three = manifest.model_copy(update={"evaluation": manifest.evaluation.model_copy(
        update={"runs": 3, "every": 2})})
    keys = dict(o.split("=", 1) for o in build_overrides(run_dir, three))
    assert keys["actor_rollout_ref.rollout.val_kwargs.n"] == "1"
    assert keys["actor_rollout_ref.rollout.val_kwargs.do_sample"] == "True"
    assert keys["actor_rollout_ref.rollout.val_kwargs.temperature"] == "1.0"
    assert keys["trainer.test_freq"] == keys["trainer.save_freq"] == "2"
    validate_overrides(build_overrides(run_dir, three))


def test_overrides_compose_and_a_typo_is_named(prepared):
    from hscale.train.backends.verl import validate_overrides

    _, _, result = prepared
    cfg = validate_overrides(result["overrides"])
    assert cfg.trainer.total_training_steps == 4
    assert list(cfg.trainer.logger) == ["console", "file"]  # file: the metrics hscale imports
    assert cfg.actor_rollout_ref.rollout.mode == "async"
    with pytest.raises(HscaleError, match="total_trainig_steps") as err:
        validate_overrides([*result["overrides"], "trainer.total_trainig_steps=3"])
    assert "total_training_steps" in (err.value.hint or "")


def test_check_composes_runs_that_differ_only_in_their_names_once(prepared, monkeypatch):
    """A dry run's runs differ mostly in their experiment name ({arm}-{seed}), which no check
    reads: one verdict for them; any other difference, or a name Hydra would not read as the
    plain text written, is checked on its own, and a wrong override still fails."""
    # internal: tests the veRL backend module's internals
    from hscale.train.backends.verl import VerlBackend, _backend

    # internal: tests the veRL check's stand-in and keys
    from hscale.train.backends.verl._check import verdict_key

    _, manifest, _ = prepared
    seeds = [manifest.model_copy(update={"seed": s, "arm": f"arm{s}"}) for s in range(3)]
    base = manifest.model_copy(update={"budget": manifest.budget.model_copy(
        update={"steps": 0}), "seed": 3})
    with monkeypatch.context() as m:
        checked = []
        m.setattr(_backend, "validate_overrides", checked.append)
        VerlBackend().check([*seeds, base])
    assert len(checked) == 2 and "trainer.val_only=True" in checked[1]
    plain = verdict_key(["trainer.experiment_name=k4-0"])
    assert plain == verdict_key(["trainer.experiment_name=repeat-2-1"])
    for odd in ("a,b", "true", "1e3", "a${x}", "'k4-0'"):
        assert verdict_key([f"trainer.experiment_name={odd}"]) != plain
    assert verdict_key(["trainer.max_actor_ckpt_to_keep=1"]) \
        != verdict_key(["trainer.max_actor_ckpt_to_keep=2"])
    with pytest.raises(HscaleError, match="total_trainig_steps"):
        VerlBackend(["trainer.total_trainig_steps=3"]).check(seeds)


def test_ppo_maps_to_gae(prepared):
    from hscale.train.backends.verl import build_overrides, validate_overrides

    run_dir, manifest, _ = prepared
    ppo = manifest.model_copy(update={"algorithm": manifest.algorithm.model_copy(
        update={"name": "ppo", "gamma": 0.99, "lam": 0.95})})
    overrides = build_overrides(run_dir, ppo)
    assert "algorithm.adv_estimator=gae" in overrides
    assert "algorithm.gamma=0.99" in overrides and "algorithm.lam=0.95" in overrides
    assert "trainer.max_critic_ckpt_to_keep=1" in overrides
    cfg = validate_overrides(overrides)
    assert cfg.critic.model.path == manifest.model and cfg.algorithm.lam == 0.95


def test_val_rows_are_the_embedded_evaluators_episodes(tmp_path):
    """One val row per episode the embedded evaluator samples: every run, setting, harness
    and task, with the run recorded (so runs rotate over tasks on both backends)."""
    from hscale.train.backends.verl import prepare_verl_run

    # internal: tests the workload's job builders
    from hscale.train.planning._workload import eval_jobs, eval_tasks

    spec = tmp_path / "capped.yaml"
    spec.write_text(yaml.safe_dump({**SPEC, "seeds": [1], "evaluation": {
        **SPEC["evaluation"], "tasks": 6, "episodes": 6, "runs": 2}}))
    (done,) = plan(spec, tmp_path / "runs")
    manifest = done.manifest
    val = pd.read_parquet(prepare_verl_run(done.path, manifest, validate=False)["val"])
    tasks = eval_tasks(manifest)
    want = [("greedy", j.run, j.setting, j.harness, j.task.task_id)
            for j in eval_jobs(manifest, tasks, runs=[0])]
    want += [("sampled", j.run, j.setting, j.harness, j.task.task_id)
             for j in eval_jobs(manifest, tasks)]
    got = [(e["decoding"], e["run"], e["setting"], e["harness"], e["task_id"])
           for e in val.extra_info]
    assert got == want
    # greedy + 2 sampled runs: base, 18 in-space harnesses x 1, out-of-space x 6
    assert len(val) == 3 * (6 + 18 + 6)
    # runs rotate: the in-space harnesses meet other tasks in run 1 than in run 0
    first = {(h, t) for d, r, s, h, t in got if d == "sampled" and r == 0 and s == "in_space"}
    assert first != {(h, t) for d, r, s, h, t in got if r == 1 and s == "in_space"}
