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

from hscale.contracts import MANIFEST, HypothesisRecord, Manifest, StudyRecord, write_study
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
    study: StudyRecord | None = None  # the experiment's study.json (the same on every run)


def plan_runs(spec_path: str | Path, out: str | Path = "runs", force: bool = False,
              quick: bool = False, stage: dict[str, int] | None = None) -> list[Planned]:
    """Every arm x seed of the spec, built and checked, nothing written; ``state`` says what
    :func:`write_plan` will do. ``quick`` plans the smoke-test scale of the spec
    (:func:`hscale.train.spec._quick.quick`); ``stage``: a staged study's seeds an arm has
    reached (:func:`seeds_of`)."""
    spec = load_spec(spec_path)
    if quick:
        spec = quick_spec(spec)
    space = space_of(spec)
    with _located(spec_path, ("evaluation",)):
        evals = eval_sets(spec, space)
    sources = resolve_sources(spec, spec_path)
    manifests, every_seed = [], set()
    for arm_name, arm in spec.resolved_arms().items():
        seeds = seeds_of(spec, arm_name, arm, stage)
        every_seed.update(seeds)
        with _located(spec_path, spec.swept.get(arm_name, ("arms", arm_name)), arm_name):
            manifests += [build_manifest(spec, arm_name, arm, seed, space, evals, sources)
                          for seed in seeds]
    if spec.evaluation.base_model:  # evaluated on every seed label an arm plays
        manifests += [base_model_manifest(spec, seed, space, evals, sources)
                      for seed in sorted(every_seed)]
    manifests, notes = with_verl(spec, manifests)
    notes += _fit_notes(spec, manifests[0]) if manifests else []
    for note in notes:
        warnings.warn(f"{spec_path}: {note}", HscaleWarning, stacklevel=2)
    study = study_of(spec)
    runs = []
    for manifest in manifests:
        run_dir = Path(out) / spec.name / manifest.arm / str(manifest.seed)
        previous = _existing_hash(run_dir)
        if previous not in (None, manifest.hash) and not force:
            raise HscaleError(f"{run_dir}: the spec now gives a different manifest than the "
                              "one already planned there",
                              "pass --force to replace it, or rename the experiment")
        if previous == manifest.hash:
            runs.append(Planned(run_dir, manifest, "unchanged", study=study))
            continue
        with _located(spec_path, spec.swept.get(manifest.arm, ("arms", manifest.arm)),
                      manifest.arm):  # what cannot be scheduled names its arm
            schedule = Schedule.for_manifest(manifest)
        runs.append(Planned(run_dir, manifest, "replaced" if previous else "written", schedule,
                            study))
    return runs


def seeds_of(spec, name: str, arm, stage: dict[str, int] | None = None) -> list[int]:
    """The seeds arm ``name`` runs: its own or the spec's; in a staged study (the
    hypotheses' ``stages``) an arm of a hypothesis runs the first ``stage[name]`` of them
    (by default the first stage's count), the other arms all of theirs."""
    seeds = spec.arm_seeds(arm)
    staged = spec.hypotheses.stages if spec.hypotheses else None
    if not staged or name not in staged_arms(spec):
        return seeds
    return seeds[:(stage or {}).get(name, staged[0])]


def staged_arms(spec) -> list[str]:
    """The arms a staged study grows: every arm a hypothesis names (the base model aside)."""
    if not spec.hypotheses:
        return []
    names = [n for h in spec.hypotheses.tests for n in (h.arm, h.than)]
    return [n for n in dict.fromkeys(names) if n in spec.arms]


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


def study_of(spec) -> StudyRecord:
    """The experiment's study.json: its hypotheses, reference and each arm's seeds."""
    found = spec.hypotheses
    seeds = {name: spec.arm_seeds(arm) for name, arm in spec.resolved_arms().items()}
    return StudyRecord(
        hypotheses=[HypothesisRecord(**h.model_dump()) for h in found.tests] if found else [],
        procedure=found.procedure if found else "fixed-sequence",
        alpha=found.alpha if found else 0.05, stages=found.stages if found else None,
        seeds=seeds, reference=spec.reference)


def write_plan(runs: list[Planned]) -> list[Planned]:
    """Write the manifest and schedule of every run that is new or changed, and the
    experiment's study.json."""
    if runs and runs[0].study is not None:
        write_study(runs[0].path.parent.parent, runs[0].study)
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
