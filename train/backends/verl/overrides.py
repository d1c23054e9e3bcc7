"""Hydra overrides for veRL 0.9.1's ``main_ppo`` from a manifest, checked on CPU.

The overrides are validated by composing veRL's own ``ppo_trainer`` Hydra config and building
its actor config dataclass, so a wrong key or batch size fails here, naming the override,
not minutes into a GPU job. veRL and Hydra are imported lazily.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path
from typing import Any

from harness.verl_agent_loop import AGENT_NAME
from hscale.errors import HscaleError
from train.contracts import Manifest

VERL_DIR = "verl"
CONFIG_NAME = "ppo_trainer"
MICRO_BATCH = 4  # sequences per GPU forward/backward in veRL's actor, ref and critic


def build_overrides(run_dir: str | Path, manifest: Manifest, *, inputs: str | None = None,
                    outputs: str | None = None) -> list[str]:
    """The Hydra overrides for veRL's ``main_ppo`` that this run's manifest implies.

    Paths are absolute unless ``inputs`` / ``outputs`` give the folder to read the data and
    agent-loop config from / to write checkpoints and validation dumps to.
    """
    out = str(Path(run_dir).resolve() / VERL_DIR)
    src, dst = inputs or out, outputs or out
    algo, budget = manifest.algorithm, manifest.budget
    every = manifest.evaluation.every
    steps = budget.steps
    name = algo.name
    if name not in ("grpo", "ppo"):
        raise HscaleError(f"algorithm {name!r} has no veRL mapping", "use grpo or ppo")
    overrides = [
        f"data.train_files={src}/train.parquet",
        f"data.val_files={src}/val.parquet",
        "data.shuffle=False",
        f"data.train_batch_size={budget.tasks_per_step}",
        f"actor_rollout_ref.model.path={manifest.model}",
        f"actor_rollout_ref.rollout.n={budget.rollouts_per_task}",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={src}/agent_loop.yaml",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_NAME}",
        f"actor_rollout_ref.actor.optim.lr={algo.lr}",
        f"actor_rollout_ref.actor.clip_ratio_low={algo.clip_low}",
        f"actor_rollout_ref.actor.clip_ratio_high={algo.clip_high}",
        # one optimizer step per scheduled step; micro batches sized for one GPU each
        f"actor_rollout_ref.actor.ppo_mini_batch_size={budget.tasks_per_step}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={MICRO_BATCH}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={MICRO_BATCH}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={MICRO_BATCH}",
    ]
    if name == "grpo":
        overrides.append("algorithm.adv_estimator=grpo")
    else:
        overrides += ["algorithm.adv_estimator=gae", f"algorithm.gamma={algo.gamma}",
                      f"algorithm.lam={algo.lam}",
                      f"critic.model.path={manifest.model}",
                      f"critic.ppo_mini_batch_size={budget.tasks_per_step}",
                      f"critic.ppo_micro_batch_size_per_gpu={MICRO_BATCH}"]
    # evaluation: val.parquet holds one row per episode of every run (train.manifest.eval_jobs),
    # each sampled once, as the embedded evaluator's sampled runs are
    overrides += ["actor_rollout_ref.rollout.val_kwargs.n=1",
                  "actor_rollout_ref.rollout.val_kwargs.do_sample=True",
                  "actor_rollout_ref.rollout.val_kwargs.temperature=1.0"]
    overrides += [
        f"trainer.total_training_steps={steps}",
        "trainer.logger=[console]",
        f"trainer.project_name=hscale-{manifest.experiment}",
        f"trainer.experiment_name={manifest.arm}-{manifest.seed}",
        f"trainer.default_local_dir={dst}/checkpoints",
        "trainer.resume_mode=auto",
        # a checkpoint every `every` steps (else every tenth of the run) for resume; keep one
        f"trainer.save_freq={int(every or max(1, steps // 10))}",
        "trainer.max_actor_ckpt_to_keep=1",
        f"trainer.test_freq={int(every or steps)}",
        f"trainer.validation_data_dir={dst}/validation",
    ]
    if name == "ppo":
        overrides.append("trainer.max_critic_ckpt_to_keep=1")
    return overrides


def verl_config_dir() -> Path:
    """veRL's Hydra config folder inside the installed package."""
    try:
        import verl
    except ImportError as exc:
        raise HscaleError(f"veRL is not importable ({exc})", 'pip install -e ".[train]"') from exc
    path = Path(os.path.dirname(verl.__file__)) / "trainer" / "config"
    if not (path / f"{CONFIG_NAME}.yaml").is_file():
        raise HscaleError(f"{path}: no {CONFIG_NAME}.yaml in the installed veRL",
                          "install veRL 0.9.1 (pip install -e \".[train]\")")
    return path


def validate_overrides(overrides: list[str]) -> Any:
    """Compose veRL's ``ppo_trainer`` config with ``overrides`` (CPU only); the composed
    config, or an HscaleError naming the override that does not fit, with a did-you-mean."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(verl_config_dir()), version_base=None):
        try:
            config = compose(config_name=CONFIG_NAME, overrides=list(overrides))
        except HydraException as exc:
            bad = _culprit(str(exc), overrides)
            hint = "check the key against verl/trainer/config/ppo_trainer.yaml"
            if bad is not None:
                base = OmegaConf.to_container(compose(config_name=CONFIG_NAME),
                                              resolve=False)
                hint = _hint(bad, base) or hint
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HscaleError(f"veRL rejects the override {bad or '(unknown)'!r}: {first}",
                              hint) from None
    _check_dataclasses(config)
    return config


def _check_dataclasses(config: Any) -> None:
    """Build veRL's actor config dataclass, whose own checks (batch sizes and their
    divisibility) would otherwise first fire on the GPU node. (The critic's dataclass loads
    the model's Hugging Face config, which needs the model, so it is left to the node.)"""
    from verl.utils.config import omega_conf_to_dataclass

    try:
        omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    except (AssertionError, ValueError, TypeError) as exc:
        raise HscaleError("veRL rejects the actor settings: "
                          f"{exc or type(exc).__name__}",
                          "check the batch sizes the manifest implies") from None



def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _culprit(message: str, overrides: list[str]) -> str | None:
    """The override a Hydra error message is about (quoted key or value), if any."""
    quoted = re.findall(r"'([^']+)'", message)
    for q in quoted:
        for o in overrides:
            if _key(o) == q or o == q:
                return o
    for o in overrides:
        if _key(o) in message:
            return o
    return None


def _hint(override: str, config: dict) -> str | None:
    """A did-you-mean for the override's key, from the keys of its parent in the config."""
    parts = _key(override).split(".")
    node: Any = config
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            known = list(node) if isinstance(node, dict) else []
            close = difflib.get_close_matches(part, known, n=1)
            where = ".".join(parts[:depth]) or "the top level"
            return (f"no {part!r} under {where}"
                    + (f"; did you mean {close[0]!r}?" if close else ""))
        node = node[part]
    if not isinstance(node, dict):
        return None
    leaf = parts[-1]
    if leaf in node:
        return f"the key exists; check the value type in {override!r}"
    close = difflib.get_close_matches(leaf, list(node), n=1)
    parent = ".".join(parts[:-1])
    if close:
        return f"did you mean {parent + '.' if parent else ''}{close[0]}?"
    return f"{parent or 'the top level'} has no key {leaf!r}; prefix + to add one"
