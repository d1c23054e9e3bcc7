"""Trajectories of a teacher through a black-box harness, collected for training
(hscale.train.blackbox._trajectories reads them back): the teacher served with a record, each task's
episode played by the real CLI under a session of its own, each finished episode logged
beside the record as it ends.

A collection folder holds ``collect.json`` (what was asked), ``record/`` (every request
and reply) and ``record/episodes.jsonl`` (session, harness, task, reward). Running the same
collection again plays only the tasks it has not finished; a folder of another collection is
refused, so nothing of it is overwritten.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.files import atomic_write_text, refuse_foreign_folder
from hscale.harness.tasks import Task

ASKED, RECORD = "collect.json", "record"


@dataclass(frozen=True)
class Collection:
    """What to collect: ``teacher`` (``scripted``: the known solutions; or any model
    ``hscale evaluate`` takes), the harness, the tasks (benchmark, its files, split, count,
    seed)."""

    teacher: str
    harness: str
    benchmark: str = "builtin"
    path: str | None = None
    split: str = "train"
    tasks: int = 20
    seed: int = 0
    served_name: str | None = None


def collect(asked: Collection, out: str | Path,
            progress: Callable[[int, int], None] | None = None,
            tasks: Sequence[Task] | None = None,
            failed: Callable[[str, str], None] | None = None) -> Path:
    """Collect into ``out`` (created); returns the record folder. ``tasks``: the ones to
    play, in place of the benchmark's that ``asked`` names (a run's own training tasks).
    An episode whose CLI failed is not logged (a rerun plays it again): ``failed(task_id,
    error)`` hears it; a CLI that fails its first episodes stops the collection
    (hscale.train.blackbox._eval.CliFailures)."""
    from hscale.harness import (
        HARNESSES,
        cli_failed,
        new_session,
        open_benchmark,
        require_installed,
    )
    from hscale.train.blackbox._eval import check_context, play_clis
    from hscale.train.blackbox._trajectories import EpisodeLog

    HARNESSES.check(asked.harness)
    require_installed([asked.harness])
    if tasks is None:
        tasks = open_benchmark(asked.benchmark, asked.path).tasks(asked.tasks, asked.seed,
                                                                  asked.split)
    if not tasks:
        raise HscaleError(f"--benchmark {asked.benchmark}: no {asked.split} tasks",
                          "choose a split the benchmark has")
    try:
        model = _teacher(asked, tasks)  # before anything is written
    except HscaleError as exc:
        raise HscaleError(f"teacher {asked.teacher!r}: {exc.message}", exc.hint) from None
    check_context(model, [asked.harness])
    out = Path(out)
    _own(out, asked)
    log = EpisodeLog(out / RECORD)
    done = {row["task_id"] for row in log.read()}
    todo = [t for t in tasks if t.task_id not in done]
    if progress is not None:
        progress(len(tasks) - len(todo), len(tasks))
    sessions = [new_session() for _ in todo]

    def finished(i: int, episode: Any) -> None:
        if cli_failed(episode.error):
            if failed is not None:
                failed(todo[i].task_id, episode.error)
            return
        log.add(sessions[i], asked.harness, todo[i].task_id, episode.reward)
        done.add(todo[i].task_id)
        if progress is not None:
            progress(len(done), len(tasks))

    play_clis(model, [(asked.harness, t) for t in todo], finished, sessions=sessions,
         record=out / RECORD, served_name=asked.served_name)
    return out / RECORD


def _teacher(asked: Collection, tasks: list) -> Any:
    if asked.teacher == "scripted":
        from hscale.train.serving import ScriptedChat, solution_commands

        return ScriptedChat({t.user_query: solution_commands(t) for t in tasks})
    from hscale.train.lm import served_model

    return served_model(asked.teacher, asked.served_name)


def _own(out: Path, asked: Collection) -> None:
    """Claim ``out`` for this collection; another's is refused."""
    path = out / ASKED
    wanted = json.dumps(asdict(asked), sort_keys=True)
    if path.is_file():
        if json.dumps(json.loads(path.read_text()), sort_keys=True) != wanted:
            raise HscaleError(f"{out}: holds another collection ({path})",
                              "give another --out, or rerun with the same teacher, harness "
                              "and tasks to finish it")
        return
    refuse_foreign_folder(out, lambda _: False, "a collection", "give an empty or new --out",
                          name=f"--out {out}")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, wanted + "\n")
