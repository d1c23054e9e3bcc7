"""``hscale validate | plan | run``: experiment specs into manifests, then into results."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hscale.errors import HscaleError


def validate_cmd(
    experiment: Annotated[Path, typer.Argument(help="Experiment YAML.")],
) -> None:
    """Check an experiment spec; print its arms as resolved from the defaults."""
    from train.spec import load_spec

    spec = load_spec(experiment)
    print(f"{experiment}: experiment {spec.name}: {len(spec.arms)} arms x {len(spec.seeds)} "
          f"seeds, {spec.steps} steps, {spec.algorithm.name}, backend {spec.backend}")
    for name, arm in spec.resolved_arms().items():
        a = arm.assignment
        print(f"  {name}: train {arm.train.recipe}, assignment {a.mode} K={a.k}")


def plan_cmd(
    experiment: Annotated[Path, typer.Argument(help="Experiment YAML.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Runs folder.")] = Path("runs"),
    force: Annotated[bool, typer.Option("--force", help="Replace runs whose manifest the "
                                                        "spec now changes.")] = False,
) -> None:
    """Write one manifest.json and schedule.parquet per arm and seed (idempotent)."""
    from train.plan import plan

    results = plan(experiment, out, force=force)
    counts = {state: sum(r.state == state for r in results)
              for state in ("written", "unchanged", "replaced")}
    print(f"planned {len(results)} runs under {out}: " + ", ".join(
        f"{n} {state}" for state, n in counts.items() if n))


def run_cmd(
    experiment: Annotated[Path, typer.Argument(help="Experiment YAML.")],
    backend: Annotated[str | None, typer.Option(
        help="local (this machine) or verl (GPUs); default: the spec's backend.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Runs folder.")] = Path("runs"),
    dry_run: Annotated[bool, typer.Option("--dry-run", help="verl: write each run's data, "
                                                            "config and launch.sh only.")
                       ] = False,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="verl: submit each run as a job to the Ray cluster whose "
                              "dashboard is at ADDR (http://HEAD:8265).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="local: the same arms at smoke-test "
                                                        "scale, under <name>-quick.")] = False,
    workers: Annotated[int | None, typer.Option(
        "--workers", min=1, help="local: runs in parallel, one process and one torch "
                                 "thread each (default: up to 2, as the machine allows).")
                       ] = None,
) -> None:
    """Plan and run every arm x seed; finished runs are skipped, partial ones resume."""
    from train.runner import run_experiment
    from train.spec import load_spec
    from train.spec import quick as quick_spec

    spec = load_spec(experiment)
    backend = backend or spec.backend
    if backend == "verl":
        for flag, given in (("--quick", quick), ("--workers", workers is not None)):
            if given:
                raise HscaleError(f"{flag} is for the local backend",
                                  "drop it, or run with --backend local")
        _verl(experiment, out, dry_run, ray_address)
        return
    for flag, given in (("--ray-address", ray_address is not None), ("--dry-run", dry_run)):
        if given:
            raise HscaleError(f"{flag} is for the verl backend", "add --backend verl")

    with _progress() as progress:
        runs = quick_spec(spec) if quick else spec
        overall = progress.add_task("runs", total=len(runs.arms) * len(runs.seeds))
        bars: dict = {}

        def report(name: str, done: int, total: int) -> None:
            if name not in bars:
                bars[name] = progress.add_task(name, total=total)
            progress.update(bars[name], completed=done)
            if done >= total and not name.startswith("warm start"):
                progress.advance(overall)
                progress.remove_task(bars[name])

        states = run_experiment(experiment, out, backend=backend, progress=report,
                                workers=workers or _default_workers(), quick=quick)
    _summary(states, out)


def _progress():
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), transient=True)


def _default_workers() -> int:
    import os

    return max(1, min(2, os.cpu_count() or 1))


def _summary(states: dict[str, str], out: Path) -> None:
    failed = [run for run, state in states.items() if state != "COMPLETED"]
    print(f"{len(states) - len(failed)} of {len(states)} runs completed under {out}")
    for run in failed:
        print(f"  {run}: {states[run]} (see its status.json)")
    if failed:
        raise typer.Exit(1)


def _verl(experiment: Path, out: Path, dry_run: bool, ray_address: str | None) -> None:
    """veRL: write every planned run's inputs (--dry-run), or launch each run here or as a
    Ray job, after checking what a launch needs (one line and exit 2 when something lacks)."""
    import json

    from train.backends.verl_backend import LOG, VerlBackend, check_launch, prepare_verl_run
    from train.plan import plan
    from train.runner import run_experiment

    if dry_run:
        planned = plan(experiment, out)
        for item in planned:
            manifest = json.loads((item.path / "manifest.json").read_text())
            prepared = prepare_verl_run(item.path, manifest)
            print(prepared["launch"])
        print(f"wrote veRL inputs for {len(planned)} runs under {out}")
        return
    extra = check_launch(experiment, ray_address)
    where = f"Ray job at {ray_address}" if ray_address else "veRL here"
    states = run_experiment(experiment, out, VerlBackend(ray_address, extra),
                            on_start=lambda p: print(f"{p}: {where} (log: {p / 'verl' / LOG})",
                                                     flush=True))
    _summary(states, out)
