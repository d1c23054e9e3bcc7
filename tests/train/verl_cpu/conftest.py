"""Shared pieces of the veRL-on-CPU tests: a tiny model folder, a 2-step GRPO spec that
selects the CPU path (``verl.rollout: hscale_hf``), and the environment a launch gets
(token auth off for a local Ray, few threads)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

SPEC = {
    "name": "verl-cpu",
    "backend": "verl",
    "benchmark": {"name": "builtin", "tasks": 8, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 2, "rollouts": 2, "lr": 1.0e-5},
    "steps": 2,
    "seeds": [0],
    "tracking": ["console"],
    "evaluation": {"base": True, "base_model": False, "in_space": 0, "out_of_space": [],
                   "runs": 1, "tasks": 2},
    "verl": {"rollout": "hscale_hf", "gpus_per_node": 1},
    # two harnesses a task (locality, K = 2) over the 2 steps
    "defaults": {"train": {"recipe": "structured", "runs": 18},
                 "assignment": {"mode": "locality", "k": 2}},
    "arms": {"structured-18": {"description": "OA(18; 3^5), locality K=2"}},
}
RUN = Path("verl-cpu") / "structured-18" / "0"


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    pytest.importorskip("transformers")
    from hscale.train.backends.verl.cpu.model import tiny_model as make

    return make(tmp_path_factory.mktemp("verl-cpu") / "model")


def write_spec(folder: Path, model: Path, **changes) -> Path:
    spec = {**SPEC, "model": str(model), **changes}
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def launch_env() -> dict[str, str]:
    return {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
            "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "RAY_DEDUP_LOGS": "1",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def hscale(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hscale.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=launch_env())
