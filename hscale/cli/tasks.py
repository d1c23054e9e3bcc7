"""``hscale tasks ...``: look at a task set before training on it (counts, one task as the
model first sees it) and check it whole, so a broken task shows here and not mid-run."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hscale.errors import HscaleError

app = typer.Typer(help="Task sets: count, categories, a rendered example, and every problem in "
                       "one report.", no_args_is_help=True, add_completion=False)
console = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)

PathArg = Annotated[Path, typer.Argument(help="A folder of ClawGym task folders (or one), a "
                                              ".jsonl/.parquet task list, a PinchBench .md "
                                              "file or folder, or a JobBench .parquet.")]
KindOpt = Annotated[str | None, typer.Option(
    "--kind", help="clawgym, jsonl, parquet, pinchbench or jobbench; guessed from PATH when "
                   "not given.")]
SplitOpt = Annotated[str, typer.Option(
    "--split", help="recorded (each task's own), train, eval, or a share of eval tasks such "
                    "as 0.3 (picked by a hash of the id).")]
StrictOpt = Annotated[bool, typer.Option(
    "--strict", help="Stop on a task that cannot be loaded (default: leave it out and say so).")]
BASE = "S0-T0-O0-C0-W0"


def left_out_line(bench, path: Path | str) -> str | None:
    """One line on the tasks a benchmark left out (None when none was)."""
    from hscale.harness import left_out_summary

    left = left_out_summary(getattr(bench, "left_out", None) or [])
    return (f"warning: {left} ('hscale tasks check {path}' lists them; --strict stops on "
            "them)") if left else None


def _open(path: Path, kind: str | None, split: str, strict: bool = False):
    """The task set as a benchmark, every task loaded; with ``strict`` a bad one ends here in
    one line, else it is left out and a warning says so."""
    from hscale.cli.task_kinds import parse_split, resolve_kind
    from hscale.harness import Settings, open_benchmark

    if not path.exists():
        raise HscaleError(f"{path}: no such file or folder", "check the task set's path")
    kind = resolve_kind(path, kind)
    bench = open_benchmark(kind, str(path), parse_split(split),
                           settings=Settings(strict=strict))
    try:
        bench.all_tasks()
    except HscaleError as exc:
        raise HscaleError(exc.message, f"'hscale tasks check {path}' lists every problem; "
                                       f"{exc.hint or ''}".rstrip("; ")) from None
    except RecursionError:  # a loader's JSON parse of absurdly nested data
        raise HscaleError(f"{path}: a task file nests too deeply to read",
                          f"'hscale tasks check {path}' names it") from None
    warning = left_out_line(bench, path)
    if warning:
        Console(stderr=True, highlight=False, soft_wrap=True, markup=False).print(warning)
    return kind, bench


@app.command("list")
def list_cmd(path: PathArg, kind: KindOpt = None, split: SplitOpt = "recorded",
             as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
             strict: StrictOpt = False) -> None:
    """How many tasks, per split and category, their grading types and content hash."""
    kind, bench = _open(path, kind, split, strict)
    tasks = bench.all_tasks()
    splits = {s: bench.available(s) for s in ("train", "eval")}
    categories = {c: {s: sum(t.category == c and t.split == s for t in tasks)
                      for s in ("train", "eval")} for c in bench.categories()}
    grading = dict(sorted(Counter(t.grading_type for t in tasks).items()))
    digest = bench.content_hash()
    if as_json:
        print(json.dumps({"path": str(path), "kind": kind, "split": split, "tasks": len(tasks),
                          "splits": splits, "categories": categories,
                          "grading_types": grading, "content_hash": digest,
                          "left_out": [{"where": w, "problem": p} for w, p in
                                       getattr(bench, "left_out", [])]}, indent=2))
        return
    table = Table(show_edge=False, title=f"{path} ({kind}): {len(tasks)} tasks, "
                                         f"{splits['train']} train, {splits['eval']} eval")
    for column in ("category", "train", "eval", "total"):
        table.add_column(column, justify="left" if column == "category" else "right")
    for name, counts in categories.items():
        table.add_row(name, str(counts["train"]), str(counts["eval"]),
                      str(sum(counts.values())))
    console.print(table)
    console.print("grading types: " + ", ".join(f"{g} {n}" for g, n in grading.items()))
    console.print(f"content {digest[:12]} (split {split})")


@app.command("show")
def show_cmd(path: PathArg, task: Annotated[str | None, typer.Option(
                 "--task", help="Task id (default: the first by id).")] = None,
             harness: Annotated[str, typer.Option(
                 "--harness", help="Harness label or out-of-space preset.")] = BASE,
             kind: KindOpt = None, split: SplitOpt = "recorded",
             strict: StrictOpt = False) -> None:
    """One task: its query, input files, checker, and what the model first sees."""
    _, bench = _open(path, kind, split, strict)
    tasks = bench.all_tasks()
    chosen = tasks[0] if task is None else next((t for t in tasks if t.task_id == task), None)
    if chosen is None:
        raise HscaleError(f"{path}: no task {task!r}", f"choose one of "
                          f"{', '.join(t.task_id for t in tasks[:5])}"
                          + (", ..." if len(tasks) > 5 else ""))
    template = _harness(harness)
    _describe(chosen, path)
    fresh = template.fresh()
    view = fresh.view(fresh.start(chosen.user_query, chosen.tools))
    console.rule(f"first model view under {template.name}: {len(view)} messages")
    for message in view:
        console.print(Text.assemble((f"[{message.role}]", "bold"), " ", message.content))


def _harness(label: str):
    from hscale.harness import harness_named

    try:
        return harness_named(label)
    except HscaleError:
        raise HscaleError(f"unknown harness {label!r}", "give a label such as "
                          "S0-T1-O2-C0-W1 or an out-of-space one ('hscale harness list')"
                          ) from None


def _describe(task, path: Path) -> None:
    """The task's facts, one per line."""
    lines = [f"task {task.task_id} ({task.category}, {task.split}, graded {task.grading_type})",
             f"query: {task.user_query}"]
    files = {rel: len(text.encode("utf-8", "surrogateescape"))
             for rel, text in sorted(task.input_files.items())}
    lines.append("input files: " + (", ".join(f"{rel} ({size} bytes)"
                                              for rel, size in files.items()) or "none"))
    checker = task.checker
    kind = checker.get("kind") if isinstance(checker, dict) else "callable"
    where = checker.get("path", "") if isinstance(checker, dict) else ""
    if where:
        root = path.resolve() if path.is_dir() else path.resolve().parent
        where = Path(where).relative_to(root).as_posix() if Path(where).is_relative_to(root) \
            else where
    lines.append(f"checker: {kind}" + (f" {where}" if where else ""))
    steps = len(task.solution)
    plan = f"{steps} step{'s' * (steps != 1)}" if steps else "no steps"
    answer = f", final answer {task.final_answer!r}" if task.final_answer is not None else ""
    lines.append(f"oracle plan: {plan}{answer}" if task.solution or answer else
                 "oracle plan: none")
    for line in lines:
        console.print(Text(line))


@app.command("check")
def check_cmd(path: PathArg, kind: KindOpt = None, split: SplitOpt = "recorded",
              timeout: Annotated[float, typer.Option(
                  "--timeout", help="Seconds a checker may run per task.")] = 10.0,
              harness: Annotated[str, typer.Option(
                  "--harness", help="Harness the oracle runs under.")] = BASE) -> None:
    """Every problem in one report, one line each: bad folders and rows, duplicate ids, and
    checkers that fail or score the oracle's answer below 1. Exit 2 when there is any."""
    from rich.progress import Progress

    from hscale.cli.tasks_check import check_tasks

    _harness(harness)
    with Progress(console=Console(file=sys.stderr), transient=True) as progress:
        bar = progress.add_task("checking tasks", total=None, visible=False)

        def advance(done: int, total: int) -> None:
            progress.update(bar, completed=done, total=total, visible=total > 5)

        report = check_tasks(path, kind, split, timeout, harness, progress=advance)
    for problem in report.grouped():
        console.print(Text(problem))
    for note in report.notes:
        console.print(Text(f"note: {note}"))
    console.print(report.summary())
    if report.problems:
        raise typer.Exit(2)
