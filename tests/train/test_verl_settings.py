"""The GPU path checked without a GPU: every paper spec's overrides build veRL's own config
objects; models are hub ids, aliases or local folders; token budgets are measured from the
harnesses' episodes; users' overrides and loggers are validated the same way; veRL's
per-step metrics come back as train.parquet."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.errors import HscaleError, HscaleWarning
from hscale.train.planning import plan
from hscale.train.spec import resolve_model

# internal: uses the model alias table
from hscale.train.spec._models import ALIASES

ROOT = Path(__file__).resolve().parents[2]
PAPER = sorted((ROOT / "experiments" / "paper").glob("*.yaml"))
SPEC = {
    "name": "settings", "backend": "verl", "model": "Qwen3-4B-Instruct-2507",
    "benchmark": {"name": "builtin", "tasks": 20, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 4, "rollouts": 2},
    "steps": 2, "seeds": [0],
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 1},
    "defaults": {"train": {"recipe": "structured", "runs": 18}},
    "arms": {"structured-18": {}},
}


def write(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({**SPEC, **changes}))
    return path


@pytest.fixture(scope="module")
def hf_model() -> Path:
    """A tiny Hugging Face model folder on this machine (config, tokenizer, chat template)."""
    pytest.importorskip("transformers")
    # internal: tests the veRL check's stand-in and keys
    from hscale.train.backends.verl._check import stand_in_model

    return stand_in_model()


# ------------------------------------------------------------------------------- models


def test_model_names_resolve_to_hub_ids_or_checked_folders(tmp_path, hf_model):
    assert resolve_model("Qwen3-4B-Instruct-2507") == "Qwen/Qwen3-4B-Instruct-2507"
    assert set(ALIASES.values()) >= {"Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3.5-4B"}
    assert resolve_model("org/some-model") == "org/some-model"
    assert resolve_model(str(hf_model)) == str(hf_model)
    (tmp_path / "empty").mkdir()
    with pytest.raises(HscaleError, match="holds no config.json"):
        resolve_model(str(tmp_path / "empty"))
    with pytest.raises(HscaleError, match="no such folder"):
        resolve_model("./not/here")
    with pytest.raises(HscaleError, match="neither a hub id") as err:
        resolve_model("Qwen3-4B-Instruct-2057")
    assert "did you mean 'Qwen3-4B-Instruct-2507'" in err.value.hint


def test_a_verl_spec_with_an_embedded_preset_is_refused_at_plan_time(tmp_path):
    with pytest.raises(HscaleError, match="'hscale-tiny' is neither"):
        plan(write(tmp_path, model="hscale-tiny"), tmp_path / "runs")
    assert not (tmp_path / "runs").exists()


# ------------------------------------------------------------------------------- veRL's configs

pytest.importorskip("verl")


@pytest.mark.parametrize("spec", PAPER, ids=[p.stem for p in PAPER])
def test_every_paper_spec_builds_verls_configs(spec, tmp_path):
    """Composed with veRL's Hydra config, nothing is left ??? and veRL's own actor and
    rollout config objects build (the rollout's name is set: the node's first failure)."""
    from verl.utils.config import omega_conf_to_dataclass

    from hscale.train.backends.verl import build_overrides, validate_overrides

    # internal: tests the veRL check's stand-in and keys
    from hscale.train.backends.verl._check import _missing

    run = plan(spec, tmp_path / "runs")[0]
    config = validate_overrides(build_overrides(run.path, run.manifest, gpus_per_node=8))
    assert _missing(config) == ["reward.reward_model.rollout.name"] or _missing(config) == []
    rollout = omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
    assert rollout.name == "vllm" and rollout.mode == "async"
    verl = run.manifest.verl
    assert rollout.max_model_len == verl.prompt_length + verl.response_length
    actor = omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    # one optimizer update a step: the mini batch holds every segment of every rollout
    assert actor.ppo_mini_batch_size == run.manifest.budget.tasks_per_step * verl.max_segments
    assert config.trainer.n_gpus_per_node == 8 and config.trainer.nnodes == 1
    assert str(config.actor_rollout_ref.model.path).startswith("Qwen/")


def test_a_local_model_is_measured_and_loaded_by_the_checks(tmp_path, hf_model):
    """With the model here, budgets come from its tokenizer and veRL's model and critic
    configs load it (PPO)."""
    from hscale.train.backends.verl import build_overrides, validate_overrides

    spec = write(tmp_path, model=str(hf_model),
                 algorithm={"name": "ppo", "tasks_per_step": 8, "rollouts": 1})
    run = plan(spec, tmp_path / "runs")[0]
    verl = run.manifest.verl
    assert verl.prompt_length >= 1024 and verl.response_length >= 2048
    config = validate_overrides(build_overrides(run.path, run.manifest))
    assert config.critic.model.path == str(hf_model)


def test_budgets_shorter_than_the_episodes_are_warned_about(tmp_path):
    with pytest.warns(HscaleWarning, match=r"verl.response_length=64 is shorter than the "
                                           r"longest of \d+ rendered oracle episodes"):
        run = plan(write(tmp_path, verl={"response_length": 64}), tmp_path / "runs")[0]
    assert run.manifest.verl.response_length == 64  # the user's word stands


def test_a_spec_without_verl_keeps_its_manifest_hash(tmp_path):
    """verl and tracking are hashed only when set: runs planned before stay the same runs."""
    local = write(tmp_path, backend="local", model="hscale-tiny")
    manifest = plan(local, tmp_path / "runs")[0].manifest
    assert manifest.verl is None and "verl" not in json.loads(manifest.to_json())


def test_users_overrides_and_loggers_are_validated_like_hscales(tmp_path, capsys):
    from hscale.cli import main

    def run(*args: str) -> tuple[int, str]:
        with pytest.raises(SystemExit) as exit_info:
            main(["run", *map(str, args), "--backend", "verl", "--dry-run",
                  "--out", str(tmp_path / "runs")])
        return exit_info.value.code, capsys.readouterr().err

    code, err = run(write(tmp_path, verl={"overrides": ["trainer.total_trainig_steps=3"]}))
    assert code == 2 and "total_training_steps" in err and len(err.strip().splitlines()) == 1
    code, err = run(write(tmp_path), "--override", "actor_rollout_ref.rollout.nme=vllm")
    assert code == 2 and "did you mean" in err
    code, err = run(write(tmp_path, tracking=["console", "tensorboard"]))
    assert code == 0, err
    launch = next((tmp_path / "runs").rglob("launch.sh")).read_text()
    assert "trainer.logger=[console,tensorboard,file]" in launch
    code, err = run(write(tmp_path, tracking=["consol"]))
    assert code == 2 and "tracking" in err


# ------------------------------------------------------------------------------- metrics


def test_verls_file_logger_becomes_train_parquet(tmp_path):
    """Lines written by veRL's own Tracking file logger, over two launches (a resume: the
    later launch's lines win), become train.parquet rows counted from step 0."""
    import os

    from verl.utils.tracking import Tracking

    # internal: tests the veRL dump importers
    from hscale.train.backends.verl._dumps import import_metrics

    folder = tmp_path / "verl" / "metrics"
    folder.mkdir(parents=True)
    launches = {"20260101T000000Z-1": [(0, {"val-core/acc/mean@1": 0.5}),
                                       (1, {"actor/pg_loss": -0.1, "critic/score/mean": 0.2}),
                                       (2, {"actor/pg_loss": -0.2, "critic/score/mean": 0.3})],
                "20260101T010000Z-2": [(2, {"actor/pg_loss": -0.4, "critic/score/mean": 0.5}),
                                       (3, {"actor/pg_loss": -0.5, "critic/score/mean": 0.6})]}
    for stamp, lines in launches.items():
        os.environ["VERL_FILE_LOGGER_PATH"] = str(folder / f"{stamp}.jsonl")
        try:
            tracker = Tracking("p", "e", default_backend=["file"])
            for step, data in lines:
                tracker.log(data, step)
            del tracker
        finally:
            del os.environ["VERL_FILE_LOGGER_PATH"]
    frame = import_metrics(tmp_path)
    assert frame.step.tolist() == [0, 1, 2]
    assert frame["reward_mean"].tolist() == [0.2, 0.5, 0.6]
    assert frame["actor/pg_loss"].tolist() == [-0.1, -0.4, -0.5]
    assert isinstance(frame, pd.DataFrame) and frame["step"].dtype == "int64"


def test_budgets_use_the_tokenizer_that_is_here_and_estimate_without_one(tmp_path, hf_model):
    """A model folder with tokenizer files is measured by its tokenizer; a hub name this
    machine has no tokenizer for, or a folder without one, is estimated, with no import of
    transformers to find that out."""
    import subprocess
    import sys

    # internal: tests the token-budget tokenizer cache
    from hscale.train.planning._token_budget import _has_tokenizer, _tokenizer

    assert _has_tokenizer(str(hf_model)) and _tokenizer(str(hf_model)) is not None
    (tmp_path / "empty").mkdir()
    assert not _has_tokenizer(str(tmp_path / "empty"))
    probe = ("import sys; from hscale.train.planning._token_budget import _tokenizer; "
             "assert _tokenizer(sys.argv[1]) is None; print('transformers' in sys.modules)")
    for name in ("no-such-org/no-such-model-xyz", str(tmp_path / "empty")):
        done = subprocess.run([sys.executable, "-c", probe, name], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "False", done.stderr[-800:]
