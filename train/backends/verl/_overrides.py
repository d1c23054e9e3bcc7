"""Hydra overrides for veRL 0.9.1's ``main_ppo`` from a manifest, checked on CPU.

The overrides are validated by composing veRL's own ``ppo_trainer`` Hydra config and building
its actor config dataclass, so a wrong key or batch size fails here, naming the override,
not minutes into a GPU job. veRL and Hydra are imported lazily.
"""

from __future__ import annotations

from pathlib import Path

from hscale.contracts import Manifest, VerlRecord
from hscale.errors import HscaleError
from hscale.harness.verl_agent_loop import AGENT_NAME
from hscale.train.backends.verl.cpu.settings import is_cpu
from hscale.train.backends.verl.cpu.settings import overrides as cpu_overrides
from hscale.train.blackbox import MODEL, SFT_DIR
from hscale.train.planning import RunPlan, harness_space, is_blackbox_sft
from hscale.train.spec import resolve_model

VERL_DIR = "verl"
CONFIG_NAME = "ppo_trainer"
MICRO_BATCH = 4  # sequences per GPU forward/backward in veRL's actor, ref and critic
METRICS_DIR = "metrics"  # verl/metrics/<launch>.jsonl: veRL's file logger, one file a launch
STAMP = "@STAMP@"  # launch.sh replaces it with the launch's time (veRL truncates its file)
GPUS = "@GPUS@"  # launch.sh replaces it with the node's GPU count when the spec names none


def settings(manifest: Manifest) -> VerlRecord:
    """The run's veRL settings: the manifest's, or (a spec planned for another backend) the
    defaults with budgets measured over the run's own harnesses."""
    if manifest.verl is not None:
        return manifest.verl
    from hscale.train.planning import harness_labels, verl_record
    from hscale.train.spec import VerlSettings

    record, _ = verl_record(VerlSettings(), manifest.model, harness_labels([manifest]),
                            manifest.benchmark, harness_space(manifest))
    return VerlRecord(**record)


def node_gpus(manifest: Manifest) -> int:
    """GPUs a node of this run has: the spec's, else this machine's (at least 1, for checks
    on a machine without any)."""
    from hscale.train.backends._environment import cuda_gpus

    return settings(manifest).gpus_per_node or cuda_gpus() or 1


def build_overrides(run_dir: str | Path, manifest: Manifest, *, inputs: str | None = None,
                    outputs: str | None = None, gpus_per_node: int | str | None = None
                    ) -> list[str]:
    """The Hydra overrides for veRL's ``main_ppo`` that this run's manifest implies, the
    spec's own ``verl.overrides`` last (they win).

    Paths are absolute unless ``inputs`` / ``outputs`` give the folder to read the data and
    agent-loop config from / to write checkpoints, validation dumps and metrics to.
    ``gpus_per_node`` stands in when the spec names none (default: this machine's count, at
    least 1); launch.sh passes :data:`GPUS`, which it fills with its node's count
    (``nvidia-smi``, or ``$HSCALE_GPUS_PER_NODE``).
    """
    out = str(Path(run_dir).resolve() / VERL_DIR)
    src, dst = inputs or out, outputs or out
    algo, budget, verl = manifest.algorithm, manifest.budget, settings(manifest)
    every, steps, name = manifest.evaluation.every, budget.steps, algo.name
    if name not in ("grpo", "ppo"):
        raise HscaleError(f"algorithm {name!r} has no veRL mapping", "use grpo or ppo")
    # a black-box SFT run validates what it fine-tuned beside verl/ (hscale.train.blackbox._arm)
    sft = is_blackbox_sft(manifest)
    model = f"{src}/../{SFT_DIR}/{MODEL}" if sft else resolve_model(manifest.model)
    steps = 0 if sft else steps
    tasks, n = budget.tasks_per_step, budget.rollouts_per_task
    prompt, response = verl.prompt_length, verl.response_length
    # One optimizer update a step: a rollout under window/compact context trains several
    # sequences (segments); the mini batch holds every one (veRL pads it with empty rows),
    # which needs token-based micro batches (use_dynamic_bsz).
    mini = tasks * verl.max_segments
    tokens = 2 * (prompt + response)
    loggers = list(dict.fromkeys([*(manifest.tracking or ("console",)), "file"]))
    overrides = [
        f"data.train_files={src}/train.parquet",
        f"data.val_files={src}/val.parquet",
        "data.shuffle=False",
        f"data.train_batch_size={tasks}",
        f"data.max_prompt_length={prompt}",
        f"data.max_response_length={response}",
        f"actor_rollout_ref.model.path={model}",
        f"actor_rollout_ref.rollout.name={verl.rollout}",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.n={n}",
        f"actor_rollout_ref.rollout.prompt_length={prompt}",
        f"actor_rollout_ref.rollout.response_length={response}",
        f"actor_rollout_ref.rollout.max_model_len={prompt + response}",
        f"actor_rollout_ref.rollout.tensor_model_parallel_size={verl.tensor_parallel}",
        "actor_rollout_ref.rollout.calculate_log_probs=True",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={src}/agent_loop.yaml",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={AGENT_NAME}",
        f"actor_rollout_ref.actor.optim.lr={algo.lr}",
        f"actor_rollout_ref.actor.clip_ratio_low={algo.clip_low}",
        f"actor_rollout_ref.actor.clip_ratio_high={algo.clip_high}",
        "actor_rollout_ref.actor.loss_agg_mode=token-mean",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={mini}",
        "actor_rollout_ref.actor.use_dynamic_bsz=True",
        f"actor_rollout_ref.actor.ppo_max_token_len_per_gpu={tokens}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={MICRO_BATCH}",
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True",
        f"actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu={tokens}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={MICRO_BATCH}",
        "actor_rollout_ref.ref.log_prob_use_dynamic_bsz=True",
        f"actor_rollout_ref.ref.log_prob_max_token_len_per_gpu={tokens}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={MICRO_BATCH}",
        "reward.reward_model.rollout.name=vllm",
    ]
    if name == "grpo":
        overrides.append("algorithm.adv_estimator=grpo")
    else:
        overrides += ["algorithm.adv_estimator=gae", f"algorithm.gamma={algo.gamma}",
                      f"algorithm.lam={algo.lam}",
                      f"critic.model.path={model}",
                      f"critic.ppo_mini_batch_size={mini}",
                      "critic.use_dynamic_bsz=True",
                      f"critic.ppo_max_token_len_per_gpu={tokens}",
                      f"critic.ppo_micro_batch_size_per_gpu={MICRO_BATCH}"]
    # evaluation: val.parquet holds one row per episode of every run (train.workload.eval_jobs)
    # plus run 0's episodes again for the greedy pass (rows flagged "greedy": the agent loop
    # samples those at temperature 0); every row once, sampled at temperature 1
    overrides += ["actor_rollout_ref.rollout.val_kwargs.n=1",
                  "actor_rollout_ref.rollout.val_kwargs.do_sample=True",
                  "actor_rollout_ref.rollout.val_kwargs.temperature=1.0",
                  "actor_rollout_ref.rollout.val_kwargs.top_p=1.0"]
    overrides += [
        f"trainer.total_training_steps={steps}",
        f"trainer.logger=[{','.join(loggers)}]",
        f"trainer.project_name=hscale-{manifest.experiment}",
        f"trainer.experiment_name={manifest.arm}-{manifest.seed}",
        f"trainer.nnodes={verl.nnodes}",
        f"trainer.n_gpus_per_node={verl.gpus_per_node or gpus_per_node or node_gpus(manifest)}",
        f"trainer.default_local_dir={dst}/checkpoints",
        "trainer.resume_mode=auto",
        "trainer.val_before_train=True",  # the starting model's rows: step 0
        # a checkpoint every `every` steps (else every tenth of the run) for resume; keep one
        f"trainer.save_freq={int(every or max(1, steps // 10))}",
        "trainer.max_actor_ckpt_to_keep=1",
        f"trainer.test_freq={int(every or max(steps, 1))}",
        f"trainer.validation_data_dir={dst}/validation",
        # veRL's file logger writes per-step metrics where the TaskRunner actor runs
        "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH="
        f"{dst}/{METRICS_DIR}/{STAMP}.jsonl",
    ]
    if steps == 0:  # the base model's reference run (or an SFT'd model): validate it, stop
        overrides.append("trainer.val_only=True")
    if name == "ppo":
        overrides.append("trainer.max_critic_ckpt_to_keep=1")
    plan = RunPlan(manifest)
    if plan.rescues:  # Harness-S: rescue groups, correct with w <= 2
        from hscale.train.backends.verl.rescue import MANAGER_PATH

        overrides += [f"+actor_rollout_ref.rollout.agent.agent_loop_manager_class={MANAGER_PATH}",
                      "algorithm.rollout_correction.rollout_is=token",
                      "algorithm.rollout_correction.rollout_is_threshold=2.0",
                      "algorithm.rollout_correction.bypass_mode=False"]
        if plan.profiles:  # the judges' profiles of the siblings, as a file
            from hscale.train.harness_s import PROFILES, PROFILES_ENV

            overrides.append(f"+ray_kwargs.ray_init.runtime_env.env_vars.{PROFILES_ENV}="
                             f"{dst}/{PROFILES}")
    if is_cpu(verl.rollout):  # veRL on the CPU (hscale.train.backends.verl.cpu)
        overrides += cpu_overrides()
    return [*overrides, *verl.overrides]
