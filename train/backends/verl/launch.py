"""Launching a prepared veRL run: here as a subprocess, or as a job on a Ray cluster.

Locally, launch.sh runs with its output in ``verl/train.log`` and dies with the runner. On Ray
its working_dir is ``verl/`` and its outputs go to this run folder's absolute path (so the
cluster must see the runs folder at the same path: one machine or a shared filesystem). The
job is kept in ``verl/ray_job.json``, so a re-run re-attaches to a job still running; veRL's
``trainer.resume_mode=auto`` resumes from the last checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

from hscale.errors import HscaleError
from hscale.files import atomic_write_text
from hscale.train import environment
from hscale.train.backends.verl.cpu.settings import is_cpu
from hscale.train.backends.verl.inputs import OUT_ENV
from hscale.train.backends.verl.overrides import VERL_DIR, settings
from hscale.train.backends.verl.record import verl_record_of
from hscale.train.contracts import Manifest
from hscale.train.environment import CPU_EXTRA, GPU_EXTRA, Requirement, gpus, package, require

LOG = "train.log"
JOB_RECORD = "ray_job.json"
# what a Ray job must not upload from verl/: outputs, logs, Hydra's run folders
RAY_EXCLUDES = ("/checkpoints/", "/validation/", "/outputs/", "*.log", f"/{JOB_RECORD}")
POLL_SECONDS = 10.0  # between two looks at a Ray job


def launch_requirements(ray_address: str | None, cpu: bool = False) -> list[Requirement]:
    """What a launch needs here: veRL; then Ray for a cluster, or GPUs and vLLM on this
    machine (the GPU extra), or, for runs on the CPU (``verl.rollout: hscale_hf``), nothing
    more."""
    needs = [package("verl", "verl", CPU_EXTRA, "the veRL backend runs veRL's trainer",
                     label="veRL")]
    if ray_address:
        return [*needs, package("ray", "ray", CPU_EXTRA, "jobs go to the Ray cluster")]
    if cpu:
        return needs
    return [*needs, gpus(), package("vllm", "vllm", GPU_EXTRA,
                                    "veRL's async rollouts need it (veRL 0.9.1 pins vLLM 0.24)",
                                    label="vLLM")]


def check_launch(manifests: Sequence[Manifest], ray_address: str | None) -> None:
    """Everything a launch needs, checked before anything is written; each missing piece is
    one HscaleError naming the fix. On Ray the spec must say its nodes' GPUs (the runner's
    machine is not a node)."""
    require(launch_requirements(ray_address, cpu=all(_on_cpu(m) for m in manifests)))
    if ray_address:
        from hscale.train.backends.ray_jobs import connect, dashboard_url

        dashboard_url(ray_address)  # a malformed address first: it is the plainer mistake
        unsized = [m.arm for m in manifests
                   if (verl_record_of(m) or settings(m)).gpus_per_node is None]
        if unsized:
            raise HscaleError(f"arm {unsized[0]}: on a Ray cluster veRL needs the GPUs per node",
                              "set verl: {nnodes: N, gpus_per_node: G} in the spec")
        connect(ray_address)


def _on_cpu(manifest: Manifest) -> bool:
    return is_cpu(settings(manifest).rollout)


def job_fields(run_dir: Path) -> dict[str, Any]:
    """The Ray job a run was submitted as, from verl/ray_job.json (for status.json)."""
    try:
        record = json.loads((Path(run_dir) / VERL_DIR / JOB_RECORD).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or not record.get("job_id"):
        return {}
    return {"ray_address": record.get("address"), "ray_job_id": record["job_id"]}


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
        raise RuntimeError(f"veRL exited with status {code}: {_last_line(log_path)} "
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


def launch_ray(run_dir: str | Path, manifest: Manifest, address: str,
               extra: Sequence[str] = (), interval: float = POLL_SECONDS,
               on_poll: Callable[[str], None] | None = None) -> str:
    """Run launch.sh as a Ray job, or re-attach to this run's job if it still runs; follow it
    to the end with its logs in verl/train.log (``on_poll`` hears the job's state at every
    look). The job is recorded in verl/ray_job.json before it is submitted. Returns its id."""
    from hscale.train.backends import ray_jobs

    run_dir = Path(run_dir).resolve()
    out = run_dir / VERL_DIR
    client = ray_jobs.connect(address)
    job_id, submit = _job_to_follow(client, out, manifest, address)
    if submit:
        atomic_write_text(out / JOB_RECORD, json.dumps(
            {"job_id": job_id, "address": address, "manifest_hash": manifest.hash,
             "submitted_at": _now()}, indent=2) + "\n")
        ray_jobs.submit(client, shlex.join(["bash", "launch.sh", *extra]), out,
                        submission_id=job_id, env_vars={OUT_ENV: str(out)},
                        py_modules=ray_jobs.hscale_py_modules(), excludes=RAY_EXCLUDES,
                        metadata={"hscale_run": str(run_dir), "manifest": manifest.hash})
    state = ray_jobs.follow(client, job_id, out / LOG, interval=interval, on_poll=on_poll)
    if state != "SUCCEEDED":
        why = ray_jobs.job_message(client, job_id) or _last_line(out / LOG)
        raise RuntimeError(f"Ray job {job_id} ended {state}: {why} (see {out / LOG})")
    return job_id


def _job_to_follow(client: Any, out: Path, manifest: Manifest, address: str
                   ) -> tuple[str, bool]:
    """(job id, submit it?): the recorded job if it is pending, running or succeeded; the
    recorded id again if it never reached the cluster; else a fresh id."""
    from hscale.train.backends.ray_jobs import job_state

    try:
        record = json.loads((out / JOB_RECORD).read_text())
    except (OSError, json.JSONDecodeError):
        record = {}
    if (record.get("job_id") and record.get("address") == address
            and record.get("manifest_hash") == manifest.hash):
        state = job_state(client, record["job_id"])
        if state is None:
            return record["job_id"], True
        if state in ("PENDING", "RUNNING", "SUCCEEDED"):
            return record["job_id"], False
    name = f"hscale-{manifest.experiment}-{manifest.arm}-{manifest.seed}"
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '-', name)}-{uuid4().hex[:8]}", True


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log)"
    text = next((ln.strip() for ln in reversed(lines) if ln.strip()), "(empty log)")
    return text[:300]
