"""``hscale rerun RUNS``: finished runs run again from their manifests, and compared."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hscale.text import printable


def rerun_cmd(
    runs: Annotated[Path, typer.Argument(help="A completed run's folder (runs/demo/k1/0), an "
                                              "experiment's, or a runs folder.")],
    sample: Annotated[int | None, typer.Option(
        "--sample", min=1, help="Rerun N of the completed runs, drawn at random (--seed); "
                                "default: every one.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the --sample draw.")] = 0,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Scratch folder the reruns are written to, and kept (default: a "
                            "temporary folder, removed after a rerun that matches).")] = None,
) -> None:
    """Run finished runs again from their manifests into a scratch folder and compare the rows.

    Each run is run again with the backend that made it (its status.json) and the settings
    its provenance.jsonl records. The embedded trainer and the scripted backend promise
    identical rows: any difference is shown by file, column and first differing row (the
    wall-clock columns left out). veRL does not (GPU kernels and batching), so its reruns
    are compared by Pass@1, and the output says so. Exit status 1 when a run differs."""
    from hscale.cli._progress import progress
    from hscale.train.running import finished_runs, rerun, sample_runs

    chosen = sample_runs(finished_runs(runs), sample, seed)
    if sample is not None:
        print(f"rerunning {len(chosen)} completed runs drawn at random (seed {seed})")
    differ = 0
    for run_dir in chosen:
        # a bar on a terminal, a line every few seconds in a log: a run can take minutes
        with progress(f"rerun {run_dir.parent.name}/{run_dir.name} steps") as step:
            result = rerun(run_dir, out, lambda _what, done, total: step(done, total))
        for line in result.lines():
            print(printable(line))
        if not result.ok:
            differ += 1
            print(f"  the rerun is in {result.scratch}")
    print(f"{len(chosen) - differ} of {len(chosen)} runs reproduced"
          + (f"; {differ} differ" if differ else ""))
    if differ:
        raise typer.Exit(1)
