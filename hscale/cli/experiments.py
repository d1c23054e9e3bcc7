"""``hscale validate | plan | run``: experiment specs into manifests, then into results."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer

from hscale.errors import HscaleError
from hscale.text import printable


def validate_cmd(
    experiment: Annotated[Path, typer.Argument(help="Experiment YAML.")],
) -> None:
    """Check an experiment spec with every check planning makes; print its arms as resolved.

    Nothing is written; each arm is shown as resolved from the defaults."""
    from hscale.train.planning import plan_runs
    from hscale.train.spec import load_spec

    spec = load_spec(experiment)
    with tempfile.TemporaryDirectory() as nowhere:  # plan as into an empty folder
        runs = plan_runs(experiment, nowhere)
    per = {name: len(spec.arm_seeds(arm)) for name, arm in spec.resolved_arms().items()}
    seeds = f"{len(spec.seeds)} seeds" if set(per.values()) == {len(spec.seeds)} else \
        f"{min(per.values())} to {max(per.values())} seeds"
    print(f"{experiment}: experiment {spec.name}: {len(spec.arms)} arms x {seeds}, "
          f"{spec.steps} steps, {spec.algorithm.name}, backend {spec.backend}")
    sizes = {run.manifest.arm: len(run.manifest.train_harnesses) for run in runs}
    for name, arm in spec.resolved_arms().items():
        a, n, bb = arm.assignment, sizes[name], arm.blackbox
        own = f" ({per[name]} seeds)" if per[name] != len(spec.seeds) else ""
        if bb is not None:
            how = (f"{bb.episodes} {bb.teacher} teacher episodes, "
                   f"{'LoRA rank ' + str(bb.lora_rank) if bb.lora_rank else 'every weight'}"
                   if bb.method == "sft" else f"{(arm.algorithm or spec.algorithm).name} rollouts")
            print(f"  {name}{own}: {bb.method} through {bb.harness} ({how}), every task "
                  "under it")
            continue
        print(f"  {name}{own}: train {arm.train.recipe} ({n} configuration"
              f"{'s' * (n != 1)}), assignment {a.mode} K={a.k}" + _adaptive(runs, name,
                                                                         a.radius))
    if spec.hypotheses:
        found = spec.hypotheses
        how = found.procedure + (f", stages {found.stages}" if found.stages else "")
        print(f"  hypotheses ({how}, alpha {found.alpha:g}): " + "; ".join(
            f"H{i + 1} {h.arm} {h.direction} than {h.than} {h.setting}"
            for i, h in enumerate(found.tests)))
    weights = runs[0].manifest.space.weights if runs else None
    if weights:
        print("  weights (normalised to mean 1): "
              + ", ".join(f"{f} {w:.3g}" for f, w in weights.items()))


def _adaptive(runs, arm: str, radius: float | None) -> str:
    """How many harnesses adaptive K gives a task, over the arm's possible anchors."""
    if radius is None:
        return ""
    from hscale.train.spec import adaptive_k

    m = next(r.manifest for r in runs if r.manifest.arm == arm)
    from hscale.train.planning import factor_space

    sizes = adaptive_k(factor_space(m).parse_labels(list(m.train_harnesses)),
                       m.assignment.k, radius, m.space.weight_vector())
    return (f", adaptive within distance {radius:g}: K_x {sizes.min()}..{sizes.max()} "
            f"(mean {sizes.mean():.2f} over anchors)")


def plan_cmd(
    experiment: Annotated[Path, typer.Argument(help="Experiment YAML.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Runs folder.")] = Path("runs"),
    force: Annotated[bool, typer.Option("--force", help="Replace runs whose manifest the "
                                                        "spec now changes.")] = False,
) -> None:
    """Write one manifest.json and schedule.parquet per arm and seed (idempotent)."""
    from hscale.train.planning import plan

    results = plan(experiment, out, force=force)
    counts = {state: sum(r.state == state for r in results)
              for state in ("written", "unchanged", "replaced")}
    print(f"planned {len(results)} runs under {out}: " + ", ".join(
        f"{n} {state}" for state, n in counts.items() if n))


def run_cmd(
    experiment: Annotated[Path, typer.Argument(help="Experiment YAML.")],
    backend: Annotated[str | None, typer.Option(
        help="local (embedded CPU trainer), verl (GPUs) or scripted (no model); default: "
             "the spec's backend.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Runs folder.")] = Path("runs"),
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Export instead of running: write each run's inputs and its "
                          "launch script (verl: veRL's data, config and launch.sh); nothing "
                          "runs and no run's state changes.")] = False,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Run on the Ray cluster at ADDR: its dashboard "
                              "(http://HEAD:8265), its GCS (HEAD:6379 on one of its nodes), "
                              "ray://HEAD:10001, or auto. local: each run a one-CPU Ray task, "
                              "as many at once as the cluster has CPUs; verl: each run a Ray "
                              "job (--workers at once).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="The same arms at smoke-test scale, "
                                                        "under <name>-quick.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Re-plan runs whose manifest the spec "
                                                        "now changes (they start over).")
                     ] = False,
    override: Annotated[list[str] | None, typer.Option(
        "--override", help="verl: one more Hydra override for veRL (KEY=VALUE, repeatable), "
                           "validated against veRL's config like the spec's.")] = None,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="Runs in parallel, one process and one torch thread each "
                                 "(default: up to 2, as the machine allows; veRL "
                                 "launches on this machine run one at a time).")] = None,
) -> None:
    """Plan and run every arm x seed; finished runs are skipped, partial ones resume."""
    from hscale.train.backends import get_backend
    from hscale.train.running import export_experiment, run_experiment
    from hscale.train.spec import load_spec
    from hscale.train.spec import quick as quick_spec

    spec = load_spec(experiment)
    chosen = get_backend(backend or spec.backend, overrides=override or None)
    if dry_run:
        if ray_address is not None:
            raise HscaleError("--dry-run exports inputs and runs nothing, here or on Ray",
                              "drop --ray-address, or drop --dry-run to run on the cluster")
        written = export_experiment(experiment, out, backend=chosen, quick=quick,
                                    force=force, on_export=lambda path: print(
                                        f"{path}: {chosen.name} inputs and launch script"))
        print(f"wrote {chosen.name} inputs for {len(written)} runs under {out}")
        return
    runs = quick_spec(spec) if quick else spec
    if quick:
        print(_quick_line(spec, runs, out))
    began = time.monotonic()
    with _progress() as progress:
        overall = progress.add_task("runs", total=_planned(runs))
        bars: dict = {}
        finished: set[str] = set()

        def report(name: str, done: int, total: int) -> None:
            if name in finished:  # a backend may report its last step more than once
                return
            if name not in bars:
                bars[name] = progress.add_task(name, total=total)
            progress.update(bars[name], completed=done)
            if done >= total and not name.startswith("warm start"):
                finished.add(name)
                progress.advance(overall)
                progress.remove_task(bars.pop(name))
                if not progress.console.is_terminal:  # a log still shows the work moving
                    n, of = len(finished), progress.tasks[overall].total or len(finished)
                    spent = time.monotonic() - began
                    print(f"{name}: done, {n} of {of:.0f} runs in {spent:.0f} s"
                          + (f", about {spent / n * (of - n):.0f} s to go" if n < of else ""),
                          file=sys.stderr, flush=True)

        def announce(run_dir: Path) -> None:
            line = f"{run_dir}: Ray cluster at {ray_address}" if ray_address else \
                chosen.announce(run_dir)
            if line is not None:
                progress.console.print(line, markup=False, highlight=False)

        def run(stage: dict[str, int] | None = None) -> dict[str, str]:
            progress.update(overall, total=_planned(runs, stage))
            return run_experiment(experiment, out, backend=chosen, progress=report,
                                  workers=workers or _default_workers(), quick=quick,
                                  on_start=announce, force=force, ray_address=ray_address,
                                  stage=stage)

        staged = runs.hypotheses.stages if runs.hypotheses else None
        states = _staged(runs, Path(out), run, progress) if staged else run()
    _summary(states, Path(out) / runs.name)


def _staged(spec, out: Path, run, progress) -> dict[str, str]:
    """A staged study (hypotheses.stages): each stage's seeds for the arms of hypotheses not
    yet settled, then a look at every hypothesis (hscale.analysis._hypotheses); the study
    stops at the last stage or once every hypothesis is confirmed."""
    from hscale.analysis import judge_hypotheses, load_results, open_arms
    from hscale.contracts import read_study
    from hscale.train.planning import staged_arms

    stages = spec.hypotheses.stages
    grown = dict.fromkeys(staged_arms(spec), stages[0])
    states: dict[str, str] = {}
    for look, _ in enumerate(stages):
        states.update(run(dict(grown)))
        if any(state != "COMPLETED" for state in states.values()):
            break
        results = load_results(out / spec.name, reported=False)
        episodes = results.episodes[results.episodes["source"].astype(str) == "measured"]
        outcomes = judge_hypotheses(episodes, read_study(out / spec.name))
        said = "; ".join(f"H{o.index} {o.verdict}" for o in outcomes)
        progress.console.print(f"look {look + 1} of {len(stages)}: {said}", markup=False,
                               highlight=False)
        growing = [a for a in open_arms(outcomes) if a in grown]
        if look + 1 == len(stages) or not growing:
            if look + 1 < len(stages):
                spared = sum(stages[-1] - n for n in grown.values())
                print(f"every hypothesis is settled at look {look + 1}: the study stops "
                      f"early ({spared} runs of the last stage not needed)")
            break
        for arm in growing:
            grown[arm] = stages[look + 1]
    return states


def _planned(spec, stage: dict[str, int] | None = None) -> int:
    """The runs a spec plans (a staged study: those of ``stage``, by default its first):
    every arm's seeds, and the base model on every seed label."""
    from hscale.train.planning import seeds_of

    labels, total = set(), 0
    for name, arm in spec.resolved_arms().items():
        seeds = seeds_of(spec, name, arm, stage)
        labels.update(seeds)
        total += len(seeds)
    return total + (len(labels) if spec.evaluation.base_model else 0)


def _quick_line(spec, runs, out: Path) -> str:
    """What ``--quick`` replaced in the spec, and where its runs go."""
    pairs = [("steps", spec.steps, runs.steps), ("seeds", len(spec.seeds), len(runs.seeds)),
             ("tasks a step", spec.algorithm.tasks_per_step, runs.algorithm.tasks_per_step),
             ("rollouts", spec.algorithm.rollouts, runs.algorithm.rollouts),
             ("evaluation runs", spec.evaluation.runs, runs.evaluation.runs),
             ("evaluation tasks", spec.evaluation.tasks, runs.evaluation.tasks)]
    changed = ", ".join(f"{what} {a} -> {b}" for what, a, b in pairs if a != b)
    return (f"--quick: {changed or 'nothing to shrink'}; the same arms, into "
            f"{Path(out) / runs.name}")


def _progress():
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console()  # off a terminal no bar (it would leave a blank line): report's lines
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), transient=True,
                    console=console, disable=not console.is_terminal)


def _default_workers() -> int:
    return max(1, min(2, os.cpu_count() or 1))


def _summary(states: dict[str, str], out: Path) -> None:
    failed = [run for run, state in states.items() if state != "COMPLETED"]
    print(f"{len(states) - len(failed)} of {len(states)} runs completed under {out}")
    from hscale.contracts import checker_health, read_status

    warning = checker_health(states).line()
    if warning:
        print(warning, file=sys.stderr)

    for run in failed:  # a run's error may quote a CLI or a reward script: printable
        error = read_status(Path(run)).error
        print(printable(f"  {run}: {states[run]}" + (f": {error}" if error else "")))
    if failed:
        raise typer.Exit(1)


def clean_cmd(
    runs: Annotated[Path, typer.Argument(help="A runs folder, an experiment's, or one run's.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only say what would go.")
                       ] = False,
) -> None:
    """Drop the checkpoints of completed runs; results, logs and runs that may resume stay."""
    from hscale.train.backends import clean

    if not runs.is_dir():
        raise HscaleError(f"{runs}: no such folder", "give the runs folder `hscale run` wrote")
    dropped = clean(runs, dry_run=dry_run)
    for run_dir, freed in dropped:
        print(f"{run_dir}: {freed / 2**20:.1f} MiB" + (" (would go)" if dry_run else ""))
    total = sum(freed for _, freed in dropped) / 2**30
    print(f"{'would free' if dry_run else 'freed'} {total:.2f} GiB in {len(dropped)} runs")
