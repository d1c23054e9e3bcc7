"""How a spec selects veRL on the CPU (``verl: {rollout: hscale_hf}``): the Hydra overrides
hscale adds, launch.sh's environment and Ray resources, a launch that needs no GPU or vLLM,
and veRL's own config checks passing with the ``hscale_hf`` rollout registered."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verl")
pytest.importorskip("hydra")

from hscale.train.backends.verl.cpu import ENV, ROLLOUT  # noqa: E402
from hscale.train.backends.verl.cpu.settings import overrides as cpu_overrides  # noqa: E402
from hscale.train.planning import plan  # noqa: E402
from tests.train.verl_cpu.conftest import write_spec  # noqa: E402


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, tiny_model):
    from hscale.train.backends.verl import prepare_verl_run

    tmp = tmp_path_factory.mktemp("verl-cpu-inputs")
    (done,) = plan(write_spec(tmp, tiny_model), tmp / "runs")
    return done.manifest, prepare_verl_run(done.path, done.manifest)


def test_the_cpu_overrides_come_after_hscales_and_before_the_specs(prepared):
    _, info = prepared
    overrides = info["overrides"]
    assert f"actor_rollout_ref.rollout.name={ROLLOUT}" in overrides
    start = overrides.index(cpu_overrides()[0])
    assert overrides[start:start + len(cpu_overrides())] == cpu_overrides()
    assert "trainer.device=cpu" in overrides
    assert "actor_rollout_ref.actor.strategy=fsdp2" in overrides
    for key, value in ENV.items():  # every Ray worker loads the platform module
        assert f"+ray_kwargs.ray_init.runtime_env.env_vars.{key}={value}" in overrides


def test_a_gpu_spec_gets_none_of_them(tmp_path):
    from hscale.train.backends.verl import build_overrides

    spec = write_spec(tmp_path, "Qwen/Qwen3-4B-Instruct-2507",
                      verl={"gpus_per_node": 8, "rollout": "vllm"})
    (done,) = plan(spec, tmp_path / "runs")
    overrides = build_overrides(done.path, done.manifest)
    assert not set(cpu_overrides()) & set(overrides)


def test_launch_sh_exports_the_platform_and_sizes_a_ray_it_starts(prepared, tmp_path):
    _, info = prepared
    text = info["launch"].read_text()
    assert ("export VERL_USE_EXTERNAL_MODULES=hscale.train.backends.verl.cpu.plugin "
            "VERL_PLATFORM=cpu") in text
    assert "nvidia-smi" not in text  # the spec names its device slots
    # a Ray that launch.sh starts itself gets logical CPUs and one device slot; a Ray job
    # (RAY_ADDRESS set) connects to its cluster, which refuses resource arguments
    for address, expect in (("", True), ("http://head:8265", False)):
        words = _ray_words(text, {"RAY_ADDRESS": address, "HSCALE_VERL_OUT": str(tmp_path)})
        assert ("+ray_kwargs.ray_init.num_gpus=1" in words) is expect
        assert ("ray_kwargs.ray_init.num_cpus=16" in words) is expect
        # its own Ray, not the machine's last 'ray start' head (which refuses resources)
        assert ("+ray_kwargs.ray_init.address=local" in words) is expect


def _ray_words(launch: str, env: dict[str, str]) -> list[str]:
    """The ray_init overrides that launch.sh passes veRL under ``env``."""
    return subprocess.run(
        ["bash", "-c", launch.split("exec python")[0] + ' printf "%s\\n" '
         '${HSCALE_RAY_INIT[@]+"${HSCALE_RAY_INIT[@]}"}'],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env},
        check=True).stdout.split()


@pytest.mark.slow
def test_a_launch_starts_its_own_ray_beside_a_head_started_on_the_machine(prepared, tmp_path):
    """A Ray head started on the machine (``ray start``, its address in Ray's
    ray_current_cluster file) is where a bare ``ray.init`` connects, and that refuses the
    CPUs a launch declares: veRL's ray.init with launch.sh's words starts its own Ray."""
    import tempfile

    import yaml

    from tests.ray_head import RAY_ENV, local_ray_head

    temp = Path(tempfile.mkdtemp(prefix="hsrt", dir="/tmp"))  # Ray's socket paths are short
    words = _ray_words(prepared[1]["launch"].read_text(), {"HSCALE_VERL_OUT": str(tmp_path)})
    kwargs = {w.split("ray_init.", 1)[1].split("=")[0]: yaml.safe_load(w.split("=", 1)[1])
              for w in words}
    init = ("import json, sys, ray\n"
            "ray.init(**json.loads(sys.argv[1]))\n"
            "print(ray.get_runtime_context().gcs_address)\n")
    with local_ray_head(dashboard=False) as head:
        (temp / "ray").mkdir()
        (temp / "ray" / "ray_current_cluster").write_text(head)  # as 'ray start' writes it
        env = {**os.environ, **RAY_ENV, "RAY_TMPDIR": str(temp)}
        for given, joins in ((kwargs, False), ({k: v for k, v in kwargs.items()
                                                if k != "address"}, True)):
            done = subprocess.run([sys.executable, "-c", init, json.dumps(given)], env=env,
                                  capture_output=True, text=True, timeout=180)
            if joins:  # what the launch did before: veRL's ray.init stops at once
                assert done.returncode != 0 and "existing cluster" in done.stderr
            else:
                assert done.returncode == 0, done.stderr[-2000:]
                assert done.stdout.split()[-1] != head
    shutil.rmtree(temp, ignore_errors=True)


def test_a_launch_on_the_cpu_needs_no_gpu_and_no_vllm():
    from hscale.train.backends.verl import launch_requirements

    assert [r.what for r in launch_requirements(None, cpu=True)] == ["veRL"]
    assert len(launch_requirements(None)) == 3  # veRL, GPUs, vLLM


def test_verls_config_checks_pass_with_the_cpu_rollout(prepared):
    from hscale.train.backends.verl import validate_overrides

    config = validate_overrides(prepared[1]["overrides"])
    assert config.actor_rollout_ref.rollout.name == ROLLOUT
    assert config.trainer.device == "cpu"
