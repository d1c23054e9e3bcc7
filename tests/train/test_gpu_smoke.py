"""The GPU smoke run (experiments/gpu-smoke/run.sh) as far as a CPU goes: its model folder
builds, its spec plans with budgets measured by that model's tokenizer, and its veRL inputs
pass every check veRL's own code makes before a GPU is touched. On a CUDA machine with the
GPU extra, the whole script runs."""

from __future__ import annotations

import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytest.importorskip("verl")

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "experiments" / "gpu-smoke"


def smollm2(folder: Path) -> Path:
    from hscale.errors import HscaleError

    # internal: tests the packaged-weights importer
    from hscale.train.lm._importer import find_gguf, import_smollm2

    try:
        find_gguf()
    except HscaleError as exc:
        pytest.skip(exc.message)
    return import_smollm2(folder, force=True)


@pytest.mark.parametrize("source", ["random", pytest.param("smollm2", marks=pytest.mark.slow)])
def test_the_smoke_spec_passes_every_check_before_the_gpu(tmp_path, source):
    if source == "random":
        model = runpy.run_path(str(SMOKE / "make_model.py"))["make"](tmp_path / "model")
    else:  # what run.sh uses when the package index has it: no hub download
        model = smollm2(tmp_path / "model")
    spec = yaml.safe_load((SMOKE / "smoke.yaml").read_text())
    spec["model"] = str(model)
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(spec))
    done = subprocess.run([sys.executable, "-m", "hscale.cli", "run", str(path), "--backend",
                           "verl", "--dry-run", "--out", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "wrote verl inputs for 3 runs" in done.stdout  # two arms and the base model
    reference = tmp_path / "runs" / "gpu-smoke" / "base-model" / "0" / "verl"
    assert "trainer.val_only=True" in (reference / "launch.sh").read_text()
    assert len(pd.read_parquet(reference / "train.parquet")) == 4  # one batch veRL never trains
    launch = (tmp_path / "runs" / "gpu-smoke" / "structured-18" / "0" / "verl" / "launch.sh")
    text = launch.read_text()
    assert f"actor_rollout_ref.model.path={model}" in text
    assert "rollout.gpu_memory_utilization=0.3" in text


@pytest.mark.gpu
def test_the_smoke_run_trains_on_a_gpu(tmp_path):
    pytest.importorskip("vllm")
    work = tmp_path / "repo"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns("runs", ".git", "__pycache__"))
    done = subprocess.run(["bash", "experiments/gpu-smoke/run.sh"], cwd=work,
                          capture_output=True, text=True, timeout=3600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "structured-18" in done.stdout
