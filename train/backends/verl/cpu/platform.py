"""A CPU device for veRL 0.9.1's platform layer (verl.plugin.platform), so veRL's own code
runs without a GPU: device ``cpu``, collectives over ``gloo``, torch's default RNG.

veRL registers only nvidia, huawei and amd platforms and, with no accelerator, falls back to
nvidia (device ``cuda``, backend ``nccl``); this module registers ``cpu`` through veRL's
extension point (``PlatformRegistry.register``), loaded in every process that imports veRL
by ``VERL_USE_EXTERNAL_MODULES=hscale.train.backends.verl.cpu.plugin`` and chosen by
``VERL_PLATFORM=cpu`` (never by auto-detection).

Ray resources: veRL asks Ray for its platform's resource and checks the cluster's ``GPU``
(or ``NPU``) count only (single_controller/ray/base.py, ``_check_resource_available``), so
this platform names Ray's ``GPU`` resource: on CPU it counts logical device slots, one per
veRL worker, declared with ``ray.init(num_gpus=N)`` or ``ray start --num-gpus N``.
"""

from __future__ import annotations

import contextlib
import os
import time
import types
from typing import Any

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

from hscale.train.backends.verl.cpu import PLATFORM as NAME

VISIBLE = "HSCALE_CPU_VISIBLE_DEVICES"


def _memory() -> tuple[int, int]:
    """(free, total) bytes of this machine's memory, what veRL asks a device for."""
    try:
        pages, free = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_AVPHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
        return free * size, pages * size
    except (ValueError, OSError):  # not POSIX: say 8 GiB, free
        return 8 << 30, 8 << 30


def _device_module() -> types.ModuleType:
    """``torch.cpu`` with the ``torch.cuda`` calls veRL makes on its device module
    (memory statistics, RNG state, cache and IPC calls) as the CPU's equivalents or no-ops."""
    module = types.ModuleType("hscale_cpu_device", "torch.cpu with torch.cuda's call surface")

    def none(*_: Any, **__: Any) -> None:
        return None

    def zero(*_: Any, **__: Any) -> int:
        return 0

    module.__dict__.update({
        "is_available": lambda: True, "device_count": lambda: 1, "current_device": lambda: "cpu",
        "get_device_name": lambda *_: "cpu", "mem_get_info": lambda *_: _memory(),
        "get_rng_state": lambda *_: torch.get_rng_state(),
        "set_rng_state": lambda state, *_: torch.set_rng_state(state),
        "manual_seed": torch.manual_seed, "manual_seed_all": torch.manual_seed,
        "Event": _Event,
        "__getattr__": lambda name: getattr(torch.cpu, name),  # streams and the rest
    })
    for key in ("set_device", "synchronize", "empty_cache", "ipc_collect",
                "reset_peak_memory_stats", "set_per_process_memory_fraction"):
        module.__dict__[key] = none
    for key in ("memory_allocated", "memory_reserved", "max_memory_allocated",
                "max_memory_reserved"):
        module.__dict__[key] = zero
    return module


class _Event:
    """torch.cuda.Event's timing surface on CPU (wall clock)."""

    def __init__(self, enable_timing: bool = False, **_: Any) -> None:
        self.time: float | None = None

    def record(self, *_: Any) -> None:
        self.time = time.perf_counter()

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: _Event) -> float:
        return ((end.time or 0.0) - (self.time or 0.0)) * 1000.0


_DEVICE = _device_module()


@PlatformRegistry.register(platform=NAME)
class PlatformCPU(PlatformBase):
    """veRL's platform interface on the CPU: one device, gloo, no profiler, no IPC."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> types.ModuleType:
        return _DEVICE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # never auto-detected: a process that merely imported this module (hscale checking
        # a spec) keeps veRL's own choice; VERL_PLATFORM=cpu selects it
        return False

    def current_device(self) -> Any:
        return "cpu"  # veRL moves tensors with .to(get_device_id()): 0 would mean cuda:0

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return VISIBLE

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"  # logical device slots; see the module docstring

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def register_engines() -> None:
    """veRL's FSDP training engines (language and value model) for the ``cpu`` device: veRL
    registers them for cuda and npu only (verl/workers/engine/fsdp/transformer_impl.py)."""
    from verl.workers.engine.base import EngineRegistry
    from verl.workers.engine.fsdp.transformer_impl import (
        FSDPEngineWithLMHead,
        FSDPEngineWithValueHead,
    )

    for model_type, engine in (("language_model", FSDPEngineWithLMHead),
                               ("value_model", FSDPEngineWithValueHead)):
        known = EngineRegistry._engines.get(model_type, {}).get("fsdp", {})
        if NAME not in known:
            EngineRegistry.register(model_type=model_type, backend=["fsdp", "fsdp2"],
                                    device=NAME)(engine)


def join_worker_process_group() -> bool:
    """In a veRL worker process (Ray actor of a worker group: ``WG_BACKEND=ray`` with its rank
    and master address), join torch.distributed's default group over gloo, before veRL does.

    veRL 0.9.1 builds its backend string as ``cpu:gloo,{device}:{backend}``
    (verl/utils/distributed.py:63 and :89), which torch refuses when the device is ``cpu``
    ("Duplicate device type cpu"); it skips its own init when a group exists. True when this
    process joined now."""
    import torch.distributed as dist

    env = os.environ
    if (env.get("WG_BACKEND") != "ray" or dist.is_initialized()
            or not all(env.get(k) for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))):
        return False
    from verl.plugin.platform import get_platform

    if get_platform().device_name != "cpu":
        return False
    dist.init_process_group(backend="gloo", rank=int(env["RANK"]),
                            world_size=int(env["WORLD_SIZE"]))
    return True


__all__ = ["NAME", "PlatformCPU", "join_worker_process_group", "register_engines"]
