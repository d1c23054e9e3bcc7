"""``hscale run``: plan, then run every arm x seed, resuming whatever is unfinished; and
``hscale run --dry-run``: plan, then export each run's inputs (no run, no state).

One runner per runs folder at a time (a lock file); each run's state is in its status.json,
so a crash or Ctrl-C loses nothing: completed runs are skipped, a partial run resumes.
Runs execute here or on a Ray cluster (an executor, hscale.train.ray_cluster). Here, with
``workers > 1``, runs go to that many worker processes (one torch thread each), which end
themselves if the runner dies, so a killed runner never leaves writers behind. On Ray, runs
are followed from threads of the runner, as many at once as the cluster takes.
"""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from contextlib import contextmanager
from pathlib import Path

from hscale.contracts import (
    Manifest,
    RunState,
    append_provenance,
    capture_provenance,
    read_status,
    write_status,
)
from hscale.errors import HscaleError, HscaleWarning
from hscale.harness import require_installed
from hscale.train.backends import Backend, Progress, StepProgress, get_backend
from hscale.train.planning import Planned, plan_runs, write_plan
from hscale.train.ray_cluster import RayExecutor


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


def run_one(run_dir: Path, manifest: Manifest, backend: Backend,
            progress: Progress | None = None, executor: RayExecutor | None = None) -> str:
    """Run one planned run to a final state, here or on the ``executor``'s cluster; the only
    writer of its status.json.

    Each progress report also refreshes status.json when the executor's ``status_fields``
    changed (e.g. a Ray job id the moment the job exists). As the run starts or resumes, its
    provenance.jsonl gains a line saying what runs it (:func:`note_provenance`)."""
    name = run_name(run_dir)
    fields: dict = {}
    event = "resume" if _resumes(run_dir, manifest) else "start"

    def where() -> dict:
        return executor.status_fields(run_dir) if executor is not None else {}

    def record(state: RunState, error: str = "") -> str:
        nonlocal fields
        fields = where()
        write_status(run_dir, state, manifest.hash, error=error, backend=backend.name,
                     **fields)
        return state.value

    def report(done: int, total: int) -> None:
        if where() != fields:
            record(RunState.RUNNING)
        if progress is not None:
            progress(name, done, total)

    record(RunState.RUNNING)
    try:
        note_provenance(run_dir, manifest, backend, event, executor)
        _work(run_dir, manifest, backend, executor, report)
    except KeyboardInterrupt:
        record(RunState.INTERRUPTED)
        raise
    except Exception as exc:  # one failing run must not stop the others
        return record(RunState.FAILED, error=f"{type(exc).__name__}: {exc}")
    return record(RunState.COMPLETED)


def _resumes(run_dir: Path, manifest: Manifest) -> bool:
    """Whether the run picks up where a killed or interrupted start of this manifest left."""
    status = read_status(run_dir)
    return status.manifest_hash == manifest.hash and status.state in (RunState.RUNNING,
                                                                       RunState.INTERRUPTED)


def note_provenance(run_dir: Path, manifest: Manifest, backend: Backend, event: str,
                    executor: RayExecutor | None = None, **more: object) -> None:
    """Append what this process is (hscale's revision, the packages, the backend and its
    settings, ``more`` of them, the hardware, the command line) to the run's
    provenance.jsonl; on a Ray cluster the task adds its node's line as it starts."""
    settings = {**backend.settings(), **more}
    if executor is not None:
        settings["ray_address"] = executor.address
    append_provenance(run_dir, capture_provenance(event, manifest_hash=manifest.hash,
                                                  backend=backend.name, settings=settings))


def _work(run_dir: Path, manifest: Manifest, backend: Backend, executor: RayExecutor | None,
          report: StepProgress) -> None:
    if executor is None:
        backend.run(run_dir, manifest, report)
    else:
        executor.run(backend, run_dir, manifest, report)


def _finished(run: Planned, backend: Backend, warn: bool = True) -> bool:
    """COMPLETED for this manifest, with result files that hold it (else it is redone, and a
    warning says why); a run another backend completed is refused, not redone: its results
    would be overwritten by another kind of run."""
    status = read_status(run.path)
    if not status.is_done(run.manifest):
        return False
    if status.backend and status.backend != backend.name:
        raise HscaleError(f"{run.path} was completed by the {status.backend} backend, not "
                          f"{backend.name}", "run into another --out folder, or delete the "
                          "run folder to redo it")
    problems = backend.verify(run.path, run.manifest)
    if problems and warn:
        warnings.warn(f"{run.path}: marked COMPLETED, but {problems[0]}: running it again",
                      HscaleWarning, stacklevel=2)
    return not problems


def run_experiment(spec_path: str | Path, out: str | Path = "runs",
                   backend: str | Backend = "local", progress: Progress | None = None,
                   workers: int = 1, quick: bool = False,
                   on_start: Callable[[Path], None] | None = None, force: bool = False,
                   ray_address: str | None = None,
                   stage: dict[str, int] | None = None) -> dict[str, str]:
    """Run every planned run; returns run folder -> final state. ``backend`` is a name or a
    configured backend; with ``workers > 1`` runs go to that many worker processes; with
    ``ray_address`` they go to that Ray cluster instead; ``on_start`` hears of each run as
    it starts; ``stage``: a staged study's seeds each growing arm has reached."""
    backend = get_backend(backend) if isinstance(backend, str) else backend
    executor = RayExecutor(ray_address) if ray_address is not None else None
    if executor is not None:
        executor.check(backend)  # a bad address or a backend Ray cannot run: the plainest
    here = min(workers, backend.max_workers or workers)  # worker processes on this machine
    if executor is None and here > 1:
        _context(backend, start=True)  # its imports overlap the planning below
    planned = plan_runs(spec_path, out, force=force, quick=quick, stage=stage)
    todo = [run for run in planned if not (run.state == "unchanged" and _finished(run, backend))]
    manifests = [run.manifest for run in todo]
    backend.check(manifests)  # before anything is written
    if executor is None:  # a cluster's nodes install their own
        require_installed(h for m in manifests for hs in (m.train_harnesses,
                                                           *m.eval_sets.values()) for h in hs)
    backend.prepare(manifests, progress, on_ray=executor is not None)
    slots = executor.start(backend, manifests) if executor is not None else None
    with runner_lock(planned[0].path.parent.parent):
        # another runner may have finished runs while this one prepared
        todo = [run for run in todo
                if not (run.state == "unchanged" and _finished(run, backend, warn=False))]
        pending = {run.path for run in todo}
        states = {str(run.path): RunState.COMPLETED.value for run in planned
                  if run.path not in pending}
        write_plan(planned)
        if executor is not None:
            states.update(_run_threads(todo, backend, executor, slots or workers, progress,
                                       on_start))
            return states
        if here <= 1 or len(todo) <= 1:
            for run in todo:
                if on_start is not None:
                    on_start(run.path)
                states[str(run.path)] = run_one(run.path, run.manifest, backend, progress)
        else:
            states.update(_run_parallel(todo, backend, progress, here, on_start))
    return states


def export_experiment(spec_path: str | Path, out: str | Path = "runs",
                      backend: str | Backend = "verl", quick: bool = False,
                      force: bool = False, on_export: Callable[[Path], None] | None = None
                      ) -> list[Path]:
    """Plan, then write each run's inputs to run elsewhere (``Backend.export``); the files
    that start them. Nothing runs and no state changes, so an error is the user's as it is
    (nothing failed); exporting again writes the same inputs."""
    backend = get_backend(backend) if isinstance(backend, str) else backend
    if type(backend).export is Backend.export:  # refused before anything is planned
        raise HscaleError(f"the {backend.name} backend has nothing to export",
                          "drop --dry-run (the verl backend exports veRL inputs)")
    planned = plan_runs(spec_path, out, force=force, quick=quick)
    backend.check([run.manifest for run in planned])  # before anything is written
    written = []
    with runner_lock(planned[0].path.parent.parent):
        write_plan(planned)
        for run in planned:
            written.append(backend.export(run.path, run.manifest))
            note_provenance(run.path, run.manifest, backend, "export",
                            inputs=os.path.relpath(written[-1], run.path))
            if on_export is not None:
                on_export(written[-1])
    return written


def _run_parallel(todo: list[Planned], backend: Backend, progress: Progress | None,
                  workers: int, on_start: Callable[[Path], None] | None) -> dict[str, str]:
    """Runs in a pool of worker processes; on Ctrl-C (or any error) the workers are ended at
    once: their runs stay RUNNING on disk, which the next run treats as resumable."""
    context = _context(backend)
    updates = context.Queue()
    alive, runner = context.Pipe(duplex=False)  # the workers' watch on this process
    pool = context.Pool(min(workers, len(todo)), initializer=_worker_init,
                        initargs=(alive, updates, dict(os.environ), os.getcwd(), sys.path,
                                  sys.argv))
    states: dict[str, str] = {}
    try:
        pending = {str(run.path): pool.apply_async(_worker_run, (run.path, run.manifest, backend))
                   for run in todo}
        while pending:
            time.sleep(0.2)
            _drain(updates, progress, on_start)
            for name in [n for n, result in pending.items() if result.ready()]:
                states[name] = pending.pop(name).get()
        _drain(updates, progress, on_start)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
        updates.close()
        runner.close()
    return states


def _run_threads(todo: list[Planned], backend: Backend, executor: RayExecutor, slots: int,
                 progress: Progress | None, on_start: Callable[[Path], None] | None
                 ) -> dict[str, str]:
    """Runs on the executor's cluster, followed from ``slots`` threads. On Ctrl-C the next
    progress report of each started run raises KeyboardInterrupt in its thread (the executor
    reports at least every few seconds), so its work is stopped and the run is recorded
    INTERRUPTED, as in a serial run; runs not started stay as they were."""
    stop = threading.Event()

    def one(run: Planned) -> str | None:
        if stop.is_set():
            return None
        if on_start is not None:
            on_start(run.path)

        def report(name: str, done: int, total: int) -> None:
            if stop.is_set():
                raise KeyboardInterrupt
            if progress is not None:
                progress(name, done, total)

        return run_one(run.path, run.manifest, backend, report, executor)

    states: dict[str, str] = {}
    if not todo:
        return states
    pool = ThreadPoolExecutor(min(len(todo), max(1, slots)), thread_name_prefix="hscale-run")
    try:
        pending = {pool.submit(one, run): str(run.path) for run in todo}
        while pending:
            done, _ = wait_futures(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                states[pending.pop(future)] = future.result()
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return states


def _drain(updates, progress: Progress | None, on_start: Callable[[Path], None] | None
           ) -> None:
    """Read every queued update (always: a worker cannot exit while its queue is unread):
    ``("start", path)`` as a worker takes a run up, ``("progress", name, done, total)``."""
    while True:
        try:
            kind, *update = updates.get_nowait()
        except queue.Empty:
            return
        if kind == "start" and on_start is not None:
            on_start(*update)
        elif kind == "progress" and progress is not None:
            progress(*update)


_updates = None  # a worker's progress queue (set by _worker_init)


def _context(backend: Backend, start: bool = False):
    """Workers forked from a server that imported the backend's ``preload`` once (where the
    platform has one: a worker then starts in milliseconds, not the seconds torch and veRL
    take to import), else spawned; ``start``: the server now, not at the first worker.
    Never forked from the runner itself, whose torch may already hold threads."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(backend.preload))
    if start:
        from multiprocessing import forkserver

        forkserver.ensure_running()
    return context


def _worker_init(runner, updates, environ: dict[str, str], cwd: str, path: list[str],
                 argv: list[str]) -> None:
    """The runner's environment, folder, import path and command line (its runs'
    provenance) as they are now (a fork server keeps those of the moment it started); one
    torch thread per worker; Ctrl-C is the runner's to handle; exit as soon as the runner
    process is gone: ``runner`` is the read end of a pipe only the runner writes to, which
    the kernel closes when the runner dies however it dies (a forked worker's parent is the
    fork server, not the runner)."""
    global _updates
    _updates = updates
    os.environ.clear()
    os.environ.update(environ)
    os.chdir(cwd)
    sys.path[:] = path
    sys.argv[:] = argv
    os.environ["OMP_NUM_THREADS"] = "1"
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        with contextlib.suppress(EOFError, OSError):
            runner.recv()  # nothing is ever sent: this returns when the runner has gone
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _worker_run(run_dir: Path, manifest: Manifest, backend: Backend) -> str:
    _updates.put(("start", run_dir))
    return run_one(run_dir, manifest, backend,
                   lambda name, done, total: _updates.put(("progress", name, done, total)))
