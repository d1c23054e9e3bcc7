"""``hscale plan``: write runs/<exp>/<arm>/<seed>/{manifest.json, schedule.parquet}.

Planning is idempotent: an unchanged spec changes nothing on disk, and a change that would
alter an existing run's manifest is refused unless forced, so results are never orphaned.
Every manifest is built and checked before anything is written (:func:`plan_runs`), so a
caller (the runner, a backend's prerequisites) can refuse a plan that would not run.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass
from pathlib import Path

from hscale.contracts import MANIFEST, Manifest
from hscale.errors import HscaleError, HscaleWarning
from hscale.train.planning._manifest import (
    base_model_manifest,
    build_manifest,
    eval_sets,
    space_of,
    with_verl,
)
from hscale.train.planning._schedule import Schedule
from hscale.train.planning._sources import resolve_sources
from hscale.train.planning._workload import harness_of
from hscale.train.spec import load_spec
from hscale.train.spec import quick as quick_spec


@dataclass(frozen=True)
class Planned:
    path: Path
    manifest: Manifest
    state: str  # "written" | "unchanged" | "replaced"
    schedule: Schedule | None = None  # built when the run is to be written


def plan_runs(spec_path: str | Path, out: str | Path = "runs", force: bool = False,
              quick: bool = False) -> list[Planned]:
    """Every arm x seed of the spec, built and checked, nothing written; ``state`` says what
    :func:`write_plan` will do. ``quick`` plans the smoke-test scale of the spec
    (:func:`hscale.train.spec._quick.quick`)."""
    spec = load_spec(spec_path)
    if quick:
        spec = quick_spec(spec)
    space = space_of(spec)
    with _located(spec_path, ("evaluation",)):
        evals = eval_sets(spec, space)
    sources = resolve_sources(spec, spec_path)
    manifests = []
    for arm_name, arm in spec.resolved_arms().items():
        with _located(spec_path, spec.swept.get(arm_name, ("arms", arm_name)), arm_name):
            manifests += [build_manifest(spec, arm_name, arm, seed, space, evals, sources)
                          for seed in spec.seeds]
    if spec.evaluation.base_model:
        manifests += [base_model_manifest(spec, seed, space, evals, sources)
                      for seed in spec.seeds]
    manifests, notes = with_verl(spec, manifests)
    notes += _fit_notes(spec, manifests[0]) if manifests else []
    for note in notes:
        warnings.warn(f"{spec_path}: {note}", HscaleWarning, stacklevel=2)
    runs = []
    for manifest in manifests:
        run_dir = Path(out) / spec.name / manifest.arm / str(manifest.seed)
        previous = _existing_hash(run_dir)
        if previous not in (None, manifest.hash) and not force:
            raise HscaleError(f"{run_dir}: the spec now gives a different manifest than the "
                              "one already planned there",
                              "pass --force to replace it, or rename the experiment")
        if previous == manifest.hash:
            runs.append(Planned(run_dir, manifest, "unchanged"))
            continue
        with _located(spec_path, spec.swept.get(manifest.arm, ("arms", manifest.arm)),
                      manifest.arm):  # what cannot be scheduled names its arm
            schedule = Schedule.for_manifest(manifest)
        runs.append(Planned(run_dir, manifest, "replaced" if previous else "written", schedule))
    return runs


@contextlib.contextmanager
def _located(spec_path: str | Path, loc: tuple, arm: str | None = None):
    """A problem found while planning, located in the spec (file, line, the arm) as
    validation locates its own."""
    try:
        yield
    except HscaleError as exc:
        from hscale.yamlio import key_line, read_yaml

        _, tree = read_yaml(Path(spec_path), "experiment YAML")
        named = arm and not exc.message.startswith(f"arm {arm}")
        where = f"{spec_path}:{key_line(tree, loc) or 1}: " + (f"arm {arm}: " if named else "")
        raise HscaleError(where + exc.message, exc.hint) from None


def _fit_notes(spec, manifest: Manifest) -> list[str]:
    """Warnings on the data benchmarks' prompts that do not fit the model's context (or, for
    the embedded policy, its vocabulary); the builtin world fits by construction."""
    from hscale.harness import benchmark_of
    from hscale.train.planning._context_fit import context_fit

    if spec.backend == "scripted" or not manifest.train_harnesses:
        return []
    trained = manifest.benchmark
    sources = [("benchmark", trained, "train"),
               *((f"evaluation benchmark {b.column}", b, "eval")
                 for b in manifest.evaluation.sources(trained))]
    notes, seen = [], set()
    for what, record, split in sources:
        if record.path is None or (record.path, split) in seen:
            continue
        seen.add((record.path, split))
        tasks = benchmark_of(record).tasks(record.tasks, record.seed, split)
        fit = context_fit(spec.model, tasks, harness_of(manifest, manifest.train_harnesses[0]))
        notes += fit.notes(f"{what} ({split})") if fit else []
    return notes


def write_plan(runs: list[Planned]) -> list[Planned]:
    """Write the manifest and schedule of every run that is new or changed."""
    for run in runs:
        if run.schedule is not None:
            run.schedule.write(run.path)
            run.manifest.write(run.path)
    return runs


def plan(spec_path: str | Path, out: str | Path = "runs", force: bool = False,
         quick: bool = False) -> list[Planned]:
    """Plan every arm x seed and write what is new or changed (idempotent)."""
    return write_plan(plan_runs(spec_path, out, force, quick))


def _existing_hash(run_dir: Path) -> str | None:
    """The hash of the manifest planned there before; "unreadable" for a damaged one."""
    path = run_dir / MANIFEST
    if not path.is_file():
        return None
    try:
        return Manifest.read(path).hash
    except HscaleError:
        return "unreadable"
