"""The ``hscale_hf`` rollout for veRL 0.9.1 (``actor_rollout_ref.rollout.name=hscale_hf``):
what stands in for vLLM where there is no GPU (veRL registers only vllm, sglang and trtllm
replicas, and the vllm wheel on the package index is a CUDA build). Registered through
veRL's registries by :func:`register` (the CPU plugin calls it):

- :class:`HFReplica` (``RolloutReplicaRegistry``): launches one model server
  (hscale.train.backends.verl.cpu.server.HFServer) per replica, beside the replica's first trainer
  worker (hybrid mode), or anywhere (standalone: no trainer, for driving agent loops alone).
- :class:`HFServerAdapter` (the worker-side rollout, ``_ROLLOUT_REGISTRY``): in the trainer's
  worker, hands the trained weights to its replica's server at each weight sync (veRL's
  ``naive`` sync); resume and release are no-ops on the CPU.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
from verl.workers.rollout.base import _ROLLOUT_REGISTRY, BaseRollout
from verl.workers.rollout.replica import RolloutMode, RolloutReplica, RolloutReplicaRegistry

from hscale.train.backends.verl.cpu import ROLLOUT
from hscale.train.backends.verl.cpu.server import HFServer

ADAPTER_PATH = f"{__name__}.HFServerAdapter"


def server_name(replica_rank: int) -> str:
    """The Ray actor name of a replica's server (the worker-side adapter looks it up)."""
    return f"{ROLLOUT}_server_{replica_rank}"


def register() -> None:
    """Register the replica and the worker-side rollout with veRL (idempotent)."""
    RolloutReplicaRegistry.register(ROLLOUT, lambda: HFReplica)
    _ROLLOUT_REGISTRY[(ROLLOUT, "async")] = ADAPTER_PATH


# ------------------------------------------------------------------------------- replica, adapter


class HFReplica(RolloutReplica):
    """One :class:`HFServer` per replica (world size 1: no tensor parallelism)."""

    async def init_standalone(self) -> None:
        """A server on its own, no trainer and no device slot: for agent loops alone."""
        self.rollout_mode = RolloutMode.STANDALONE
        await self.launch_servers()

    def rollout_worker_use_gpu(self) -> bool:
        return False

    async def launch_servers(self) -> None:
        if self.world_size != 1:
            raise ValueError(f"{ROLLOUT}: tensor/data/pipeline parallel sizes must be 1, "
                             f"got a world size of {self.world_size}")
        options: dict[str, Any] = {"name": server_name(self.replica_rank), "num_cpus": 0,
                                   "max_concurrency": self.max_concurrency}
        if self.workers:  # hybrid: beside the trainer worker that sends it weights
            node = await self.workers[0].__ray_call__.remote(
                lambda worker: ray.get_runtime_context().get_node_id())
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
        server = ray.remote(HFServer).options(**options).remote(
            self.config, self.model_config, self.replica_rank)
        await server.__ray_ready__.remote()
        self.servers = [server]
        self._server_handle = server
        self._server_address = f"{ROLLOUT}-{self.replica_rank}"


class HFServerAdapter(BaseRollout):
    """The rollout inside a trainer worker: it sends the trained weights to its replica's
    server; resume and release are no-ops on CPU."""

    def __init__(self, config: Any, model_config: Any, device_mesh: Any = None,
                 replica_rank: int = -1, **_: Any) -> None:
        super().__init__(config, model_config, device_mesh)
        rank = int(os.environ.get("RANK", "0"))
        size = (self.config.tensor_model_parallel_size * self.config.data_parallel_size
                * self.config.pipeline_model_parallel_size)
        self.replica_rank = rank // size if replica_rank == -1 else replica_rank
        self.is_leader_rank = rank % size == 0
        self._server: Any = None

    def _handle(self) -> Any:
        if self._server is None:
            self._server = ray.get_actor(server_name(self.replica_rank))
        return self._server

    async def resume(self, tags: list[str]) -> None:
        return None

    async def release(self) -> None:
        return None

    async def update_weights(self, weights: Iterable[tuple[str, Any]],
                             wire_format: str = "named_tensors",
                             global_steps: int | None = None, **_: Any) -> None:
        if wire_format != "named_tensors":
            raise ValueError(f"{ROLLOUT}: weight updates come as named tensors, "
                             f"not {wire_format!r}")
        named = [(name, _full(t)) for name, t in weights]  # every rank: they are collectives
        if self.is_leader_rank:
            await self._handle().load_weights.remote(named, global_steps)


def _full(tensor: Any) -> Any:
    if hasattr(tensor, "full_tensor"):  # a DTensor
        tensor = tensor.full_tensor()
    return tensor.detach().to("cpu", copy=True)


__all__ = ["ADAPTER_PATH", "HFReplica", "HFServerAdapter", "register", "server_name"]
