"""The workspace entry cap counts every folder a write would create, not just the file."""

from __future__ import annotations

import random

from hscale.harness import Env, Limits, ToolCall
from hscale.harness.tasks import Task


def _env(tmp_path, max_entries: int) -> Env:
    task = Task(task_id="t", user_query="go", input_files={"cat.txt": "plum"},
                checker={"kind": "answer", "expected": "plum"})
    return Env(task, root=tmp_path, limits=Limits(max_entries=max_entries))


def _write(env: Env, path: str):
    return env.execute(ToolCall("write", {"path": path, "text": "x"}))


def _count(env: Env) -> int:
    return sum(1 for _ in env.workspace.rglob("*"))


def test_one_deep_write_cannot_blow_the_entry_cap(tmp_path):
    with _env(tmp_path, max_entries=8) as env:
        deep = "/".join(["d"] * 90) + "/f.txt"  # 186 characters: a legal path
        result = _write(env, deep)
        assert not result.ok and result.error == "too many files"
        assert _count(env) == 1  # nothing was created
        assert _write(env, "a/b/c/d/e/f.txt").ok  # 1 + 6 entries: just fits under 8
        assert _count(env) == 7
        assert _write(env, "a/b/c/d/e/g.txt").ok  # folders that exist cost nothing
        assert not _write(env, "a/b/x/y.txt").ok  # two more would make 10
        assert _write(env, "a/b/c/d/e/f.txt").ok  # replacing a file is always fine
        assert _count(env) == 8


def test_random_writes_never_exceed_the_cap(tmp_path):
    rng = random.Random(0)
    with _env(tmp_path, max_entries=20) as env:
        for _ in range(200):
            depth = rng.randint(1, 12)
            path = "/".join(rng.choice("abc") for _ in range(depth)) + ".txt"
            _write(env, path)
            assert _count(env) <= 20
