"""``hscale rerun``: a finished run run again from its manifest into a scratch folder, with
the backend and settings that made it, and compared with what its folder holds
(hscale.train.running._compare): the check that a run can be reproduced, not only what it
should do (its manifest) and what did it (its provenance.jsonl).

The embedded trainer and the scripted backend promise identical rows; veRL (on GPUs) does
not, so its runs are compared by Pass@1, and the result says so.
"""

from __future__ import annotations

import inspect
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hscale.contracts import (
    MANIFEST,
    SCHEDULE,
    Manifest,
    Provenance,
    RunState,
    read_provenance,
    read_status,
)
from hscale.errors import HscaleError
from hscale.harness import require_installed
from hscale.train.backends import BACKENDS, Backend, Progress, get_backend
from hscale.train.planning import Schedule
from hscale.train.running._compare import (
    CHECKPOINT,
    TABLES,
    Difference,
    PassCheck,
    compare_checkpoints,
    compare_pass1,
    compare_tables,
)
from hscale.train.running._runner import run_name, run_one

IDENTICAL = ("local", "scripted")  # backends whose runs are bitwise reproducible here
PROVENANCE_WORK = ("start", "resume")


@dataclass
class Rerun:
    """One run run again: where, how long it took, and what differs (``identical``: the rows
    were compared one for one; else ``pass1`` is the statistical check)."""

    run: Path
    scratch: Path
    backend: str
    seconds: float = 0.0
    identical: bool = True
    state: str = ""
    error: str = ""
    differences: list[Difference] = field(default_factory=list)
    pass1: PassCheck | None = None
    then: Provenance | None = None  # what made the run
    now: Provenance | None = None  # what made the rerun

    @property
    def ok(self) -> bool:
        if self.state != RunState.COMPLETED.value or self.differences:
            return False
        return self.identical or (self.pass1 is not None and self.pass1.within)

    def lines(self) -> list[str]:
        """What ``hscale rerun`` prints of it: a line, then each difference."""
        name = run_name(self.run)
        took = f"rerun in {self.seconds:.1f} s"
        if self.state != RunState.COMPLETED.value:
            return [f"{name}: the rerun ended {self.state or 'unstarted'}"
                    + (f": {self.error}" if self.error else "") + f" ({took})"]
        if self.identical:
            head = (f"{name}: identical rows ({', '.join(self._compared())}; wall-clock "
                    f"columns left out), {took}" if self.ok else
                    f"{name}: differs from its rerun ({took}, {self.backend} backend, "
                    "rows compared one for one):")
        else:
            said = self.pass1.line() if self.pass1 is not None else "no Pass@1 to compare"
            head = (f"{name}: {self.backend} does not promise identical rows, so the rerun is "
                    f"compared statistically: {said}; {took}")
        lines = [head, *(f"  {d.line()}" for d in self.differences)]
        if self.then is not None and self.now is not None and \
                self.then.shaping() != self.now.shaping():
            lines.append(f"  the run was made by {self.then.line()}; the rerun by "
                         f"{self.now.line()}")
        return lines

    def _compared(self) -> list[str]:
        return [n for n in (*TABLES, CHECKPOINT) if (self.run / n).is_file()]


def finished_runs(path: Path) -> list[Path]:
    """The completed run folders at ``path``: a run's, an experiment's or a runs folder."""
    if not path.is_dir():
        raise HscaleError(f"{path}: no such folder", "give a run folder (runs/demo/k1/0), an "
                          "experiment's or a runs folder")
    if (path / MANIFEST).is_file():
        folders = [path]
    else:
        folders = sorted({p.parent for depth in ("*/*", "*/*/*")
                          for p in path.glob(f"{depth}/{MANIFEST}")})
        folders = [f for f in folders if "report" not in f.relative_to(path).parts]
    done = [f for f in folders if read_status(f).state is RunState.COMPLETED]
    if folders == [path] and not done:
        raise HscaleError(f"{path}: not a completed run (it is "
                          f"{read_status(path).state.value})", "rerun completed runs only: "
                          "hscale run finishes it first")
    if not done:
        raise HscaleError(f"{path}: no completed run under it" + (
            f" ({len(folders)} runs, none COMPLETED)" if folders else ""),
            "run it first (hscale run SPEC), then rerun what finished")
    return done


def sample_runs(runs: list[Path], n: int | None, seed: int = 0) -> list[Path]:
    """``n`` of the runs drawn at random (the same for the same seed), all when n is None."""
    if n is None or n >= len(runs):
        return runs
    return sorted(random.Random(seed).sample(runs, n))


def rerun(run_dir: Path, scratch: Path | None = None, progress: Progress | None = None,
          backend: Backend | None = None) -> Rerun:
    """Run ``run_dir`` again from its manifest into ``scratch/<experiment>/<arm>/<seed>``
    (a temporary folder, removed unless they differ, when None), with the backend its
    status.json names and the settings its provenance records, and compare."""
    run_dir = Path(run_dir)
    manifest = Manifest.read(run_dir)
    status = read_status(run_dir)
    if not status.is_done(manifest):
        raise HscaleError(f"{run_dir}: not a completed run of its manifest (it is "
                          f"{status.state.value})", "rerun completed runs only: hscale run "
                          "finishes it first")
    then = _made_by(run_dir, manifest)
    backend = backend or _backend_of(status.backend or manifest.backend, then)
    if scratch is not None:
        target = Path(scratch) / manifest.experiment / manifest.arm / str(manifest.seed)
        if target.exists() and (target.resolve() == run_dir.resolve() or any(target.iterdir())):
            raise HscaleError(f"{target}: already holds files", "give --out a new or empty "
                              "scratch folder (a rerun never writes over a run)")
    backend.check([manifest])  # before anything is written, as hscale run does
    require_installed(h for hs in (manifest.train_harnesses, *manifest.eval_sets.values())
                      for h in hs)
    root = Path(tempfile.mkdtemp(prefix="hscale-rerun-")) if scratch is None else Path(scratch)
    target = root / manifest.experiment / manifest.arm / str(manifest.seed)
    result = Rerun(run_dir, target, backend.name, identical=backend.name in IDENTICAL,
                   then=then)
    try:
        backend.prepare([manifest], progress)
        target.mkdir(parents=True, exist_ok=True)
        Schedule.for_manifest(manifest).write(target)
        manifest.write(target)
        began = time.monotonic()
        result.state = run_one(target, manifest, backend, progress)
        result.seconds = time.monotonic() - began
    except BaseException:
        if scratch is None:
            shutil.rmtree(root, ignore_errors=True)
        raise
    result.error = read_status(target).error
    now, _ = read_provenance(target)
    result.now = now[-1] if now else None
    if result.state == RunState.COMPLETED.value:
        _compare(result)
    if scratch is None and result.ok:
        shutil.rmtree(root, ignore_errors=True)
    return result


def _compare(result: Rerun) -> None:
    if result.identical:
        result.differences = compare_tables(result.run, result.scratch) + \
            compare_checkpoints(result.run, result.scratch)
        return
    result.differences = compare_tables(result.run, result.scratch, (SCHEDULE,))
    check = compare_pass1(result.run, result.scratch)
    if isinstance(check, Difference):
        result.differences.append(check)
    else:
        result.pass1 = check


def _made_by(run_dir: Path, manifest: Manifest) -> Provenance | None:
    """The last start or resume of this manifest that its provenance.jsonl records."""
    records, _ = read_provenance(run_dir)
    worked = [r for r in records if r.event in PROVENANCE_WORK
              and r.manifest_hash in ("", manifest.hash)]
    return worked[-1] if worked else None


def _backend_of(name: str, then: Provenance | None) -> Backend:
    """The backend ``name`` with the settings the run was made with (those its class takes:
    veRL's extra overrides, the scripted error rate)."""
    takes = set(inspect.signature(BACKENDS.get(name)).parameters)
    settings = {k: v for k, v in (then.settings if then is not None else {}).items()
                if k in takes}
    return get_backend(name, **settings)

