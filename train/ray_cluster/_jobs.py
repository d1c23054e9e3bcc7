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
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import uuid4

from hscale.errors import HscaleError
from hscale.files import atomic_write_text, hash_files, last_line
from hscale.train.backends import RayJob

POLL_SECONDS = 10.0  # between two looks at a job
GCS_PORT, CLIENT_PORT, DASHBOARD_PORT = 6379, 10001, 8265  # Ray's defaults
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})
# hscale's subpackages, each in its own folder of a source checkout (an editable install)
HSCALE_PACKAGES = ("design", "harness", "train", "analysis")
DEFAULT_EXCLUDES = ("__pycache__/", "*.pyc")
START_HINT = ("start a head with 'ray start --head --dashboard-host=0.0.0.0' (port 8265), or "
              "check the address: it is the dashboard's, http://HEAD:8265")


def dashboard_url(address: str) -> str:
    """The job API's URL for ``address``: a bare ``host:port`` means http; the head's GCS
    (``HEAD:6379``) or Ray client (``ray://HEAD:10001``) address, as a task run takes it,
    means the dashboard on the same host at Ray's default port (8265)."""
    from urllib.parse import urlsplit

    address = address.strip()
    if not address:
        raise HscaleError("the Ray address is empty", START_HINT)
    if address in ("auto", "local"):
        raise HscaleError(f"jobs go to a cluster's dashboard, not to {address!r}",
                          "give http://HEAD:8265 (the head's dashboard port)")
    client = address.startswith("ray://")
    if "://" in address and not client:
        return address
    bare = address[len("ray://"):] if client else address
    try:
        parts = urlsplit(f"//{bare}")
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host:
        raise HscaleError(f"{address} is not a Ray address", START_HINT)
    if client or port in (GCS_PORT, CLIENT_PORT):
        return f"http://{host}:{DASHBOARD_PORT}"
    return f"http://{bare}"


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
    """The ``hscale`` package folder, shipped with every job and task (the cluster may hold
    no hscale), and the harness-space plugins this process planned with
    (hscale.harness._spaces.stage_plugins: a node without their files loads them from it).
    An installed wheel has hscale whole; a source checkout's subpackages sit in folders of
    their own (setuptools maps them), so they are staged once into one ``hscale/`` folder,
    named by the content's hash, that Ray uploads as the package."""
    import importlib

    import hscale
    from hscale.harness import stage_plugins

    plugins = stage_plugins()
    extra = [str(plugins)] if plugins is not None else []
    root = Path(hscale.__file__).parent
    folders = {name: Path(importlib.import_module(f"hscale.{name}").__file__ or "").parent
               for name in HSCALE_PACKAGES}
    if all(folder == root / name for name, folder in folders.items()):
        return [str(root), *extra]
    return [str(_staged(root, folders)), *extra]


def _staged(root: Path, folders: Mapping[str, Path]) -> Path:
    """``<tmp>/hscale-modules-<hash>/hscale``: ``root`` with each subpackage folder inside."""
    files = [(f"{name}/{path.relative_to(folder)}", path)
             for name, folder in (("", root), *folders.items())
             for path in sorted(folder.rglob("*"))
             if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"]
    digest = hash_files(files)
    staged = Path(tempfile.gettempdir()) / f"hscale-modules-{digest[:16]}" / "hscale"
    if staged.is_dir():
        return staged
    work = staged.parent.with_name(staged.parent.name + f".{os.getpid()}")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(root, work / "hscale", ignore=ignore)
    for name, folder in folders.items():
        shutil.copytree(folder, work / "hscale" / name, ignore=ignore)
    try:
        work.rename(staged.parent)
    except OSError:  # another process staged the same content first
        shutil.rmtree(work, ignore_errors=True)
    return staged


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
    ``on_poll`` hears the state at every look and, between looks, every second (so a stop it
    raises is heard at once, not an interval later).
    """
    written, failures, state = -1, 0, "PENDING"

    def wait() -> None:
        end = time.monotonic() + interval
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(1.0, left))
            if on_poll is not None and left > 1.0:
                on_poll(state)

    while True:
        try:
            state = str(client.get_job_status(job_id).value)
            logs = client.get_job_logs(job_id)  # after the state: complete once it is final
        except (ConnectionError, RuntimeError, OSError):
            failures += 1
            if failures > retries:
                raise
            wait()
            continue
        failures = 0
        if len(logs) != written:
            atomic_write_text(log_path, logs)
            written = len(logs)
        if on_poll is not None:
            on_poll(state)
        if state in TERMINAL:
            return state
        wait()


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


# ---------------------------------------------------------------------------- one run's job


class RayJobs:
    """The driver's side of runs as Ray jobs (a backend whose ``ray`` is ``"job"``): each
    run's job is recorded before it is submitted, so a re-run re-attaches to a job still
    pending, running or finished, and follows it to the end with its logs kept."""

    def __init__(self, address: str, interval: float = POLL_SECONDS) -> None:
        self.address = address
        self.interval = interval
        self.client: Any = None

    def start(self) -> None:
        """Connect to the cluster's job API (one line when nobody answers)."""
        self.client = connect(self.address)

    def run(self, run_dir: Path, manifest: Any, work: RayJob,
            progress: Callable[[int, int], None] | None = None) -> str:
        """Submit (or re-attach to) the run's job and follow it; its id. ``progress`` hears
        (0, steps) at every look, so an exception it raises (a stop) ends the following,
        not the job: a re-run re-attaches."""
        job_id, fresh = self._job_to_follow(work, manifest)
        if fresh:
            atomic_write_text(work.record, json.dumps(
                {"job_id": job_id, "address": self.address, "manifest_hash": manifest.hash,
                 "submitted_at": _now()}, indent=2) + "\n")
            submit(self.client, work.entrypoint, work.working_dir, submission_id=job_id,
                   env_vars=work.env_vars, py_modules=hscale_py_modules(),
                   excludes=work.excludes,
                   metadata={"hscale_run": str(run_dir), "manifest": manifest.hash})
        steps = manifest.budget.steps
        state = follow(self.client, job_id, work.log, interval=self.interval,
                       on_poll=(lambda _: progress(0, steps)) if progress else None)
        if state != "SUCCEEDED":
            why = job_message(self.client, job_id) or last_line(work.log)
            raise RuntimeError(f"Ray job {job_id} ended {state}: {why} (see {work.log})")
        return job_id

    def _job_to_follow(self, work: RayJob, manifest: Any) -> tuple[str, bool]:
        """(job id, submit it?): the recorded job if it is pending, running or succeeded;
        the recorded id again if it never reached the cluster; else a fresh id."""
        record = recorded_job(work.record)
        if (record.get("job_id") and record.get("address") == self.address
                and record.get("manifest_hash") == manifest.hash):
            state = job_state(self.client, record["job_id"])
            if state is None:
                return record["job_id"], True
            if state in ("PENDING", "RUNNING", "SUCCEEDED"):
                return record["job_id"], False
        name = f"hscale-{manifest.experiment}-{manifest.arm}-{manifest.seed}"
        return f"{re.sub(r'[^A-Za-z0-9_.-]', '-', name)}-{uuid4().hex[:8]}", True


def recorded_job(path: Path) -> dict[str, Any]:
    """A run's job record (``{job_id, address, manifest_hash, submitted_at}``), or {}."""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def job_fields(path: Path) -> dict[str, Any]:
    """status.json fields of a run's job, once its record exists."""
    record = recorded_job(path)
    if not record.get("job_id"):
        return {}
    return {"ray_address": record.get("address"), "ray_job_id": record["job_id"]}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


