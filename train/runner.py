"""``hscale run``: plan, then run every arm x seed, resuming whatever is unfinished.

One runner per runs folder at a time (a lock file); each run's state is in its status.json,
so a crash or Ctrl-C loses nothing: completed runs are skipped, a partial run resumes.
With ``workers > 1`` runs go to that many worker processes (one torch thread each), which
end themselves if the runner dies, so a killed runner never leaves writers behind.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from hscale.errors import HscaleError
from train.backends import Backend, get_backend
from train.plan import plan
from train.status import RunState, read_status, write_status

Progress = Callable[[str, int, int], None]  # (name, done, total)


@contextmanager
def runner_lock(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / ".runner.lock", "w")  # noqa: SIM115 -- held for the whole run
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise HscaleError(f"another hscale runner is working in {folder}",
                          "wait for it to finish, or stop it first") from None
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def run_name(run_dir: Path) -> str:
    return f"{run_dir.parent.name}/{run_dir.name}"


def run_one(run_dir: Path, manifest: dict, backend: str | Backend,
            progress: Progress | None) -> str:
    """Run one planned run to a final state, recording it in status.json (with whatever
    the backend's ``status_fields`` adds, e.g. a Ray job id)."""
    engine = get_backend(backend) if isinstance(backend, str) else backend

    def record(state: RunState, **extra) -> str:
        fields = getattr(engine, "status_fields", None)
        write_status(run_dir, state, manifest["hash"], backend=engine.name, **extra,
                     **(fields(run_dir) if fields else {}))
        return state.value

    record(RunState.RUNNING)
    try:
        engine.run(run_dir, manifest,
                   progress=(lambda d, t: progress(run_name(run_dir), d, t))
                   if progress else None)
    except KeyboardInterrupt:
        record(RunState.INTERRUPTED)
        raise
    except Exception as exc:  # one failing run must not stop the others
        return record(RunState.FAILED, error=f"{type(exc).__name__}: {exc}")
    return record(RunState.COMPLETED)


def run_experiment(spec_path: str | Path, out: str | Path = "runs",
                   backend: str | Backend = "local", progress: Progress | None = None,
                   workers: int = 1, quick: bool = False,
                   on_start: Callable[[Path], None] | None = None) -> dict[str, str]:
    """Run every planned run; returns run folder -> final state. ``backend`` is a name or a
    configured backend (run in this process); ``on_start`` hears of each run it starts."""
    engine = get_backend(backend) if isinstance(backend, str) else backend
    planned = plan(spec_path, out, quick=quick)
    if not planned:
        return {}
    states: dict[str, str] = {}
    with runner_lock(planned[0].path.parent.parent):
        todo = []
        for item in planned:
            manifest = json.loads((item.path / "manifest.json").read_text())
            status = read_status(item.path)
            if (status.get("state") == RunState.COMPLETED.value
                    and status.get("manifest_hash") == manifest["hash"]):
                states[str(item.path)] = RunState.COMPLETED.value
            else:
                todo.append((item.path, manifest))
        if todo and hasattr(engine, "prepare"):
            engine.prepare([m for _, m in todo], progress)
        if workers <= 1 or len(todo) <= 1 or not isinstance(backend, str):
            for path, manifest in todo:
                if on_start is not None:
                    on_start(path)
                states[str(path)] = run_one(path, manifest, engine, progress)
        else:
            states.update(_run_parallel(todo, backend, progress, workers))
    return states


def _run_parallel(todo: list[tuple[Path, dict]], backend: str, progress: Progress | None,
                  workers: int) -> dict[str, str]:
    """Runs in a pool of spawned workers; on Ctrl-C (or any error) the workers are ended at
    once: their runs stay RUNNING on disk, which the next run treats as resumable."""
    context = multiprocessing.get_context("spawn")
    updates = context.Queue()
    pool = context.Pool(min(workers, len(todo)), initializer=_worker_init,
                        initargs=(os.getpid(), updates))
    states: dict[str, str] = {}
    try:
        pending = {str(path): pool.apply_async(_worker_run, (path, manifest, backend))
                   for path, manifest in todo}
        while pending:
            time.sleep(0.2)
            _drain(updates, progress)
            for name in [n for n, result in pending.items() if result.ready()]:
                states[name] = pending.pop(name).get()
        _drain(updates, progress)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
        updates.close()
    return states


def _drain(updates, progress: Progress | None) -> None:
    """Read every queued update (always: a worker cannot exit while its queue is unread)."""
    while True:
        try:
            update = updates.get_nowait()
        except queue.Empty:
            return
        if progress is not None:
            progress(*update)


_updates = None  # a worker's progress queue (set by _worker_init)


def _worker_init(parent: int, updates) -> None:
    """One torch thread per worker; Ctrl-C is the runner's to handle; exit as soon as the
    runner process is gone."""
    global _updates
    _updates = updates
    os.environ["OMP_NUM_THREADS"] = "1"
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _worker_run(run_dir: Path, manifest: dict, backend: str) -> str:
    return run_one(run_dir, manifest, backend,
                   lambda name, done, total: _updates.put((name, done, total)))
