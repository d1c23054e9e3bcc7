"""Ray jobs: submit one entry point to a Ray cluster and follow it until it ends.

Jobs go through the cluster's dashboard (``ray.job_submission.JobSubmissionClient``), so the
address is the dashboard's, ``http://HEAD:8265`` (``HEAD:8265`` is read the same way). The
entry point runs in a ``runtime_env`` whose ``working_dir`` is uploaded from this machine
(``excludes`` keep checkpoints and logs out of it: Ray refuses packages over its gRPC message
limit) and whose ``py_modules`` carry hscale's own packages, so the cluster runs the code that
planned the run. Nothing here knows about veRL: any command runs as a job.

Ray is imported lazily: ``hscale --help`` must not pay for it.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.files import atomic_write_text

TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
HSCALE_PACKAGES = ("hscale", "design", "harness", "train")
DEFAULT_EXCLUDES = ("__pycache__/", "*.pyc")
START_HINT = ("start a head with 'ray start --head --dashboard-host=0.0.0.0' (port 8265), or "
              "check the address: it is the dashboard's, http://HEAD:8265")


def dashboard_url(address: str) -> str:
    """The job API's URL for ``address``: a bare ``host:port`` means http."""
    address = address.strip()
    if not address:
        raise HscaleError("the Ray address is empty", START_HINT)
    if address.startswith("ray://"):
        raise HscaleError(f"{address} is a Ray client address; jobs go to the dashboard",
                          "give http://HEAD:8265 (the head's dashboard port)")
    return address if "://" in address else f"http://{address}"


def connect(address: str) -> Any:
    """A JobSubmissionClient for the cluster at ``address``, or one line saying there is none."""
    url = dashboard_url(address)
    try:
        from ray.job_submission import JobSubmissionClient
    except ImportError as exc:
        raise HscaleError(f"Ray's job client is not importable ({exc})",
                          'pip install -e ".[train]" (veRL brings ray[default])') from None
    try:
        return JobSubmissionClient(url)
    except Exception as exc:  # ConnectionError, RayError, ValueError: no usable cluster there
        raise HscaleError(f"no Ray cluster at {address} ({_first_line(exc)})",
                          START_HINT) from None


def hscale_py_modules() -> list[str]:
    """hscale's package folders, shipped with every job (the cluster may hold no hscale)."""
    import importlib

    return [os.path.dirname(importlib.import_module(name).__file__ or "")
            for name in HSCALE_PACKAGES]


def job_state(client: Any, job_id: str) -> str | None:
    """The job's state (PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED), None if unknown there."""
    try:
        return str(client.get_job_status(job_id).value)
    except RuntimeError as exc:
        if "does not exist" in str(exc) or "404" in str(exc):
            return None
        raise


def submit(client: Any, entrypoint: str, working_dir: str | Path, *,
           submission_id: str | None = None, env_vars: Mapping[str, str] | None = None,
           py_modules: Sequence[str] | None = None, excludes: Sequence[str] = (),
           metadata: Mapping[str, str] | None = None) -> str:
    """Submit ``entrypoint`` to run in an uploaded copy of ``working_dir``; the job id."""
    excludes = [*DEFAULT_EXCLUDES, *excludes]
    check_package_size(working_dir, excludes)
    runtime_env: dict[str, Any] = {"working_dir": str(working_dir), "excludes": excludes}
    if py_modules:
        runtime_env["py_modules"] = list(py_modules)
    if env_vars:
        runtime_env["env_vars"] = dict(env_vars)
    try:
        return client.submit_job(entrypoint=entrypoint, runtime_env=runtime_env,
                                 submission_id=submission_id,
                                 metadata=dict(metadata) if metadata else None)
    except (RuntimeError, ValueError) as exc:
        raise HscaleError(f"the Ray cluster refused the job from {working_dir}: "
                          f"{_first_line(exc)}",
                          "check the cluster's dashboard and the folder's size") from None


def follow(client: Any, job_id: str, log_path: str | Path, *, interval: float = 10.0,
           retries: int = 6, on_poll: Callable[[str], None] | None = None) -> str:
    """Poll the job until it ends, keeping ``log_path`` a copy of its logs; its final state.

    A few consecutive failed polls (a restarting dashboard, a network blip) are tolerated.
    """
    written, failures = -1, 0
    while True:
        try:
            state = str(client.get_job_status(job_id).value)
            logs = client.get_job_logs(job_id)  # after the state: complete once it is final
        except (ConnectionError, RuntimeError, OSError):
            failures += 1
            if failures > retries:
                raise
            time.sleep(interval)
            continue
        failures = 0
        if len(logs) != written:
            atomic_write_text(log_path, logs)
            written = len(logs)
        if on_poll is not None:
            on_poll(state)
        if state in TERMINAL:
            return state
        time.sleep(interval)


def job_message(client: Any, job_id: str) -> str:
    """Ray's one-line account of how the job ended ('' if it has none)."""
    try:
        return _first_line(client.get_job_info(job_id).message or "")
    except Exception:  # the message only decorates an error already being reported
        return ""


def check_package_size(working_dir: str | Path, excludes: Sequence[str]) -> int:
    """The bytes Ray would upload from ``working_dir`` (roughly: ``excludes`` are matched
    against every path part); an HscaleError before uploading if Ray would refuse them."""
    root = Path(working_dir)
    if not root.is_dir():
        raise HscaleError(f"{root}: no such folder to ship as the job's working_dir",
                          "prepare the run first")
    patterns = [p.strip("/") for p in excludes]
    total = 0
    for folder, dirs, files in os.walk(root):
        rel = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if not _excluded(rel / d, patterns)]
        total += sum((Path(folder) / f).stat().st_size for f in files
                     if not _excluded(rel / f, patterns))
    limit = _max_package_size()
    if total >= limit:
        raise HscaleError(f"{root}: {total / 2**20:.0f} MiB to upload, over Ray's "
                          f"{limit / 2**20:.0f} MiB limit for a job's working_dir",
                          "move large files out of the run's verl/ folder")
    return total


def _excluded(rel: Path, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatch(part, p) or fnmatch.fnmatch(str(rel), p)
               for p in patterns for part in rel.parts)


def _max_package_size() -> int:
    try:
        from ray._private.runtime_env.packaging import GCS_STORAGE_MAX_SIZE
    except ImportError:  # pragma: no cover -- Ray moved it; its own check still applies
        return 512 * 2**20
    return int(GCS_STORAGE_MAX_SIZE)


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
