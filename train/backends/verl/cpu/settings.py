"""What a veRL run on the CPU adds to hscale's launch: a spec selects it with
``verl: {rollout: hscale_hf}`` (hscale.train.backends.verl._overrides adds :func:`overrides`,
hscale.train.backends.verl._inputs writes :func:`launch_lines` into launch.sh, and the launch needs
no GPU or vLLM). Importing this module is cheap (no veRL, no torch).
"""

from __future__ import annotations

import shlex

from hscale.train.backends.verl.cpu import ENV, ROLLOUT

# Ray resources of a Ray that launch.sh starts itself: logical CPUs (veRL's placement bundles
# ask for several per worker) and one logical GPU, veRL's device slot (see cpu.platform)
LOGICAL_CPUS = 16
RAY_ARGS = "HSCALE_RAY_INIT"  # launch.sh's array of those ray_init overrides


def is_cpu(rollout: str | None) -> bool:
    """Whether a run with this ``verl.rollout`` runs on the CPU."""
    return rollout == ROLLOUT


def overrides() -> list[str]:
    """Hydra overrides that put veRL's trainer on the CPU: the platform module in every Ray
    worker, device ``cpu``, FSDP2 (FSDP1 wants a GPU for ``sync_module_states``), no
    torch.compile, no flash-attention (sdpa), padded batches, one agent-loop and one
    reward worker, and one TransferQueue storage unit (veRL's 8 are for spreading a
    cluster's load; on one machine each is only another process to start)."""
    env = [f"+ray_kwargs.ray_init.runtime_env.env_vars.{k}={v}" for k, v in ENV.items()]
    return [
        *env,
        "+ray_kwargs.ray_init.runtime_env.env_vars.OMP_NUM_THREADS='1'",
        "trainer.device=cpu",
        "actor_rollout_ref.actor.strategy=fsdp2",
        "actor_rollout_ref.ref.strategy=fsdp2",
        "actor_rollout_ref.actor.use_torch_compile=False",
        "actor_rollout_ref.ref.use_torch_compile=False",
        "actor_rollout_ref.model.use_remove_padding=False",
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        "actor_rollout_ref.rollout.agent.num_workers=1",
        "reward.num_workers=1",
        "data.dataloader_num_workers=0",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units=1",
    ]


def launch_lines(slots: int) -> list[str]:
    """launch.sh lines before veRL starts: the platform module for this process, few threads,
    and, when launch.sh starts its own Ray (no ``RAY_ADDRESS``: not a Ray job), the logical
    CPUs and ``slots`` device slots it must declare (a Ray cluster declares its own:
    ``ray start --num-gpus N``) and ``address=local``: without it ``ray.init`` joins the last
    ``ray start`` head of the machine, which refuses those resources."""
    ray = ["+ray_kwargs.ray_init.address=local", f"ray_kwargs.ray_init.num_cpus={LOGICAL_CPUS}",
           f"+ray_kwargs.ray_init.num_gpus={int(slots)}",
           "+ray_kwargs.ray_init.include_dashboard=False"]
    return [
        "# veRL on the CPU (hscale.train.backends.verl.cpu): its platform module, few threads",
        "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in ENV.items()),
        'export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-'
        'PASSIVE}" TOKENIZERS_PARALLELISM=false',
        f"{RAY_ARGS}=()",
        f'if [ -z "${{RAY_ADDRESS:-}}" ]; then {RAY_ARGS}=({" ".join(ray)}); fi',
    ]


def launch_args() -> str:
    """The launch.sh word that passes :data:`RAY_ARGS` on (none when it is empty)."""
    return f'${{{RAY_ARGS}[@]+"${{{RAY_ARGS}[@]}}"}}'


__all__ = ["LOGICAL_CPUS", "is_cpu", "launch_args", "launch_lines", "overrides"]
