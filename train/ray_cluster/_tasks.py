"""Runs as Ray tasks: how a backend whose ``ray`` is ``"task"`` (the local backend's embedded
trainer) runs on a cluster.

The runner stays the driver: it decides what runs and writes every status.json; each run is
one Ray task (one CPU) that calls the backend's function (a :class:`RayTask`) on its run
folder. The folder is used in place when the task's node sees it (a marker file the driver
writes there holds a token the task must read back: a shared filesystem, or the driver's own
node); otherwise the task works in a temporary copy, sends the result files after every step
(so the driver's folder stays resumable if the task dies) and returns them at the end; the
driver writes them atomically. Tasks report through a small actor (the mailbox), because Ray
Client has no streaming tasks.

A task that dies is not retried by Ray: its run fails, and the next ``hscale run`` resumes it
from the checkpoint and rows the folder holds, like a run whose local process was killed.

Ray is imported lazily: ``hscale --help`` must not pay for it.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import socket
import tempfile
import threading
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import uuid4

from hscale.contracts import (
    EVAL,
    PROVENANCE,
    STATUS,
    TRAIN,
    Manifest,
    append_provenance,
    capture_provenance,
)
from hscale.errors import HscaleError
from hscale.files import atomic_write_bytes, atomic_write_text
from hscale.train.backends import RayTask, StepProgress

MARKER = ".hscale-ray"  # in a run folder while its task runs: the token the task must see
CHECKPOINT = "checkpoint.pt"  # hscale.train.embedded._trainer's (not imported: it imports torch)
RESULTS = (PROVENANCE, TRAIN, EVAL, "metrics.jsonl", CHECKPOINT)  # written back in this order
GCS_PORT, CLIENT_PORT, DASHBOARD_PORT = 6379, 10001, 8265  # Ray's defaults
HEAD_RESOURCE = "node:__internal_head__"  # the mailbox lives on the head: it outlives nodes
POLL_SECONDS = 0.5  # between two looks at a task; also how soon a stop is heard
STOP_SECONDS = 15.0  # to wait for a cancelled task to be gone
ADDRESS_HINT = ("give HEAD:6379 (the port of 'ray start --head') on a node of the cluster, "
                "ray://HEAD:10001 (the Ray client) from elsewhere, or auto")

Report = Callable[[dict[str, Any]], None]


# ---------------------------------------------------------------------------- the address


def driver_address(address: str) -> str:
    """What ``ray.init`` gets for ``address``: ``auto``, ``local``, ``ray://HOST:PORT`` and
    ``HOST:PORT`` (a GCS) as they are; a dashboard URL (``http://HEAD:8265``, or a bare
    ``HEAD:8265``) becomes the head's GCS (or its Ray client) at Ray's default port. An
    address nobody answers at is refused here, at once: ``ray.init`` would wait for minutes."""
    address = address.strip()
    if not address:
        raise HscaleError("the Ray address is empty", ADDRESS_HINT)
    if address == "local":
        return address
    if address == "auto":
        found = _auto_address()
        if found == "":
            raise HscaleError("no Ray cluster for auto (RAY_ADDRESS is unset and none was "
                              "started on this machine)", ADDRESS_HINT)
        if found is not None:
            _check(address, found)
        return address
    if address.startswith("ray://"):
        _check(address, address[len("ray://"):], CLIENT_PORT)
        return address
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        port = parts.port
    except ValueError:
        raise HscaleError(f"{address} is not a Ray address", ADDRESS_HINT) from None
    if not parts.hostname:
        raise HscaleError(f"{address} is not a Ray address", ADDRESS_HINT)
    if "://" not in address and port != DASHBOARD_PORT:
        _check(address, address, GCS_PORT)
        return address if port else f"{address}:{GCS_PORT}"
    host = parts.hostname
    if _reachable(host, GCS_PORT):
        return f"{host}:{GCS_PORT}"
    if _reachable(host, CLIENT_PORT):
        return f"ray://{host}:{CLIENT_PORT}"
    raise HscaleError(f"{address} is a dashboard, and nothing answers at Ray's default GCS "
                      f"({host}:{GCS_PORT}) or client ({host}:{CLIENT_PORT}) ports there",
                      f"local runs need the head's GCS: give --ray-address {host}:PORT (the "
                      f"port of 'ray start --head') or ray://{host}:{CLIENT_PORT}; "
                      "--backend verl is the one that takes the dashboard's URL")


def _auto_address() -> str | None:
    """The GCS ``auto`` means (RAY_ADDRESS, else the last cluster started here); None when
    Ray's private helper moved (ray.init finds it then)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address
    except ImportError:
        return None
    try:
        return canonicalize_bootstrap_address("auto") or ""
    except ConnectionError:  # no cluster recorded here
        return ""


def _check(address: str, where: str, default_port: int = GCS_PORT) -> None:
    """Refuse ``address`` at once when nothing answers at ``where`` (HOST[:PORT])."""
    host, _, port = where.rpartition(":")
    if not host or not port.isdigit():
        host, port = where, str(default_port)
    if not host or not _reachable(host.strip("[]"), int(port)):
        raise HscaleError(f"no Ray cluster at {address} (nothing answers at "
                          f"{host or 'any address'}:{port})", ADDRESS_HINT)


def _reachable(host: str, port: int, timeout: float = 3.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


_connected: str | None = None  # the address this process's Ray driver is connected to


def connect(address: str) -> None:
    """Connect this process to the cluster as a Ray driver (again only for another address),
    shipping hscale's packages so the tasks run the code that planned the runs."""
    global _connected
    target = driver_address(address)
    import ray

    from hscale.train.ray_cluster._jobs import DEFAULT_EXCLUDES, hscale_py_modules

    if ray.is_initialized():
        if _connected == target:
            return
        ray.shutdown()
    try:
        ray.init(address=target, log_to_driver=False, logging_level=logging.WARNING,
                 runtime_env={"py_modules": hscale_py_modules(),
                              "excludes": list(DEFAULT_EXCLUDES)})
    except Exception as exc:  # ConnectionError, RuntimeError, ValueError: no usable cluster
        raise HscaleError(f"cannot join the Ray cluster at {address} ({_first_line(exc)})",
                          ADDRESS_HINT) from None
    _connected = target


# ------------------------------------------------------------------------------ the task


def execute(run_dir: str, manifest: Manifest, token: str, work: RayTask,
            fetch_inputs: Callable[[], dict], fetch_models: Callable[[], dict[str, bytes]],
            report: Report) -> dict[str, bytes] | None:
    """A task's work: the base models installed on this node if it lacks them; then the
    work's function on the run folder when this node sees it (None is returned: the files
    are in place), else on a temporary copy of ``fetch_inputs()``, whose result files are
    returned (and sent with every step's report). ``report`` hears ``{folder}`` as the work
    starts, then ``{step, total[, files]}`` at every step the function reports."""
    if work.models:
        from hscale.train.policy import available, base_model_path

        missing = [name for name in work.models if available(name) is None]
        if missing:
            models = fetch_models()
            for name in missing:
                atomic_write_bytes(base_model_path(name), models[name])
    folder = Path(run_dir)
    if sees(folder, token):
        _call(work, folder, manifest, report, copied=False)
        return None
    with tempfile.TemporaryDirectory(prefix="hscale-run-") as tmp:
        copy = Path(tmp)
        for name, data in fetch_inputs().items():
            (copy / name).write_bytes(data)
        _call(work, copy, manifest, report, copied=True)
        return result_files(copy)


def _call(work: RayTask, folder: Path, manifest: Manifest, report: Report, copied: bool
          ) -> None:
    module, _, attribute = work.function.partition(":")
    function = getattr(importlib.import_module(module), attribute)
    report({"folder": "copied" if copied else "shared"})
    # the node's own line in provenance.jsonl: its packages and hardware, not the runner's
    append_provenance(folder, capture_provenance("ray-task", manifest_hash=manifest.hash,
                                                 settings={"folder": "copied" if copied
                                                           else "shared"}))

    def progress(done: int, total: int) -> None:
        report({"step": done, "total": total, **({"files": result_files(folder)} if copied
                                                 else {})})

    function(folder, manifest, progress)


def sees(folder: Path, token: str) -> bool:
    """Whether this node sees the driver's run folder: its marker holds this run's token."""
    try:
        return (folder / MARKER).read_text() == token
    except OSError:
        return False


def folder_files(run_dir: Path) -> dict[str, bytes]:
    """What a task needs of a run folder it cannot see: its plain files (manifest, schedule,
    rows and checkpoint to resume from), less status.json and hidden files."""
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir())
            if p.is_file() and not p.name.startswith(".") and p.name != STATUS}


def result_files(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in RESULTS if (folder / name).is_file()}


def write_back(run_dir: Path, files: dict[str, bytes]) -> None:
    """Result files into the run folder, each atomically, the checkpoint last (as the trainer
    saves them: rows past a checkpoint are trimmed on resume, missing rows are not)."""
    for name in RESULTS:
        if name in files:
            atomic_write_bytes(run_dir / name, files[name])


class Mailbox:
    """Tasks' reports, kept per run until the driver takes them (a Ray actor on the head);
    only a run's latest result files are kept."""

    def __init__(self) -> None:
        self.boxes: dict[str, list[dict]] = {}

    def put(self, key: str, message: dict) -> None:
        box = self.boxes.setdefault(key, [])
        if "files" in message:
            for old in box:
                old.pop("files", None)
        box.append(message)

    def take(self, key: str) -> list[dict]:
        return self.boxes.pop(key, [])


def _task(run_dir: str, manifest: Manifest, token: str, work: RayTask, refs: dict,
          mailbox: Any, key: str) -> dict[str, bytes] | None:
    """The Ray task: ``execute`` with its inputs and base model fetched only if needed, and
    its reports (the first one saying where it runs) put in the mailbox."""
    import ray

    context = ray.get_runtime_context()
    where = {"ray_task_id": context.get_task_id(), "ray_node_id": context.get_node_id(),
             "ray_pid": os.getpid()}

    def report(message: dict) -> None:
        if "folder" in message:
            message = {**message, **where}
        with contextlib.suppress(Exception):  # reports inform; the result is the return value
            ray.get(mailbox.put.remote(key, message))

    return execute(run_dir, manifest, token, work, lambda: ray.get(refs["inputs"]),
                   lambda: {name: ray.get(ref) for name, ref in refs["models"].items()},
                   report)


@cache
def _remote() -> tuple[Any, Any]:
    """The task (one CPU, never retried: the runner decides what runs again) and the
    mailbox as Ray remotes."""
    import ray

    return ray.remote(num_cpus=1, max_retries=0)(_task), ray.remote(num_cpus=0)(Mailbox)


# ---------------------------------------------------------------------------- the driver


class RayTasks:
    """The driver's side: one connection, one mailbox, base models in the object store
    (each put once, when a task first needs it); ``run`` follows one run's task to its end
    (threads may run several at once)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.models: dict[str, Any] = {}
        self.mailbox: Any = None
        self.fields: dict[Path, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def start(self) -> int:
        """Connect and start the mailbox; the cluster's CPUs."""
        connect(self.address)
        import ray

        resources = ray.cluster_resources()
        head = {HEAD_RESOURCE: 0.001} if HEAD_RESOURCE in resources else {}
        self.mailbox = _remote()[1].options(resources=head).remote()
        return max(1, int(resources.get("CPU", 1)))

    def _shared(self, names: Iterable[str]) -> dict[str, Any]:
        """Object refs of the base models ``names`` (put on first use)."""
        import ray

        from hscale.train.policy import available

        with self._lock:
            for name in names:
                if name not in self.models:
                    self.models[name] = ray.put(Path(available(name)).read_bytes())
            return {name: self.models[name] for name in names}

    def status_fields(self, run_dir: Path) -> dict[str, Any]:
        return dict(self.fields.get(Path(run_dir).resolve(), {}))

    def run(self, run_dir: Path, manifest: Manifest, work: RayTask,
            progress: StepProgress | None = None) -> None:
        """Run ``work`` as a task and follow it; ``progress`` is called at every look, so
        an exception it raises (a stop) cancels the task. A task that died or was stopped
        leaves the folder resumable."""
        import ray

        run_dir = Path(run_dir).resolve()
        token = uuid4().hex
        key = f"{run_dir}#{token}"
        fields = self.fields[run_dir] = {"ray_address": self.address}
        seen: dict[str, Any] = {"step": 0, "total": manifest.budget.steps, "files": None}
        ref = None
        try:
            atomic_write_text(run_dir / MARKER, token)
            refs = {"inputs": ray.put(folder_files(run_dir)),
                    "models": self._shared(work.models)}
            ref = _remote()[0].remote(str(run_dir), manifest, token, work, refs, self.mailbox,
                                      key)
            while not ray.wait([ref], timeout=POLL_SECONDS)[0]:
                self._take(key, seen, fields)
                _flush(run_dir, seen)
                if progress is not None:
                    progress(seen["step"], seen["total"])
            self._take(key, seen, fields)
            files = _result(ref)
        except BaseException:
            if ref is not None:
                _stop(ref)
                self._take(key, seen, fields)
                _flush(run_dir, seen)
            raise
        finally:
            (run_dir / MARKER).unlink(missing_ok=True)
        if files is not None:  # the final files: any step's files reported before are older
            write_back(run_dir, files)

    def _take(self, key: str, seen: dict, fields: dict) -> None:
        """Read the run's reports: where its task runs, its step, its latest files."""
        import ray

        for message in ray.get(self.mailbox.take.remote(key)):
            fields.update({k: v for k, v in message.items() if k.startswith("ray_")})
            if "folder" in message:
                fields["ray_folder"] = message["folder"]
            seen.update({k: message[k] for k in ("step", "total", "files") if k in message})


def _flush(run_dir: Path, seen: dict) -> None:
    """Write the latest step's files a task sent (a task on a node without the folder)."""
    if seen["files"] is not None:
        write_back(run_dir, seen["files"])
        seen["files"] = None


def _result(ref: Any) -> dict[str, bytes] | None:
    """The task's return value; its own error as it was raised, or one line saying the task
    died (the run resumes when run again)."""
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, Exception):
            raise cause from None
        raise RuntimeError(_first_line(exc)) from None
    except ray.exceptions.RayError as exc:
        raise RuntimeError(f"its Ray task ended before the run did ({type(exc).__name__}: "
                           f"{_first_line(exc)}); run again to resume it from its last "
                           "checkpoint") from None


def _stop(ref: Any) -> None:
    """Cancel the task (its worker is killed: files are written atomically) and wait a while
    for it to be gone, so no task writes into the folder after the runner let go of it."""
    import ray

    with contextlib.suppress(Exception):
        ray.cancel(ref, force=True)
    with contextlib.suppress(Exception):
        ray.wait([ref], timeout=STOP_SECONDS)


def _first_line(exc: object) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__
