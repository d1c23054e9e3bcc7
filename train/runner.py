"""``hscale run``: plan, then run every arm x seed, resuming whatever is unfinished.

One runner per runs folder at a time (a lock file); each run's state is in its status.json,
so a crash or Ctrl-C loses nothing: completed runs are skipped, a partial run resumes.
"""

from __future__ import annotations

import fcntl
import json
from contextlib import contextmanager
from pathlib import Path

from design.errors import HscaleError
from train.backends import get_backend
from train.plan import plan
from train.status import RunState, read_status, write_status


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


def run_experiment(spec_path: str | Path, out: str | Path = "runs", backend: str = "local",
                   progress=None) -> dict[str, str]:
    """Run every planned run; returns run folder -> final state."""
    engine = get_backend(backend)
    planned = plan(spec_path, out)
    if not planned:
        return {}
    states: dict[str, str] = {}
    with runner_lock(planned[0].path.parent.parent):
        for item in planned:
            manifest = json.loads((item.path / "manifest.json").read_text())
            status = read_status(item.path)
            if (status.get("state") == RunState.COMPLETED.value
                    and status.get("manifest_hash") == manifest["hash"]):
                states[str(item.path)] = RunState.COMPLETED.value
                continue
            write_status(item.path, RunState.RUNNING, manifest["hash"], backend=engine.name)
            try:
                engine.run(item.path, manifest,
                           progress=(lambda d, t, p=item.path: progress(p, d, t))
                           if progress else None)
            except KeyboardInterrupt:
                write_status(item.path, RunState.INTERRUPTED, manifest["hash"])
                raise
            except Exception as exc:  # one failing run must not stop the others
                write_status(item.path, RunState.FAILED, manifest["hash"],
                             error=f"{type(exc).__name__}: {exc}")
                states[str(item.path)] = RunState.FAILED.value
                continue
            write_status(item.path, RunState.COMPLETED, manifest["hash"], backend=engine.name)
            states[str(item.path)] = RunState.COMPLETED.value
    return states
