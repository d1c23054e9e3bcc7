"""Launching a prepared veRL run here, as a subprocess, and what a launch needs.

launch.sh runs with its output in ``verl/train.log`` and dies with the runner. On a Ray
cluster the runner's executor runs it as a job instead (its record in ``verl/ray_job.json``,
so a re-run re-attaches to a job still running); either way veRL's
``trainer.resume_mode=auto`` resumes from the last checkpoint.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from hscale.contracts import Manifest
from hscale.errors import HscaleError
from hscale.files import last_line
from hscale.train.backends import _environment as environment
from hscale.train.backends._environment import (
    CPU_EXTRA,
    GPU_EXTRA,
    Requirement,
    gpus,
    package,
    require,
)
from hscale.train.backends.verl._inputs import OUT_ENV
from hscale.train.backends.verl._overrides import VERL_DIR, settings
from hscale.train.backends.verl.cpu.settings import is_cpu

LOG = "train.log"
JOB_RECORD = "ray_job.json"
# what a Ray job must not upload from verl/: outputs, logs, Hydra's run folders
RAY_EXCLUDES = ("/checkpoints/", "/validation/", "/outputs/", "*.log", f"/{JOB_RECORD}")


def launch_requirements(on_ray: bool, cpu: bool = False) -> list[Requirement]:
    """What a launch needs here: veRL; then Ray for a cluster, or GPUs and vLLM on this
    machine (the GPU extra), or, for runs on the CPU (``verl.rollout: hscale_hf``), nothing
    more."""
    needs = [package("verl", "verl", CPU_EXTRA, "the veRL backend runs veRL's trainer",
                     label="veRL")]
    if on_ray:
        return [*needs, package("ray", "ray", CPU_EXTRA, "jobs go to the Ray cluster")]
    if cpu:
        return needs
    return [*needs, gpus(), package("vllm", "vllm", GPU_EXTRA,
                                    "veRL's async rollouts need it (veRL 0.9.1 pins vLLM 0.24)",
                                    label="vLLM")]


def check_launch(manifests: Sequence[Manifest], on_ray: bool) -> None:
    """Everything a launch needs, checked before anything is written; each missing piece is
    one HscaleError naming the fix. On Ray the spec must say its nodes' GPUs (the runner's
    machine is not a node)."""
    require(launch_requirements(on_ray, cpu=all(_on_cpu(m) for m in manifests)))
    if on_ray:
        unsized = [m.arm for m in manifests
                   if settings(m).gpus_per_node is None]
        if unsized:
            raise HscaleError(f"arm {unsized[0]}: on a Ray cluster veRL needs the GPUs per node",
                              "set verl: {nnodes: N, gpus_per_node: G} in the spec")


def _on_cpu(manifest: Manifest) -> bool:
    return is_cpu(settings(manifest).rollout)


def launch_local(run_dir: str | Path, extra: Sequence[str] = ()) -> None:
    """Run the run's launch.sh here, its output appended to verl/train.log; an error with the
    log's last line when veRL fails. Ctrl-C stops veRL too (its process group)."""
    out = Path(run_dir).resolve() / VERL_DIR
    log_path = out / LOG
    env = {k: v for k, v in os.environ.items() if k != OUT_ENV}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.setdefault("HSCALE_GPUS_PER_NODE", str(environment.cuda_gpus()))
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"# hscale: launch.sh {shlex.join(extra)} at {_now()}\n")
        log.flush()
        proc = subprocess.Popen(["bash", str(out / "launch.sh"), *extra], cwd=out, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_parent(os.getpid()))
        try:
            code = proc.wait()
        except BaseException:
            _stop(proc)
            raise
    if code:
        raise RuntimeError(f"veRL exited with status {code}: {last_line(log_path)} "
                           f"(see {log_path})")


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """On Linux, a launched veRL gets SIGTERM when the runner dies (even by kill -9), so a
    re-run never finds the previous launch still holding the GPUs."""
    if not sys.platform.startswith("linux"):
        return None

    def arm() -> None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_DEATHSIG
        if os.getppid() != parent:  # the runner died before the line above
            os._exit(1)

    return arm


def _stop(proc: subprocess.Popen) -> None:
    """Stop the launched process group: SIGTERM, then SIGKILL after a grace period."""
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(grace)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


