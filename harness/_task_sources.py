"""Benchmarks: named sources of tasks, so planning, both backends and evaluation get their
tasks the same way and nothing else calls a task generator.

A benchmark gives the tasks of a split (``train`` or ``eval``), their ids without building
them where that is cheaper (planning at paper scale must stay fast), its categories, and a
content hash that goes into the manifest: the same files give the same hash on any machine,
and a run refuses a benchmark whose files changed after planning.

Registered kinds (``BENCHMARKS``; each entry is a factory taking ``path`` and ``split``):
``builtin`` (the seeded task world, any number of tasks), ``clawgym`` (a folder of ClawGym
task folders), ``jsonl`` and ``parquet`` (task lists), ``pinchbench`` (markdown tasks) and
``jobbench`` (parquet rows). A data benchmark's split is each task's recorded one
(``split: recorded``), all ``train`` or all ``eval``, or a share of eval tasks picked by a
hash of the task id (``split: 0.3``): disjoint by construction, and stable as tasks are added.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hscale.errors import HscaleError
from hscale.files import hash_files
from hscale.registry import Registry

if TYPE_CHECKING:
    from hscale.harness.tasks import Task

SPLIT_MODES = ("recorded", "train", "eval")
# What each real task format's own runner gives its agent, so its tasks can be solved as they
# were there: every tool, the shell included, a 16,000-character window per tool output
# (read more of a file with ``run``: sed, head, tail), 1 MiB writes, 30 turns, commands up to
# 120 s. A spec's benchmark ``tools`` and ``limits`` replace these; the builtin world and
# hscale's own task lists keep the built-in tools and limits.
RUNNER_TOOLS = ("list", "read", "write", "search", "calc", "run")
RUNNER_LIMITS = {"max_turns": 30, "max_output_chars": 16_000, "max_write_bytes": 1 << 20,
                 "max_read_bytes": 4 << 20, "max_entries": 10_000, "run_seconds": 120.0}
# Largest benchmark folder hashed and loaded: far beyond ClawGym-Bench (200 small tasks).
MAX_FILES, MAX_BYTES = 100_000, 2 << 30


class Benchmark:
    """The interface every benchmark kind implements."""

    kind = "benchmark"

    def task_ids(self, n: int | None, seed: int, split: str = "train") -> list[str]:
        return [t.task_id for t in self.tasks(n, seed, split)]

    def tasks(self, n: int | None, seed: int, split: str = "train") -> list[Task]:
        """``n`` tasks of ``split`` (all when None), in an order fixed by ``seed``."""
        raise NotImplementedError

    def available(self, split: str) -> int | None:
        """How many tasks ``split`` holds; None when any number can be made."""
        raise NotImplementedError

    def categories(self) -> list[str]:
        raise NotImplementedError

    def content_hash(self) -> str | None:
        """sha256 of the benchmark's files; None when its tasks are code (builtin)."""
        return None


class BuiltinWorld(Benchmark):
    """The built-in world: any number of seeded tasks in five categories, train and eval
    splits disjoint by content."""

    kind = "builtin"

    def task_ids(self, n: int | None, seed: int, split: str = "train") -> list[str]:
        from hscale.harness._world import task_ids

        return task_ids(_count(n, None, split, "builtin"), seed=seed, split=split)

    def tasks(self, n: int | None, seed: int, split: str = "train") -> list[Task]:
        return list(_generated(_count(n, None, split, "builtin"), seed, split))

    def available(self, split: str) -> int | None:
        return None

    def categories(self) -> list[str]:
        from hscale.harness._world import CATEGORIES

        return list(CATEGORIES)


@functools.lru_cache(maxsize=8)
def _generated(n: int, seed: int, split: str) -> tuple[Task, ...]:
    """The world's tasks, generated once a process for each (n, seed, split): planning, the
    trainer, the evaluator and veRL's inputs all ask for the same ones (nobody changes a
    task once made)."""
    from hscale.harness._world import generate

    return tuple(generate(n, seed=seed, split=split))


@dataclass(frozen=True)
class Settings:
    """A spec's choices for a data benchmark's tasks: ``tools`` and ``limits`` (None: the
    format's), and ``strict``: a task that cannot be loaded stops the benchmark instead of
    being left out."""

    tools: tuple[str, ...] | None = None
    limits: tuple[tuple[str, float], ...] | None = None  # sorted items: hashable, cacheable
    strict: bool = False
    max_asset_bytes: int | None = None  # a PinchBench or JobBench workspace file (None: 8 MiB)

    @classmethod
    def of(cls, record: Any) -> Settings:
        limits = getattr(record, "limits", None)
        tools = getattr(record, "tools", None)
        return cls(tuple(tools) if tools else None,
                   tuple(sorted(limits.items())) if limits else None,
                   bool(getattr(record, "strict", False)),
                   getattr(record, "max_asset_bytes", None))


class TaskFiles(Benchmark):
    """Tasks read from files by ``reader``; ``split`` as in the module docstring. Tasks that
    cannot be loaded are left out (``left_out``: where and why) unless ``settings.strict``."""

    def __init__(self, kind: str, path: str | Path, split: str | float,
                 reader: Callable[..., list[Task]], settings: Settings | None = None) -> None:
        self.kind, self.path, self.split = kind, Path(path), split
        self._reader = reader
        self.settings = settings or Settings()
        self._all: list[Task] | None = None
        self.left_out: list[tuple[str, str]] = []

    def all_tasks(self) -> list[Task]:
        """Every task, its split set by this benchmark's split rule, its tools and limits by
        the format and the spec, sorted by id."""
        if self._all is None:
            if not self.path.exists():
                raise HscaleError(f"{self.path}: no such file or folder",
                                  "check the benchmark's path (relative to the spec's folder)")
            left: list[tuple[str, str]] | None = None if self.settings.strict else []
            sized = ({"max_asset_bytes": self.settings.max_asset_bytes}
                     if self.settings.max_asset_bytes else {})
            tasks = self._reader(self.path, left_out=left, **sized)
            if not tasks:
                raise HscaleError(f"{self.path}: holds no tasks", "add task folders or rows")
            self._all = sorted((replace(t, split=_split_of(t, self.split), **self._tools(t))
                                for t in tasks), key=lambda t: t.task_id)
            self.left_out = left or []
        return self._all

    def _tools(self, task: Task) -> dict[str, Any]:
        """The tools and limits ``task`` runs with: the spec's, else its format runner's (a
        task of hscale's own keeps what it has)."""
        runner = self.kind in ("pinchbench", "jobbench") or task.mount is not None
        tools = self.settings.tools or (RUNNER_TOOLS if runner else task.tools)
        limits = {**(RUNNER_LIMITS if runner else {}), **task.limits}
        limits.update(dict(self.settings.limits or ()))
        return {"tools": tools, "limits": limits}

    def tasks(self, n: int | None, seed: int, split: str = "train") -> list[Task]:
        pool = [t for t in self.all_tasks() if t.split == split]
        count = _count(n, len(pool), split, str(self.path))
        order = np.random.default_rng(seed).permutation(len(pool))[:count]
        return [pool[i] for i in order]

    def available(self, split: str) -> int | None:
        return sum(t.split == split for t in self.all_tasks())

    def categories(self) -> list[str]:
        return sorted({t.category for t in self.all_tasks()})

    def content_hash(self) -> str:
        return content_hash(self.path)


def left_out_summary(left: Sequence[tuple[str, str]]) -> str:
    """``2 tasks left out (cannot be loaded), the first: WHERE: WHY`` for a benchmark's
    ``left_out`` (empty: "")."""
    if not left:
        return ""
    where, problem = left[0]
    first = problem if problem.startswith(where) else f"{where}: {problem}"
    return (f"{len(left)} task{'s' * (len(left) > 1)} left out (cannot be loaded), the "
            f"first: {first}")


def _count(n: int | None, available: int | None, split: str, where: str) -> int:
    if n is None:
        if available is None:
            raise HscaleError(f"{where}: give a number of {split} tasks",
                              "the builtin world makes any number")
        return available
    if available is not None and n > available:
        raise HscaleError(f"{where}: {n} {split} tasks asked for, it holds {available}",
                          f"ask for at most {available}, leave the count out to take all, "
                          "or change the benchmark's split")
    return n


def _split_of(task: Task, split: str | float) -> str:
    if isinstance(split, str):
        return task.split if split == "recorded" else split
    digest = hashlib.sha256(task.task_id.encode()).digest()
    return "eval" if int.from_bytes(digest[:8], "big") / 2**64 < split else "train"


def content_hash(path: str | Path) -> str:
    """sha256 over a file's bytes, or a folder's files (relative POSIX paths and bytes, in
    sorted order; caches and hidden files skipped): independent of where the folder lies,
    of timestamps and of the machine."""
    root = Path(path)
    if root.is_file():
        files = [(root.name, root)]
    elif root.is_dir():
        files = sorted((p.relative_to(root).as_posix(), p) for p in _files(root))
    else:
        raise HscaleError(f"{root}: no such file or folder", "check the benchmark's path")
    try:
        return hash_files(files, MAX_BYTES)
    except OverflowError:
        raise HscaleError(f"{root}: more than {MAX_BYTES >> 30} GiB of task files",
                          "split the benchmark into smaller folders") from None


def _files(root: Path) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        found += [Path(folder) / n for n in names if not n.startswith(".")
                  and not n.endswith(".pyc")]
        if len(found) > MAX_FILES:
            raise HscaleError(f"{root}: more than {MAX_FILES} files",
                              "point the benchmark at the task folders only")
    return found


def _clawgym(path: Path, left_out: list | None = None) -> list[Task]:
    from hscale.harness.tasks import load_tasks

    if not path.is_dir():
        raise HscaleError(f"{path}: not a folder of ClawGym task folders",
                          "give a folder whose task folders hold data_entry.json")
    return load_tasks(path, left_out=left_out)


def _task_list(suffix: str) -> Callable[..., list[Task]]:
    def read(path: Path, left_out: list | None = None) -> list[Task]:
        from hscale.harness.tasks import load_tasks

        if path.suffix != suffix:
            raise HscaleError(f"{path}: not a {suffix} task list", f"give a {suffix} file")
        return load_tasks(path, left_out=left_out)
    return read


def _pinchbench(path: Path, left_out: list | None = None, **sized: int) -> list[Task]:
    from hscale.harness.tasks import load_pinchbench

    return load_pinchbench(path, left_out=left_out, **sized)


def _jobbench(path: Path, left_out: list | None = None, **sized: int) -> list[Task]:
    from hscale.harness.tasks import load_jobbench

    return load_jobbench(path, left_out=left_out, **sized)


Factory = Callable[..., Benchmark]
BENCHMARKS: Registry[Factory] = Registry("benchmark")
BENCHMARKS.register("builtin", lambda path=None, split="recorded", settings=None:
                    BuiltinWorld())
for _kind, _reader in (("clawgym", _clawgym), ("jsonl", _task_list(".jsonl")),
                       ("parquet", _task_list(".parquet")), ("pinchbench", _pinchbench),
                       ("jobbench", _jobbench)):
    BENCHMARKS.register(_kind, lambda path, split="recorded", settings=None, k=_kind,
                        r=_reader: TaskFiles(k, path, split, r, settings))
# Kinds that read files (a spec must give their path).
FILE_KINDS = ("clawgym", "jsonl", "parquet", "pinchbench", "jobbench")


def open_benchmark(name: str, path: str | None = None, split: str | float = "recorded",
                   content: str | None = None, settings: Settings | None = None) -> Benchmark:
    """The benchmark ``name`` reads from ``path``; with ``content`` (the hash recorded at
    planning), one whose files still hash to it; ``settings``: the spec's tools, limits and
    strictness. Cached: a run opens it many times."""
    return _open(name, path, split, content, settings or Settings(), _stamp(path))


def _stamp(path: str | None) -> Any:
    """What invalidates the cache: the number, sizes and modification times of the files
    (stat only, no reads), so an edit in the same process is not hidden by the cache."""
    if path is None:
        return None
    try:
        root = Path(path)
        files = _files(root) if root.is_dir() else [root]
        stats = [os.stat(f) for f in files]
    except (OSError, HscaleError):
        return None
    return (len(stats), sum(s.st_size for s in stats), max((s.st_mtime_ns for s in stats),
                                                           default=0))


@lru_cache(maxsize=32)
def _open(name: str, path: str | None, split: str | float, content: str | None,
          settings: Settings, stamp: Any) -> Benchmark:
    factory = BENCHMARKS.get(name)
    if path is None and name in FILE_KINDS:
        raise HscaleError(f"benchmark {name}: no path to its tasks",
                          f"give the {name} tasks' file or folder (--path, or the spec's "
                          "benchmark path)")
    bench = (factory(path=path, split=split, settings=settings) if path is not None
             else factory(split=split))
    if content is not None:
        found = bench.content_hash()
        if found != content:
            raise HscaleError(f"{path}: the tasks changed since the run was planned (content "
                              f"{(found or 'none')[:12]}, planned {content[:12]})",
                              "re-plan the experiment (hscale plan --force), or restore "
                              "the tasks")
    return bench


def benchmark_of(record: Any) -> Benchmark:
    """The benchmark a manifest's benchmark record names, its content checked."""
    return open_benchmark(record.name, record.path, getattr(record, "split", None) or
                          "recorded", getattr(record, "content", None), Settings.of(record))


def fingerprint(task: Task) -> str:
    """A task's content (query and input files): equal fingerprints are the same task, under
    any id, so train and eval sets can be checked disjoint across benchmarks."""
    body = "\0".join([task.user_query.strip().lower(),
                      *(f"{k}\0{v}" for k, v in sorted(task.input_files.items()))])
    return hashlib.sha256(body.encode("utf-8", "replace")).hexdigest()


def overlap(train: Sequence[Task], evals: Sequence[Task], by_id: bool = True) -> list[str]:
    """Ids of eval tasks that are also training tasks, by content, and by id when both come
    from one source (two task sets may reuse ids for different tasks)."""
    ids = {t.task_id for t in train} if by_id else set()
    prints = {fingerprint(t) for t in train}
    return [t.task_id for t in evals if t.task_id in ids or fingerprint(t) in prints]


__all__ = ["BENCHMARKS", "FILE_KINDS", "RUNNER_LIMITS", "RUNNER_TOOLS", "SPLIT_MODES",
           "Benchmark", "BuiltinWorld", "Settings", "TaskFiles", "benchmark_of", "content_hash",
           "fingerprint", "left_out_summary", "open_benchmark", "overlap"]
