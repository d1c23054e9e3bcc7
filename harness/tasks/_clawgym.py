"""ClawGym task folders (``data_entry.json``, ``input_files/``, ``reward/``): loading one into a
Task, and exporting a Task as one whose ``reward/reward.py`` imports nothing from hscale."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from hscale.errors import HscaleError
from hscale.harness.tasks._checkers import score_answer
from hscale.harness.tasks._rows import parse_solution, stored_spec, task_to_row
from hscale.harness.tasks._specs import (  # noqa: F401  (mount_dir_problem: the loaders')
    FOLDER_HINT,
    SYSTEM_FOLDERS,
    mount_dir_problem,
    path_problem,
)
from hscale.harness.tasks._task import Task

MAX_INPUT_FILE_BYTES = 1 << 20
MAX_INPUT_TOTAL_BYTES = 16 << 20
MAX_ENTRY_BYTES = 1 << 20  # a data_entry.json


def load_task_folder(path: str | Path, split: str | None = None) -> Task:
    """Load one ClawGym task folder (``data_entry.json``, ``input_files/``, ``reward/``).

    The reward folder stays outside the workspace; the checker runs ``reward/reward.sh`` (or
    ``reward.py``) as a subprocess. ``split`` overrides the entry's (default "eval").

    Only the folder's own files are read: ``data_entry.json`` and the reward script may be
    symbolic links only to files inside the folder, nothing under ``input_files/`` may be a
    link, and every file read must be a regular one (a FIFO or device is refused, never
    opened). ``data_entry.json`` holds at most ``MAX_ENTRY_BYTES``.
    """
    folder = Path(path)
    entry_path = folder / "data_entry.json"
    if not os.path.lexists(entry_path):
        raise HscaleError(f"{entry_path}: missing", FOLDER_HINT)
    _check_inside(entry_path, folder)
    data = _read_regular(entry_path, MAX_ENTRY_BYTES, "data_entry.json files",
                         "a task description is small; keep big data in input_files/")
    try:
        entry = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HscaleError(f"{entry_path}: not valid JSON ({exc})", FOLDER_HINT) from None
    except RecursionError:
        raise HscaleError(f"{entry_path}: not valid JSON (nested too deeply)",
                          FOLDER_HINT) from None
    try:
        return _entry_task(folder, entry_path, entry, split)
    except RecursionError:  # data json.loads took, nested too deeply for what comes next
        raise HscaleError(f"{entry_path}: nested too deeply", FOLDER_HINT) from None


# Where no task may ask its workspace to be mounted: the system's own folders.
def _entry_task(folder: Path, entry_path: Path, entry: object, split: str | None) -> Task:
    if not isinstance(entry, dict):
        raise HscaleError(f"{entry_path}: must hold a JSON object", FOLDER_HINT)
    for key in ("task_id", "user_query"):
        if key not in entry or entry[key] in ("", None):
            raise HscaleError(f"{entry_path}: field {key!r} is missing or empty", FOLDER_HINT)
        if not isinstance(entry[key], str) or not entry[key].strip():
            raise HscaleError(f"{entry_path}: field {key!r} must be text, not "
                              f"{type(entry[key]).__name__} {entry[key]!r}"[:200], FOLDER_HINT)
    mount_problem = mount_dir_problem(entry.get("input_mount_dir"))
    if mount_problem:
        raise HscaleError(f"{entry_path}: input_mount_dir {mount_problem}", FOLDER_HINT)
    meta = entry.get("metadata", {})
    if not isinstance(meta, dict):
        raise HscaleError(f"{entry_path}: 'metadata' must be an object", FOLDER_HINT)
    script = next((folder / "reward" / name for name in ("reward.sh", "reward.py")
                   if (folder / "reward" / name).is_file()), None)
    if script is None:
        raise HscaleError(f"{folder / 'reward' / 'reward.sh'}: missing (no reward.py either)",
                          FOLDER_HINT)
    _check_inside(script, folder)
    files = _read_input_files(folder / "input_files")
    metadata = {k: v for k, v in meta.items() if k not in ("category", "grading_type")}
    metadata.update(source=str(folder), input_mount_dir=entry.get("input_mount_dir"))
    solution = parse_solution(entry.get("solution", []), str(entry_path))  # names the file
    try:
        return Task(task_id=str(entry["task_id"]), user_query=str(entry["user_query"]),
                    category=str(meta.get("category", "general")),
                    grading_type=str(meta.get("grading_type", "code")),
                    input_files=files,
                    checker=_checker(script, entry.get("input_mount_dir")),
                    split=split or entry.get("split", "eval"), metadata=metadata,
                    solution=solution, final_answer=entry.get("final_answer"))
    except HscaleError as exc:
        if exc.message.startswith(f"{entry_path}:"):
            raise
        raise HscaleError(f"{entry_path}: {exc.message}", exc.hint) from None


def _checker(script: Path, mount: object) -> dict[str, str]:
    """The reward script's spec: run as ClawGym's runner runs it (the workspace shown at the
    entry's absolute ``input_mount_dir``, reward/ copied into it) when there is one, else
    with the workspace as its argument (hscale's own exported folders)."""
    spec = {"kind": "script", "path": str(script.resolve())}
    if isinstance(mount, str) and mount.startswith("/") and script.suffix == ".sh":
        spec["mount"] = str(PurePosixPath(mount))
    return spec


def _check_inside(path: Path, folder: Path) -> None:
    """Refuse ``path`` when it (or a folder on the way, e.g. a linked ``reward/``) is a
    symbolic link that leads out of the task folder ``folder``."""
    try:
        target, root = path.resolve(strict=True), folder.resolve(strict=True)
    except (OSError, RuntimeError):  # a dangling or looping link
        raise HscaleError(f"{path}: a symbolic link that leads nowhere",
                          "copy the file into the task folder") from None
    if not target.is_relative_to(root):
        raise HscaleError(f"{path}: a symbolic link to {target}, outside the task folder",
                          "copy the file into the task folder")


def _read_regular(path: Path, limit: int, what: str, hint: str) -> bytes:
    """The bytes of the regular file ``path`` (links followed), at most ``limit`` of them.

    Anything else (a FIFO, socket or device) is refused before it is opened, so it can never
    block the read; the open is non-blocking and checked again in case the file was swapped.
    """
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise HscaleError(f"{path}: not a regular file", "task files are plain files")
        if info.st_size > limit:
            raise HscaleError(f"{path}: {info.st_size} bytes, more than the {limit} allowed "
                              f"for {what}", hint)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise HscaleError(f"{path}: not a regular file", "task files are plain files")
            data = handle.read(limit + 1)
    except OSError as exc:
        raise HscaleError(f"{path}: cannot read ({exc.strerror or exc})",
                          "check the file and its permissions") from None
    if len(data) > limit:
        raise HscaleError(f"{path}: more than the {limit} bytes allowed for {what}", hint)
    return data


def _read_input_files(root: Path) -> dict[str, str]:
    """Text of every file under ``root`` (bytes kept exactly via surrogateescape).

    Walks without following links: ``root`` itself, a folder under it or a file that is a
    symbolic link is refused (it could bring in files from outside the task folder), and so is
    anything that is neither a folder nor a regular file (a FIFO would block the read).
    """
    files: dict[str, str] = {}
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        return files
    except OSError as exc:
        raise HscaleError(f"{root}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISLNK(info.st_mode):
        raise HscaleError(f"{root}: symbolic links are not allowed in input_files",
                          "make input_files a real folder and copy the files into it")
    if not stat.S_ISDIR(info.st_mode):
        raise HscaleError(f"{root}: not a folder", FOLDER_HINT)
    total = 0
    for path, size in _walk(root, root):
        total += size
        if size > MAX_INPUT_FILE_BYTES or total > MAX_INPUT_TOTAL_BYTES:
            raise HscaleError(f"{path}: input files are too large (limit "
                              f"{MAX_INPUT_FILE_BYTES} bytes a file, "
                              f"{MAX_INPUT_TOTAL_BYTES} in all)", "keep task inputs small")
        data = _read_regular(path, MAX_INPUT_FILE_BYTES, "an input file",
                             "keep task inputs small")
        files[path.relative_to(root).as_posix()] = data.decode("utf-8", "surrogateescape")
    return files


def _walk(folder: Path, root: Path) -> Iterator[tuple[Path, int]]:
    """``(path, size)`` of the regular files under ``folder``, sorted, never following a link;
    refuses links, files that are not regular and paths (folders too) the workspace would
    refuse, which also bounds how deep this recursion goes."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise HscaleError(f"{folder}: cannot read ({exc.strerror or exc})") from None
    for name in names:
        path = folder / name
        problem = path_problem(path.relative_to(root).as_posix())
        if problem:
            raise HscaleError(f"{path}: {problem}", "shorten the input file's path")
        try:
            info = os.lstat(path)
        except OSError as exc:
            raise HscaleError(f"{path}: cannot read ({exc.strerror or exc})") from None
        if stat.S_ISLNK(info.st_mode):
            raise HscaleError(f"{path}: symbolic links are not allowed in input_files",
                              "copy the file (or folder) instead")
        if stat.S_ISDIR(info.st_mode):
            yield from _walk(path, root)
        elif stat.S_ISREG(info.st_mode):
            yield path, info.st_size
        else:
            raise HscaleError(f"{path}: not a regular file (a FIFO, socket or device)",
                              "input files are plain files")


_REWARD_PY = '''"""Reward for task {task_id}, written by hscale. Standalone: Python stdlib only.

Usage: reward.py WORKSPACE (or env WORKSPACE); the final answer is read from the file named
by env FINAL_ANSWER_FILE, else taken from env FINAL_ANSWER. Prints one float in [0, 1].
"""

from __future__ import annotations

import json
import os
import sys

SPEC = json.loads({spec!r})


{source}

if __name__ == "__main__":
    workspace = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WORKSPACE", ".")
    answer = os.environ.get("FINAL_ANSWER", "")
    if os.environ.get("FINAL_ANSWER_FILE"):
        with open(os.environ["FINAL_ANSWER_FILE"], encoding="utf-8", errors="replace") as f:
            answer = f.read()
    print(score_answer(SPEC, workspace, answer))
'''


def write_task_folder(task: Task, directory: str | Path) -> Path:
    """Export ``task`` as the ClawGym folder ``directory/<task_id>`` and return its path.

    An "answer" checker becomes a self-contained ``reward/reward.py``; a script checker is
    copied. The solution and split travel in data_entry.json (never into the workspace).
    """
    checker = stored_spec(task, "exported")
    if checker["kind"] not in ("answer", "script"):
        raise HscaleError(f"task {task.task_id}: a {checker['kind']} checker has no ClawGym "
                          "reward script", "save such tasks as a .jsonl or .parquet list")
    folder = Path(directory) / task.task_id
    if folder.exists():
        raise HscaleError(f"{folder}: already exists", "export into an empty folder")
    (folder / "reward").mkdir(parents=True)
    for rel, text in task.input_files.items():
        target = folder / "input_files" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8", "surrogateescape"))
    if checker["kind"] == "answer":
        reward = _REWARD_PY.format(task_id=task.task_id,
                                   spec=json.dumps(checker, sort_keys=True),
                                   source=inspect.getsource(score_answer))
        (folder / "reward" / "reward.py").write_text(reward, encoding="utf-8")
    else:
        script = Path(checker["path"])
        shutil.copy2(script, folder / "reward" / f"reward{script.suffix}")
    row = task_to_row(task)
    entry = {"task_id": task.task_id, "user_query": task.user_query, "input_mount_dir": ".",
             "metadata": {**task.metadata, "category": task.category,
                          "grading_type": task.grading_type},
             "split": task.split, "solution": row["solution"], "final_answer": task.final_answer}
    (folder / "data_entry.json").write_text(json.dumps(entry, indent=2, sort_keys=True) + "\n",
                                            encoding="utf-8")
    return folder
