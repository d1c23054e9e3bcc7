"""Write the example task set (ClawGym format) to experiments/examples/tasks/.

30 small hand-written tasks in the built-in world's closed vocabulary, in three categories:

- ``files``: read a file and write its word, number or whole content to another file (or give
  its word as final answer): copy- and rename-style chores.
- ``notes``: which note has a word, follow "see x.txt" notes to the last one, count the notes
  with a word, find a note by a word and read its number.
- ``arithmetic``: read numbers from files or a table, add or multiply them with ``calc``, and
  write the result to ``out.txt`` or give it as final answer.

20 tasks are in the train split and 10 in eval; every category is in both. Each query says
what is graded: a workspace file (``out.txt`` or the file the query names) or the final answer.
Each task folder holds ``data_entry.json`` (query, split, oracle solution, final answer),
``input_files/`` and ``reward/reward.py``, a standalone stdlib-only script written from the
template below (it never imports hscale).

Usage: ``python experiments/examples/make_tasks.py [--out DIR]``. It deletes and rewrites the
output folder (default: the ``tasks`` folder next to this script); the output depends on
nothing but this file, so rerunning it gives the same bytes. Before writing it checks the set:
splits, categories, ids and, where hscale is importable, that every text is in the built-in
vocabulary and within the built-in world's size limits.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "tasks"
CATEGORIES = ("files", "notes", "arithmetic")
SPLITS = {"train": 20, "eval": 10}
OUT = "out.txt"


@dataclass(frozen=True)
class Example:
    """One task: what the agent is asked and given, the oracle's calls and what is graded."""

    task_id: str
    split: str
    category: str
    query: str
    files: dict[str, str]
    solution: list[tuple[str, dict[str, str]]]
    answer: str
    graded_file: str | None  # a workspace file, or None: the final answer is graded


def _read(path: str) -> tuple[str, dict[str, str]]:
    return ("read", {"path": path})


def _write(path: str, text: str) -> tuple[str, dict[str, str]]:
    return ("write", {"path": path, "text": text})


def _calc(expr: str) -> tuple[str, dict[str, str]]:
    return ("calc", {"expr": expr})


def _search(word: str) -> tuple[str, dict[str, str]]:
    return ("search", {"word": word})


# ------------------------------------------------------------------------------ files

def word_to_file(tid: str, split: str, src: str, word: str, dst: str,
                 others: dict[str, str]) -> Example:
    """Read ``src`` ("the word is ...") and write its word to ``dst``."""
    return Example(tid, split, "files", f"read {src} and write its word to {dst} .",
                   {src: f"the word is {word}", **others},
                   [_read(src), _write(dst, word)], word, dst)


def number_to_file(tid: str, split: str, src: str, number: int,
                   others: dict[str, str]) -> Example:
    """Read ``src`` ("the number is ...") and write its number to out.txt."""
    return Example(tid, split, "files", f"read {src} and write its number to {OUT} .",
                   {src: f"the number is {number}", **others},
                   [_read(src), _write(OUT, str(number))], str(number), OUT)


def copy_file(tid: str, split: str, src: str, text: str, dst: str,
              others: dict[str, str]) -> Example:
    """Read ``src`` and write its whole content to ``dst`` (a copy, or a move back)."""
    return Example(tid, split, "files", f"read {src} and write its content to {dst} .",
                   {src: text, **others}, [_read(src), _write(dst, text)], text, dst)


def word_answer(tid: str, split: str, src: str, word: str, others: dict[str, str]) -> Example:
    """Read ``src`` and give its word as final answer."""
    return Example(tid, split, "files", f"read {src} and give its word as final answer .",
                   {src: f"the word is {word}", **others}, [_read(src)], word, None)


# ------------------------------------------------------------------------------ notes

def which_file(tid: str, split: str, word: str, files: dict[str, str],
               to_file: bool = False) -> Example:
    """Which note has ``word``: the answer (or out.txt) is the file name."""
    hits = [name for name, text in files.items() if word in text.split()]
    assert len(hits) == 1, (tid, hits)
    tail = f"write the file name to {OUT} ." if to_file else "give the file name as final answer ."
    solution = [_search(word)] + ([_write(OUT, hits[0])] if to_file else [])
    return Example(tid, split, "notes", f"which file has the word {word} ? {tail}", files,
                   solution, hits[0], OUT if to_file else None)


def follow(tid: str, split: str, chain: list[str], word: str, decoy: tuple[str, str],
           to_file: bool = False) -> Example:
    """Follow "see x.txt" notes from ``chain[0]`` to the last one; its word is the answer."""
    files = {chain[i]: f"see {chain[i + 1]}" for i in range(len(chain) - 1)}
    files[chain[-1]] = f"the word is {word}"
    files[decoy[0]] = f"the word is {decoy[1]}"
    head = f"follow the see notes from {chain[0]} to the last file"
    tail = f"and write its word to {OUT} ." if to_file else ". give its word as final answer ."
    solution = [_read(name) for name in chain] + ([_write(OUT, word)] if to_file else [])
    return Example(tid, split, "notes", f"{head} {tail}", files, solution, word,
                   OUT if to_file else None)


def count_files(tid: str, split: str, word: str, files: dict[str, str]) -> Example:
    """In how many notes (one line each) is ``word``: the number is the final answer."""
    count = sum(word in text.split() for text in files.values())
    assert all("\n" not in text for text in files.values())
    return Example(tid, split, "notes",
                   f"in how many files is the word {word} ? give the number as final answer .",
                   files, [_search(word)], str(count), None)


def number_by_word(tid: str, split: str, word: str, notes: dict[str, tuple[str, int]]) -> Example:
    """Find the note that keeps ``word`` (search) and read its number (read)."""
    files = {name: f"we keep {kept}\nthe number is {n}" for name, (kept, n) in notes.items()}
    hits = [name for name, (kept, _) in notes.items() if kept == word]
    assert len(hits) == 1, (tid, hits)
    number = notes[hits[0]][1]
    return Example(tid, split, "notes",
                   f"find the file with the word {word} and give its number as final answer .",
                   files, [_search(word), _read(hits[0])], str(number), None)


# ------------------------------------------------------------------------------ arithmetic

_OPS = {"add": ("+", "sum"), "multiply": ("*", "product")}


def _value(a: int, op: str, b: int) -> int:
    return a + b if op == "+" else a * b


def two_numbers(tid: str, split: str, verb: str, a: tuple[str, int], b: tuple[str, int],
                decoy: tuple[str, int], to_file: bool) -> Example:
    """Add or multiply the numbers in two files (a third is a distractor)."""
    op, noun = _OPS[verb]
    result = str(_value(a[1], op, b[1]))
    files = {name: f"the number is {n}" for name, n in (a, b, decoy)}
    tail = (f"and write the {noun} to {OUT} ." if to_file
            else f". give the {noun} as final answer .")
    solution = [_read(a[0]), _read(b[0]), _calc(f"{a[1]} {op} {b[1]}")]
    solution += [_write(OUT, result)] if to_file else []
    return Example(tid, split, "arithmetic",
                   f"{verb} the numbers in {a[0]} and {b[0]} with calc {tail}", files,
                   solution, result, OUT if to_file else None)


def numbers_in_one_file(tid: str, split: str, src: str, numbers: list[int],
                        others: dict[str, str]) -> Example:
    """Add all the numbers one file lists; write the sum to out.txt."""
    result = str(sum(numbers))
    files = {src: "the numbers are " + " and ".join(map(str, numbers)), **others}
    return Example(tid, split, "arithmetic",
                   f"add the numbers in {src} with calc and write the sum to {OUT} .", files,
                   [_read(src), _calc(" + ".join(map(str, numbers))), _write(OUT, result)],
                   result, OUT)


def table_sum(tid: str, split: str, table: str, columns: tuple[str, str],
              rows: dict[str, tuple[int, int]], column: str, who: tuple[str, str],
              decoy: str) -> Example:
    """Add one column's values for two rows of a table file (a second table is a distractor)."""
    def text(shift: int) -> str:
        lines = [f"name {columns[0]} {columns[1]}"]
        lines += [f"{n} {x + shift} {y + shift}" for n, (x, y) in rows.items()]
        return "\n".join(lines)

    c = columns.index(column)
    a, b = rows[who[0]][c], rows[who[1]][c]
    result = str(a + b)
    return Example(tid, split, "arithmetic",
                   f"in {table} , add the {column} of {who[0]} and {who[1]} with calc . "
                   "give the sum as final answer .",
                   {table: text(0), decoy: text(3)},
                   [_read(table), _calc(f"{a} + {b}")], result, None)


def times_constant(tid: str, split: str, src: str, number: int, factor: int,
                   decoy: tuple[str, int], to_file: bool) -> Example:
    """Multiply the number in ``src`` by a constant the query gives."""
    result = str(number * factor)
    tail = (f"and write the product to {OUT} ." if to_file
            else ". give the product as final answer .")
    solution = [_read(src), _calc(f"{number} * {factor}")]
    solution += [_write(OUT, result)] if to_file else []
    return Example(tid, split, "arithmetic",
                   f"multiply the number in {src} by {factor} with calc {tail}",
                   {src: f"the number is {number}", decoy[0]: f"the number is {decoy[1]}"},
                   solution, result, OUT if to_file else None)


def examples() -> list[Example]:
    """The 30 tasks, in folder order."""
    t, e = "train", "eval"
    files = [
        word_to_file("ex-files-01", t, "pig.txt", "cake", OUT,
                     {"hen.txt": "the word is salt"}),
        copy_file("ex-files-02", t, "owl.txt", "we keep plum and fig", "bat.txt",
                  {"cat.txt": "we keep corn and tea"}),
        word_answer("ex-files-03", t, "emu.txt", "lime",
                    {"ant.txt": "the word is bean", "fox.txt": "the word is kiwi"}),
        copy_file("ex-files-04", t, "old/cow.txt", "the word is honey", "new/cow.txt",
                  {"old/dog.txt": "the word is milk"}),
        number_to_file("ex-files-05", t, "ram.txt", 417, {"elk.txt": "the number is 58"}),
        copy_file("ex-files-06", t, "misc/yak.txt", "we keep pear and nut", "yak.txt",
                  {"misc/bee.txt": "we keep bread and salt"}),
        word_to_file("ex-files-07", t, "backup/gnu.txt", "olive", "gnu.txt",
                     {"backup/eel.txt": "the word is sugar", "gnu.txt": "the word is lemon"}),
        word_to_file("ex-files-08", e, "elk.txt", "mango", OUT,
                     {"ape.txt": "the word is grape"}),
        copy_file("ex-files-09", e, "cod.txt", "we keep rice and jam", "ape.txt",
                  {"rat.txt": "we keep apple and honey"}),
        word_answer("ex-files-10", e, "archive/jay.txt", "cherry",
                    {"archive/owl.txt": "the word is peach", "owl.txt": "the word is nut"}),
    ]
    notes = [
        which_file("ex-notes-01", t, "rice",
                   {"bee.txt": "we keep cake and tea", "dog.txt": "we keep plum and rice",
                    "hen.txt": "we keep corn and fig"}),
        follow("ex-notes-02", t, ["eel.txt", "rat.txt", "owl.txt"], "melon",
               ("cat.txt", "bean")),
        count_files("ex-notes-03", t, "honey",
                    {"ant.txt": "we keep honey and jam", "cow.txt": "we keep salt and honey",
                     "fox.txt": "we keep milk and nut", "pig.txt": "we keep honey and kiwi"}),
        number_by_word("ex-notes-04", t, "lemon",
                       {"bat.txt": ("lemon", 42), "emu.txt": ("sugar", 17),
                        "gnu.txt": ("fig", 305)}),
        which_file("ex-notes-05", t, "grape",
                   {"ape.txt": "we keep grape and bread", "jay.txt": "we keep lime and peach",
                    "yak.txt": "we keep tea and olive"}, to_file=True),
        follow("ex-notes-06", t, ["fox.txt", "bee.txt"], "sugar", ("hen.txt", "corn"),
               to_file=True),
        count_files("ex-notes-07", t, "tea",
                    {"elk.txt": "we keep tea and rice", "ram.txt": "we keep milk and bread",
                     "cod.txt": "we keep apple and cake"}),
        which_file("ex-notes-08", e, "mango",
                   {"cat.txt": "we keep mango and salt", "rat.txt": "we keep jam and cherry",
                    "owl.txt": "we keep nut and plum", "pig.txt": "we keep fig and lemon"}),
        follow("ex-notes-09", e, ["gnu.txt", "ant.txt", "cow.txt"], "apple",
               ("emu.txt", "honey")),
        count_files("ex-notes-10", e, "milk",
                    {"bat.txt": "we keep milk and corn", "dog.txt": "we keep bean and milk",
                     "hen.txt": "we keep salt and cake", "jay.txt": "we keep rice and pear"}),
    ]
    arithmetic = [
        two_numbers("ex-arithmetic-01", t, "add", ("cat.txt", 123), ("dog.txt", 45),
                    ("fox.txt", 9), to_file=True),
        two_numbers("ex-arithmetic-02", t, "multiply", ("bee.txt", 12), ("ant.txt", 31),
                    ("owl.txt", 50), to_file=True),
        two_numbers("ex-arithmetic-03", t, "add", ("pig.txt", 250), ("hen.txt", 311),
                    ("cow.txt", 76), to_file=False),
        numbers_in_one_file("ex-arithmetic-04", t, "yak.txt", [12, 30, 7],
                            {"elk.txt": "the numbers are 5 and 6"}),
        table_sum("ex-arithmetic-05", t, "club.txt", ("age", "score"),
                  {"ann": (31, 12), "bob": (40, 8), "eve": (22, 17)}, "score",
                  ("ann", "eve"), "team.txt"),
        times_constant("ex-arithmetic-06", t, "hen.txt", 43, 6, ("rat.txt", 20), to_file=True),
        two_numbers("ex-arithmetic-07", e, "add", ("ram.txt", 208), ("cow.txt", 379),
                    ("bat.txt", 64), to_file=True),
        two_numbers("ex-arithmetic-08", e, "multiply", ("gnu.txt", 23), ("emu.txt", 17),
                    ("jay.txt", 8), to_file=False),
        table_sum("ex-arithmetic-09", e, "crew.txt", ("size", "cost"),
                  {"kim": (14, 90), "max": (7, 65), "val": (3, 120)}, "cost",
                  ("max", "val"), "staff.txt"),
        times_constant("ex-arithmetic-10", e, "jay.txt", 125, 4, ("ape.txt", 99),
                       to_file=False),
    ]
    return files + notes + arithmetic


# ------------------------------------------------------------------------------ reward script

REWARD_PY = '''"""Reward for example task @TASK_ID@ (written by experiments/examples/make_tasks.py).

Standalone, Python stdlib only. Usage: reward.py WORKSPACE (or env WORKSPACE). The final
answer is read from the file named by env FINAL_ANSWER_FILE, else from env FINAL_ANSWER.
Graded: @WHAT@.
It scores 1.0 when that text equals EXPECTED after lower-casing, re-spacing tokens and
dropping a trailing full stop, else 0.0, and prints the score as its last line.
"""

import os
import re
import sys

EXPECTED = @EXPECTED@
GRADED_FILE = @GRADED_FILE@  # a workspace file, or None: the final answer is graded


def norm(text):
    tokens = re.findall(r"[A-Za-z0-9_]+|[^\\sA-Za-z0-9_]", text.lower())
    while tokens and tokens[-1] == ".":
        tokens.pop()
    return " ".join(tokens)


def final_answer():
    path = os.environ.get("FINAL_ANSWER_FILE")
    if path:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        except OSError:
            return ""
    return os.environ.get("FINAL_ANSWER", "")


def workspace_text(workspace, rel):
    """The start of a workspace file, or None when it is missing or outside the workspace."""
    root = os.path.realpath(workspace)
    path = os.path.realpath(os.path.join(root, rel))
    if not path.startswith(root + os.sep) or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(4096)


def main():
    workspace = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WORKSPACE", ".")
    graded = final_answer() if GRADED_FILE is None else workspace_text(workspace, GRADED_FILE)
    ok = graded is not None and norm(graded) == norm(EXPECTED)
    print(1.0 if ok else 0.0)


if __name__ == "__main__":
    main()
'''


def reward_script(ex: Example) -> str:
    what = f"the workspace file {ex.graded_file}" if ex.graded_file else "the final answer"
    return (REWARD_PY.replace("@TASK_ID@", ex.task_id).replace("@WHAT@", what)
            .replace("@EXPECTED@", json.dumps(ex.answer))
            .replace("@GRADED_FILE@", "None" if ex.graded_file is None
                     else json.dumps(ex.graded_file)))


def data_entry(ex: Example) -> dict:
    return {
        "task_id": ex.task_id, "user_query": ex.query, "input_mount_dir": ".",
        "metadata": {"category": ex.category, "grading_type": "code", "world": "examples",
                     "graded_on": ex.graded_file or "final answer"},
        "split": ex.split,
        "solution": [{"name": name, "args": args} for name, args in ex.solution],
        "final_answer": ex.answer,
    }


# ------------------------------------------------------------------------------ checks

def check(items: list[Example]) -> None:
    """Structural checks (stdlib), then vocabulary and size checks where hscale imports."""
    ids = [ex.task_id for ex in items]
    assert len(set(ids)) == len(ids) == sum(SPLITS.values()), ids
    for split, n in SPLITS.items():
        mine = [ex for ex in items if ex.split == split]
        assert len(mine) == n, (split, len(mine))
        assert {ex.category for ex in mine} == set(CATEGORIES), split
    for ex in items:
        assert ex.task_id.startswith(f"ex-{ex.category}-"), ex.task_id
        assert ex.solution and len(ex.solution) <= 4, ex.task_id
        assert all(len(n) < 1000 for n in ex.answer.split() if n.isdigit()), ex.task_id
        if ex.graded_file is not None:
            assert ex.solution[-1] == _write(ex.graded_file, ex.answer), ex.task_id
    try:
        from hscale.harness._vocab import tokenize, vocabulary
        from hscale.harness._world import MAX_FILE_TOKENS, MAX_FILES, MAX_QUERY_TOKENS
    except ImportError:  # hscale not installed: the test suite checks these
        return
    known = set(vocabulary())

    def out_of_vocabulary(text: str) -> list[str]:
        return [token for token in tokenize(text) if token not in known]

    for ex in items:
        texts = [ex.query, ex.answer, *ex.files, *ex.files.values()]
        texts += [v for _, args in ex.solution for v in args.values()]
        for text in texts:
            assert not out_of_vocabulary(text), (ex.task_id, text, out_of_vocabulary(text))
        assert len(tokenize(ex.query)) <= MAX_QUERY_TOKENS, (ex.task_id, ex.query)
        assert len(ex.files) <= MAX_FILES, ex.task_id
        for text in ex.files.values():
            assert len(tokenize(text)) <= MAX_FILE_TOKENS, (ex.task_id, text)


# ------------------------------------------------------------------------------ writing

def write(items: list[Example], out: Path) -> None:
    """Delete ``out`` (only if it holds nothing but task folders) and write the task folders."""
    if out.exists():
        strangers = [p.name for p in out.iterdir()
                     if not (p.is_dir() and p.name.startswith("task_"))]
        if strangers:
            raise SystemExit(f"{out}: holds {strangers[:3]}, not only task folders; "
                             "not deleting it")
        shutil.rmtree(out)
    for number, ex in enumerate(items, start=1):
        folder = out / f"task_{number:04d}"
        for rel, text in ex.files.items():
            path = folder / "input_files" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
        (folder / "reward").mkdir(parents=True)
        (folder / "reward" / "reward.py").write_bytes(reward_script(ex).encode("utf-8"))
        entry = json.dumps(data_entry(ex), indent=2, sort_keys=True) + "\n"
        (folder / "data_entry.json").write_bytes(entry.encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="output folder (deleted and rewritten); default: %(default)s")
    args = parser.parse_args(argv)
    items = examples()
    check(items)
    write(items, args.out)
    print(f"wrote {len(items)} tasks to {args.out}")
    return 0


if __name__ == "__main__":
    if str(HERE.parent.parent) not in sys.path:  # the repo root, for the vocabulary check
        sys.path.insert(0, str(HERE.parent.parent))
    sys.exit(main())
