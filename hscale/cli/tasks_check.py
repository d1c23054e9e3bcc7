"""Checking a task set before any run: every problem at once, one line each.

The loaders stop at the first bad task, which suits a run (it must refuse) but not an author
fixing many tasks. Here each task folder, row or file is loaded on its own, then every task's
checker runs once under a time limit: after the oracle follows the task's plan when it has one
(its answer is right by construction, so a reward below 1 is a problem), else on the untouched
workspace (a low reward is expected there; only a crash, a timeout or garbage is a problem).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from hscale.cli.task_kinds import (
    has_front_matter,
    is_one_folder,
    is_task_dir,
    parse_split,
    resolve_kind,
)
from hscale.errors import HscaleError
from hscale.harness.tasks import CheckerError, Task, load_task_folder, path_problem

BASE_HARNESS = "S0-T0-O0-C0-W0"
DEFAULT_TIMEOUT = 10.0
MAX_ENTRY_BYTES = 1 << 20  # a data_entry.json; larger ones are not task descriptions

Progress = Callable[[int, int], None]


@dataclass
class Report:
    """What :func:`check_tasks` found: ``problems`` are ``"where: what"`` lines, ``notes`` say
    what was not checked and why; ``tasks`` counts the folders, rows or files examined."""

    path: Path
    kind: str
    tasks: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def grouped(self, shown: int = 3) -> list[str]:
        """The problems, one line per distinct problem: tasks with the same one (a shared
        reward script, say) are one line, the first task's, naming and counting the others."""
        groups: dict[str, list[tuple[str, str]]] = {}
        for line in self.problems:
            unit = re.split(r"[/:]", line, maxsplit=1)[0]
            key = re.sub(rf"(?<![\w.-]){re.escape(unit)}(?![\w.-])", "\0", line)
            groups.setdefault(key, []).append((unit, line))
        out = []
        for members in groups.values():
            line = members[0][1]
            if len(members) > 1:
                others = [unit for unit, _ in members[1:]]
                more = ", ".join(others[:shown]) + (" ..." if len(others) > shown else "")
                line += f" (and {len(others)} more: {more})"
            out.append(line)
        return out

    def summary(self) -> str:
        n, m = len(self.problems), self.tasks
        return f"{n} problem{'s' * (n != 1)} in {m} task{'s' * (m != 1)}"


@dataclass
class _Unit:
    """One thing that loads into a task: a folder, a row, a file."""

    name: str
    task: Task | None = None


# ------------------------------------------------------------------------------ checking
def check_tasks(path: str | Path, kind: str | None = None, split: str | float = "recorded",
                timeout: float = DEFAULT_TIMEOUT, harness: str = BASE_HARNESS,
                progress: Progress | None = None) -> Report:
    """Every problem of the task set at ``path`` (see the module docstring); raises
    HscaleError only when ``path`` is no task set at all or an argument is bad."""
    from hscale.harness import harness_named

    path = Path(path)
    if not path.exists():
        raise HscaleError(f"{path}: no such file or folder", "check the task set's path")
    kind = resolve_kind(path, kind)
    split = parse_split(split)
    if not timeout > 0:
        raise HscaleError(f"timeout must be above 0 s, got {timeout:g}")
    template = harness_named(harness)
    report = Report(path, kind)
    base = path.parent if path.is_file() or is_one_folder(path) else path
    units = list(_load(path, kind, base, report))
    report.tasks = len(units)
    if not units and not report.problems:
        report.problems.append(f"{path.name}: holds no tasks (add task folders or rows)")
    tasks = [u for u in units if u.task is not None]
    _duplicates(tasks, report)
    _overlap(tasks, path, kind, split, report)
    unjudged = 0
    for done, unit in enumerate(tasks):
        if progress is not None:
            progress(done, len(tasks))
        if _is_rubric(unit.task) and not _judge():
            unjudged += 1
            continue
        problem = _run_checker(unit.task, template, timeout)
        if problem:
            report.problems.append(_where(unit.name, problem, base))
    if progress is not None:
        progress(len(tasks), len(tasks))
    order = {u.name: i for i, u in enumerate(units)}  # each unit's lines together, in order
    report.problems.sort(key=lambda line: order.get(re.split(r"[/:]", line, maxsplit=1)[0], -1))
    if unjudged:
        report.notes.append(f"{unjudged} rubric checker{'s' * (unjudged != 1)} not run: no LLM "
                            "judge configured (HSCALE_JUDGE_URL, HSCALE_JUDGE_MODEL)")
    return report


def _where(name: str, message: str, base: Path) -> str:
    """``name: message``, paths under ``base`` made relative, and ``name`` not said twice."""
    # the longer root first: replacing a relative root inside the absolute one would name a
    # file that does not exist (and a set's order changed with PYTHONHASHSEED)
    for root in sorted({str(base), str(base.resolve())}, key=len, reverse=True):
        message = message.replace(root.rstrip("/") + "/", "")
    parts = message.rstrip(": ").split(": ")
    while len(parts) > 1 and parts[0] == parts[1]:  # a loader that names its file twice
        parts.pop(0)
    message = ": ".join(parts)
    named = message.startswith((f"{name}/", f"{name}:"))
    return message if named else f"{name}: {message}"


def _error(exc: Exception) -> str:
    if isinstance(exc, HscaleError):
        return " ".join(exc.message.split())
    return f"cannot load ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})"


def _load(path: Path, kind: str, base: Path, report: Report) -> Iterator[_Unit]:
    """Each folder, row or file as a unit, a failure recorded as one problem line."""
    if kind == "clawgym":
        yield from _clawgym(path, base, report)
    elif kind in ("jsonl", "parquet"):
        yield from _rows(path, kind, report)
    elif kind == "pinchbench":
        yield from _pinchbench(path, base, report)
    else:
        yield from _whole(path, report)


def _clawgym(path: Path, base: Path, report: Report) -> Iterator[_Unit]:
    if not path.is_dir():
        raise HscaleError(f"{path}: not a folder of ClawGym task folders",
                          "give a folder whose task folders hold data_entry.json")
    folders = [path] if base != path else [p for p in sorted(path.iterdir()) if is_task_dir(p)]
    for folder in folders:
        unit = _Unit(folder.relative_to(base).as_posix())
        try:
            problem = _folder_problem(folder) or _plan_problem(task := load_task_folder(folder))
        except Exception as exc:  # a loader bug too is this folder's problem, not the check's
            problem = _error(exc)
        if problem:
            report.problems.append(_where(unit.name, problem, base))
        else:
            unit.task = task
        yield unit


def _folder_problem(folder: Path) -> str | None:
    """What the loader lets through or cannot survive: links out of the folder, files that
    are not regular (a FIFO blocks a read), an oversized data_entry.json."""
    entry = folder / "data_entry.json"
    if entry.is_symlink():
        return f"data_entry.json: a symbolic link ({_target(entry, folder)})"
    if entry.exists():
        info = entry.stat()
        if not stat.S_ISREG(info.st_mode):
            return "data_entry.json: not a regular file"
        if info.st_size > MAX_ENTRY_BYTES:
            return f"data_entry.json: {info.st_size} bytes, more than {MAX_ENTRY_BYTES}"
    for name in ("input_files", "reward", "reward/reward.sh", "reward/reward.py"):
        item = folder / name
        if item.is_symlink():
            return f"{name}: a symbolic link ({_target(item, folder)})"
        if name.startswith("reward/") and item.exists() and not item.is_file():
            return f"{name}: not a regular file"
    root = folder / "input_files"
    for top, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            item = Path(top) / name
            rel = item.relative_to(folder).as_posix()
            if item.is_symlink():
                return f"{rel}: a symbolic link ({_target(item, folder)})"
            mode = item.lstat().st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return f"{rel}: not a regular file"
    return None


def _target(link: Path, folder: Path) -> str:
    target = os.readlink(link)
    outside = os.path.isabs(target) or not link.resolve().is_relative_to(folder.resolve())
    return f"to {target}, {'outside the task folder' if outside else 'copy the file instead'}"


def _plan_problem(task: Task) -> str | None:
    """A solution step whose path leaves the workspace (the loader takes tool arguments as
    they are; the oracle's step would only fail, and maybe unnoticed)."""
    for i, call in enumerate(task.solution, start=1):
        problem = path_problem(call.args["path"]) if "path" in call.args else None
        if problem:
            return f"solution step {i} ({call.name}): path {call.args['path']!r}: {problem}"
    return None


def _rows(path: Path, kind: str, report: Report) -> Iterator[_Unit]:
    from hscale.harness.tasks import task_from_row

    suffix = "." + kind
    if path.suffix != suffix or not path.is_file():
        raise HscaleError(f"{path}: not a {suffix} task list", f"give a {suffix} file")
    for name, row in _read_rows(path, kind, report):
        unit = _Unit(name)
        try:
            if isinstance(row, Exception):
                raise row
            unit.task = task_from_row(row, name, base=path.parent)
            problem = _plan_problem(unit.task)
        except Exception as exc:
            problem = _error(exc)
        if problem:
            unit.task = None
            report.problems.append(_where(name, problem, path.parent))
        yield unit


def _read_rows(path: Path, kind: str, report: Report) -> Iterator[tuple[str, object]]:
    """``(where, row)`` pairs; a row that cannot be read is the HscaleError saying why."""
    if kind == "jsonl":
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError as exc:
            report.problems.append(f"{path.name}: not UTF-8 text ({exc.reason})")
            return
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row: object = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                reason = getattr(exc, "msg", type(exc).__name__)
                row = HscaleError(f"not valid JSON ({reason})")
            yield f"line {lineno}", row
        return
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # any reader failure: a bad file
        report.problems.append(f"{path.name}: cannot read parquet ({exc})")
        return
    for i, row in enumerate(rows):
        yield f"row {i}", row


def _pinchbench(path: Path, base: Path, report: Report) -> Iterator[_Unit]:
    from hscale.harness.tasks import NOT_TASKS, load_pinchbench

    if path.is_dir():
        files = [p for p in sorted(path.glob("*.md"))
                 if p.is_file() and p.name not in NOT_TASKS and has_front_matter(p)]
        if not files:
            raise HscaleError(f"{path}: no PinchBench task files (.md with front matter)")
    else:
        files = [path]
    for md in files:
        unit = _Unit(md.name)
        try:
            unit.task = load_pinchbench(md)[0]
        except Exception as exc:
            report.problems.append(_where(unit.name, _error(exc), base))
        yield unit


def _whole(path: Path, report: Report) -> Iterator[_Unit]:
    """JobBench: every row the reader cannot load is one line (the file itself, when it
    cannot be read at all)."""
    from hscale.harness.tasks import load_jobbench

    left: list[tuple[str, str]] = []
    try:
        tasks = load_jobbench(path, left_out=left)
    except HscaleError as exc:
        report.problems.append(_where(path.name, _error(exc), path.parent))
        yield _Unit(path.name)
        return
    for where, problem in left:
        report.problems.append(_where(path.name, f"{where}: {problem}", path.parent))
        yield _Unit(where)
    for task in tasks:
        yield _Unit(f"task {task.task_id}", task)


def _duplicates(units: list[_Unit], report: Report) -> None:
    first: dict[str, str] = {}
    for unit in units:
        task_id = unit.task.task_id
        if task_id in first:
            report.problems.append(f"{unit.name}: task id {task_id!r} is also "
                                   f"{first[task_id]}'s")
        else:
            first[task_id] = unit.name


def _overlap(units: list[_Unit], path: Path, kind: str, split: str | float,
             report: Report) -> None:
    """Eval tasks whose query and files are a train task's (a plan would refuse them)."""
    from hscale.harness import TaskFiles, fingerprint

    if not units:
        return
    by_id = {u.task.task_id: u for u in units}
    tasks = TaskFiles(kind, path, split, lambda _, left_out=None: [u.task for u in units]
                      ).all_tasks()
    train = {fingerprint(t): t.task_id for t in tasks if t.split == "train"}
    for task in tasks:
        twin = train.get(fingerprint(task)) if task.split == "eval" else None
        if twin is not None:
            report.problems.append(f"{by_id[task.task_id].name}: eval task {task.task_id!r} "
                                   f"has the query and files of train task {twin!r}")


def _is_rubric(task: Task) -> bool:
    from hscale.harness.tasks import uses_judge

    return uses_judge(task.checker)


def _judge() -> bool:
    from hscale.harness.tasks import judge_configured

    return judge_configured()


def _run_checker(task: Task, template, timeout: float) -> str | None:
    """The task's checker once; a problem line, or None when it is sound."""
    try:
        if task.solution or task.final_answer is not None:
            return _oracle(task, template, timeout)
        from hscale.harness import Limits, untouched_reward

        untouched_reward(task, replace(Limits.of(task), checker_seconds=timeout))
    except CheckerError as exc:
        return " ".join(exc.message.split())
    except Exception as exc:  # e.g. input files that cannot coexist in a workspace
        return _error(exc)
    return None


def _oracle(task: Task, template, timeout: float) -> str | None:
    """The oracle follows the plan under the base harness; its reward must be 1."""
    from hscale.harness import DEFAULT_MAX_TURNS, Oracle, Termination, TurnEngine

    engine = TurnEngine(template, task, max(DEFAULT_MAX_TURNS, len(task.solution) + 4))
    try:
        engine.env.limits = replace(engine.env.limits, checker_seconds=timeout)
        oracle = Oracle(task, template)
        while not engine.done:
            engine.submit(oracle.generate(engine.view()))
        reward = engine.env.reward(engine.final, engine.transcript)
    finally:
        engine.env.close()
    if reward >= 1.0:
        return None
    why = [f"step {i} ({call.name}) failed: {result.error}"
           for i, (call, result) in enumerate(engine.calls, start=1) if not result.ok][:2]
    if engine.termination != Termination.ANSWER:
        why.append(f"ended by {engine.termination}")
    return (f"the oracle's plan scores {reward:g}, not 1"
            + (f" ({'; '.join(why)})" if why else ""))
