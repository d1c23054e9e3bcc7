"""``hscale collect TEACHER --harness bb/...``: trajectories of a teacher through a real
black-box harness, recorded for training (hscale.train.blackbox._collect)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from hscale.text import printable


def collect_cmd(
    teacher: Annotated[str, typer.Argument(help="scripted (the tasks' known solutions), or a "
                                                "model as hscale evaluate takes it.")],
    harness: Annotated[str, typer.Option(help="The black-box harness played through "
                                              "(bb/claude-code, bb/codex, bb/openclaw).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The collection's folder.")],
    benchmark: Annotated[str, typer.Option(help="Task set.")] = "builtin",
    path: Annotated[str | None, typer.Option(help="The benchmark's files (data kinds).")
                    ] = None,
    split: Annotated[str, typer.Option(help="train or eval.")] = "train",
    tasks: Annotated[int, typer.Option(min=1, max=100_000, help="Tasks to play.")] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the built-in tasks.")] = 0,
    served_name: Annotated[str | None, typer.Option(
        help="An endpoint teacher's model name.")] = None,
) -> None:
    """Trajectories of a teacher through a real black-box harness, for training.

    Play TEACHER through a black-box harness on a task set, recording every model call
    and each episode's reward; rerun to finish an interrupted collection. Read it back with
    hscale.train.blackbox._trajectories.samples(OUT/record, EpisodeLog(OUT/record).read())."""
    from hscale.cli._progress import progress
    from hscale.train.blackbox import Collection, EpisodeLog, collect

    asked = Collection(teacher, harness, benchmark, path, split, tasks, seed, served_name)
    failures: list[tuple[str, str]] = []

    def failed(task_id: str, error: str) -> None:
        failures.append((task_id, error))
        print(printable(f"{task_id}: {harness} failed: {error.removeprefix('cli: ')}"),
              file=sys.stderr, flush=True)

    with progress("episodes") as update:
        record = collect(asked, out, update, failed=failed)
    rows = EpisodeLog(record).read()
    solved = sum(r["reward"] >= 1.0 for r in rows)
    print(f"collected {len(rows)} episodes of {teacher} through {harness}, {solved} solved; "
          f"record in {record}")
    if failures:
        print(printable(f"{len(failures)} episode{'s' * (len(failures) != 1)} not collected: "
                        f"the CLI failed ({failures[0][1].removeprefix('cli: ')}); rerun to "
                        f"play {'them' if len(failures) > 1 else 'it'} again"),
              file=sys.stderr)
        raise typer.Exit(1)
