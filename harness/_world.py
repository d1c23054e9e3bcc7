"""The built-in benchmark: tiny file-world tasks in a closed vocabulary, with exact checkers.

Five categories, each exercising one capability the papers' behavioural analysis scores:

- ``state_tracking``: follow "see x.txt" pointer files to the last one; answer its word.
- ``observation``: read one cell of a small table file (a second table is a distractor).
- ``multi_step``: read two numbers, ``calc`` their sum or product, write it to ``out.txt``.
- ``error_recovery``: the named file is not where the query says; list, find it, copy its word
  to ``out.txt``.
- ``search``: which file mentions a word; answer the file name.

Convention, stated in each query: ``multi_step`` and ``error_recovery`` are graded on ``out.txt``
only, the others on the final answer only. Texts are short (query <= 25 tokens, files <= 15
tokens, <= 4 files) so a whole episode fits in about 256 tokens. Train and eval are disjoint by
content: a task belongs to the split its content hash selects, whatever the seed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence

import numpy as np

from hscale.errors import HscaleError
from hscale.harness._env import WORDS as ENV_WORDS
from hscale.harness._types import BUILTIN_TOOLS, ToolCall
from hscale.harness.tasks import SPLITS, Task

CATEGORIES = ("state_tracking", "observation", "multi_step", "error_recovery", "search")
MAX_QUERY_TOKENS = 25
MAX_FILE_TOKENS = 15
MAX_FILES = 4

ANIMALS = ("cat", "dog", "fox", "owl", "bee", "ant", "cow", "pig", "hen", "elk", "yak", "bat",
           "rat", "eel", "emu", "ram", "ape", "cod", "jay", "gnu")
FOODS = ("apple", "pear", "plum", "fig", "lime", "lemon", "grape", "melon", "peach", "kiwi",
         "mango", "cherry", "olive", "bean", "corn", "rice", "bread", "cake", "honey", "salt",
         "sugar", "tea", "milk", "jam", "nut")
NAMES = ("ann", "bob", "cal", "dan", "eve", "fay", "gus", "hal", "ivy", "jon", "kim", "lee",
         "max", "ned", "pam", "ray", "sue", "tom", "uma", "val")
COLUMNS = ("age", "score", "size", "cost")
TABLES = ("team", "club", "staff", "crew")
FOLDERS = ("old", "new", "backup", "archive", "misc")

WORDS: tuple[str, ...] = (
    *ANIMALS, *FOODS, *NAMES, *COLUMNS, *TABLES, *FOLDERS, *BUILTIN_TOOLS, "txt", "out",
    "name", "see", "the word is", "the number is", "we keep and",
    "follow the see notes from to the last file . give its word as final answer .",
    "in , what is the of ? give the number as final answer .",
    "add the numbers in and with calc and write the sum to out.txt .",
    "multiply the numbers in and with calc and write the product to out.txt .",
    "read and write its word to out.txt .",
    "which file has the word ? give the file name as final answer .",
    *ENV_WORDS,
)

_Made = tuple[str, dict[str, str], list[ToolCall], str, str]  # query, files, plan, answer, target


def _pick(rng: np.random.Generator, pool: Sequence[str], k: int) -> list[str]:
    return [pool[i] for i in rng.choice(len(pool), size=k, replace=False)]


def _read(path: str) -> ToolCall:
    return ToolCall("read", {"path": path})


def _state_tracking(rng: np.random.Generator) -> _Made:
    hops = int(rng.integers(2, 4))
    stems = _pick(rng, ANIMALS, hops + 1)
    word, other = _pick(rng, FOODS, 2)
    files = {f"{stems[i]}.txt": f"see {stems[i + 1]}.txt" for i in range(hops - 1)}
    files[f"{stems[hops - 1]}.txt"] = f"the word is {word}"
    files[f"{stems[hops]}.txt"] = f"the word is {other}"
    query = (f"follow the see notes from {stems[0]}.txt to the last file . "
             "give its word as final answer .")
    return query, files, [_read(f"{s}.txt") for s in stems[:hops]], word, "final"


def _observation(rng: np.random.Generator) -> _Made:
    table, decoy = _pick(rng, TABLES, 2)
    cols, rows = _pick(rng, COLUMNS, 2), _pick(rng, NAMES, 3)
    values = rng.integers(1, 100, size=(2, 3, 2))
    r, c = int(rng.integers(3)), int(rng.integers(2))
    if values[1, r, c] == values[0, r, c]:
        values[1, r, c] = values[0, r, c] % 99 + 1
    files = {}
    for t, name in enumerate((table, decoy)):
        lines = [f"name {cols[0]} {cols[1]}"]
        lines += [f"{rows[i]} {values[t, i, 0]} {values[t, i, 1]}" for i in range(3)]
        files[f"{name}.txt"] = "\n".join(lines)
    query = (f"in {table}.txt , what is the {cols[c]} of {rows[r]} ? "
             "give the number as final answer .")
    return query, files, [_read(f"{table}.txt")], str(values[0, r, c]), "final"


def _multi_step(rng: np.random.Generator) -> _Made:
    a_stem, b_stem, d_stem = _pick(rng, ANIMALS, 3)
    if rng.random() < 0.5:
        a, b = (int(x) for x in rng.integers(1, 500, size=2))
        verb, noun, op, result = "add", "sum", "+", a + b
    else:
        a = int(rng.integers(2, 32))
        b = int(rng.integers(2, 999 // a + 1))
        verb, noun, op, result = "multiply", "product", "*", a * b
    files = {f"{a_stem}.txt": f"the number is {a}", f"{b_stem}.txt": f"the number is {b}",
             f"{d_stem}.txt": f"the number is {int(rng.integers(1, 100))}"}
    query = (f"{verb} the numbers in {a_stem}.txt and {b_stem}.txt with calc "
             f"and write the {noun} to out.txt .")
    plan = [_read(f"{a_stem}.txt"), _read(f"{b_stem}.txt"),
            ToolCall("calc", {"expr": f"{a} {op} {b}"}),
            ToolCall("write", {"path": "out.txt", "text": str(result)})]
    return query, files, plan, str(result), "file"


def _error_recovery(rng: np.random.Generator) -> _Made:
    stem, d1, d2 = _pick(rng, ANIMALS, 3)
    folder, folder2 = _pick(rng, FOLDERS, 2)
    word, w1, w2 = _pick(rng, FOODS, 3)
    real = f"{folder}/{stem}.txt"
    files = {real: f"the word is {word}", f"{d1}.txt": f"the word is {w1}",
             f"{folder2}/{d2}.txt": f"the word is {w2}"}
    query = f"read {stem}.txt and write its word to out.txt ."
    plan = [_read(f"{stem}.txt"), ToolCall("list", {}), _read(real),
            ToolCall("write", {"path": "out.txt", "text": word})]
    return query, files, plan, word, "file"


def _search(rng: np.random.Generator) -> _Made:
    k = int(rng.integers(3, 5))
    stems, words = _pick(rng, ANIMALS, k), _pick(rng, FOODS, 2 * k)
    files = {f"{s}.txt": f"we keep {words[2 * i]} and {words[2 * i + 1]}"
             for i, s in enumerate(stems)}
    j, side = int(rng.integers(k)), int(rng.integers(2))
    target = words[2 * j + side]
    query = f"which file has the word {target} ? give the file name as final answer ."
    return query, files, [ToolCall("search", {"word": target})], f"{stems[j]}.txt", "final"


_MAKERS: dict[str, Callable[[np.random.Generator], _Made]] = {
    "state_tracking": _state_tracking, "observation": _observation,
    "multi_step": _multi_step, "error_recovery": _error_recovery, "search": _search,
}


def content_key(query: str, files: dict[str, str]) -> str:
    """A task's content identity (query and files), used for split membership and dedup."""
    return json.dumps([query, sorted(files.items())])


def split_of(query: str, files: dict[str, str]) -> str:
    """The split a content belongs to: a fixed hash partition, so splits never share a task."""
    digest = hashlib.sha256(content_key(query, files).encode()).digest()
    return SPLITS[digest[0] & 1]


def task_ids(n: int, seed: int, split: str = "train") -> list[str]:
    """The ids :func:`generate` gives its ``n`` tasks, without building the tasks."""
    return [f"{split}-{seed}-{index:05d}" for index in range(n)]


def generate(n: int, seed: int, split: str = "train",
             categories: Sequence[str] = CATEGORIES) -> list[Task]:
    """``n`` built-in tasks, categories in rotation, deterministic for (seed, split).

    Each task carries its oracle ``solution`` (tool calls) and ``final_answer``.
    """
    if split not in SPLITS:
        raise HscaleError(f"split {split!r} is not one of {SPLITS}")
    unknown = [c for c in categories if c not in _MAKERS]
    if unknown or not categories:
        raise HscaleError(f"unknown task categories {unknown}", f"choose from {CATEGORIES}")
    if not isinstance(seed, int | np.integer) or seed < 0 or n < 0:
        raise HscaleError(f"need n >= 0 and an integer seed >= 0, got n={n}, seed={seed}")
    rng = np.random.default_rng([int(seed), SPLITS.index(split)])
    tasks: list[Task] = []
    seen: set[str] = set()
    attempts = 0
    while len(tasks) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            raise HscaleError(f"could not make {n} distinct {split} tasks",
                              "ask for fewer tasks or more categories")
        category = categories[len(tasks) % len(categories)]
        query, files, plan, answer, target = _MAKERS[category](rng)
        key = content_key(query, files)
        if key in seen or split_of(query, files) != split:
            continue
        seen.add(key)
        index = len(tasks)
        tasks.append(Task(
            task_id=f"{split}-{seed}-{index:05d}", user_query=query, category=category,
            grading_type="code", input_files=dict(sorted(files.items())),
            checker={"kind": "answer", "expected": answer, "target": target,
                     "file": "out.txt"},
            split=split, solution=plan, final_answer=answer,
            metadata={"world": "builtin", "seed": int(seed), "index": index,
                      "graded_on": "out.txt" if target == "file" else "final answer"}))
    return tasks
