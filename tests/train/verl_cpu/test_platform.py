"""The CPU platform as veRL 0.9.1 sees it when its external-module hook loads the plugin:
device ``cpu``, ``gloo``, the FSDP engines and the ``hscale_hf`` rollout registered; in a
worker process the gloo group is joined before veRL's own init (which would ask torch for
``cpu:gloo,cpu:gloo``), so veRL's init is a no-op and collectives work. A fresh interpreter
(the hook runs when veRL is first imported)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

pytest.importorskip("verl")
pytest.importorskip("torch")

from hscale.train.backends.verl.cpu import ENV  # noqa: E402

PROBE = """
import json, torch, verl
from verl.utils.device import get_device_id, get_device_name, get_nccl_backend, get_torch_device
from verl.utils.distributed import initialize_global_process_group_ray
from verl.workers.engine.base import EngineRegistry
from verl.workers.rollout.base import get_rollout_class
from verl.workers.rollout.replica import RolloutReplicaRegistry

initialize_global_process_group_ray()  # veRL's own: a no-op, the plugin joined gloo already
x = torch.ones(3)
torch.distributed.all_reduce(x)
device = get_torch_device()
print(json.dumps({
    "device": get_device_name(), "backend": get_nccl_backend(), "id": get_device_id(),
    "dist": torch.distributed.get_backend(), "sum": x.tolist(),
    "moved": str(torch.zeros(1).to(get_device_id()).device),
    "free": device.mem_get_info()[0] > 0, "allocated": device.memory_allocated(),
    "engine": EngineRegistry.get_engine_cls("language_model", "fsdp2").__name__,
    "value": EngineRegistry.get_engine_cls("value_model", "fsdp").__name__,
    "replica": RolloutReplicaRegistry.get("hscale_hf").__name__,
    "adapter": get_rollout_class("hscale_hf", "async").__name__,
}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_verl_runs_on_the_cpu_platform_in_a_worker_process():
    env = {**os.environ, **ENV, "WG_BACKEND": "ray", "RANK": "0", "WORLD_SIZE": "1",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"device": "cpu", "backend": "gloo", "id": "cpu", "dist": "gloo",
                    "sum": [1.0, 1.0, 1.0], "moved": "cpu", "free": True, "allocated": 0,
                    "engine": "FSDPEngineWithLMHead", "value": "FSDPEngineWithValueHead",
                    "replica": "HFReplica", "adapter": "HFServerAdapter"}


def test_importing_the_plugin_does_not_take_over_verls_platform_choice():
    probe = ("import hscale.train.backends.verl.cpu.plugin, verl.plugin.platform as p; "
             "print(p.get_platform().device_name)")
    env = {k: v for k, v in os.environ.items() if k not in ENV}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] != "cpu"  # veRL's fallback, not ours
