"""Benchmarks: named sources of tasks, so planning, both backends and evaluation get their
tasks the same way and nothing else calls a task generator.

A benchmark gives task ids without building tasks (planning at paper scale must stay fast)
and the tasks of a split. ``builtin`` is the seeded task world (harness.world); users add
their own with ``BENCHMARKS.register(name, obj)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from hscale.registry import Registry

if TYPE_CHECKING:
    from harness.tasks import Task


class Benchmark(Protocol):
    def task_ids(self, n: int, seed: int, split: str = "train") -> list[str]: ...

    def tasks(self, n: int, seed: int, split: str = "train") -> list[Task]: ...


class BuiltinWorld:
    """The built-in world: any number of seeded tasks in five categories, train and eval
    splits disjoint by content."""

    def task_ids(self, n: int, seed: int, split: str = "train") -> list[str]:
        from harness.world import task_ids

        return task_ids(n, seed=seed, split=split)

    def tasks(self, n: int, seed: int, split: str = "train") -> list[Task]:
        from harness.world import generate

        return generate(n, seed=seed, split=split)


BENCHMARKS: Registry[Benchmark] = Registry("benchmark")
BENCHMARKS.register("builtin", BuiltinWorld())
