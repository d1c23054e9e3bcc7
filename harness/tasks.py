"""Tasks: a query, the files the agent starts with, and a programmatic checker.

A checker is either a Python callable ``(workspace, final_answer) -> float`` or a *spec*, a small
JSON-able dict, so task lists can be stored as JSONL/parquet and exported as ClawGym folders:

- ``{"kind": "answer", "expected": "plum", "target": "final" | "file" | "both",
  "file": "out.txt"}``: the final answer and/or a workspace file must equal ``expected`` (after
  lower-casing and re-spacing tokens, a trailing full stop ignored); "both" gives half each.
- ``{"kind": "script", "path": "/abs/reward/reward.sh"}``: a ClawGym reward script, run as a
  subprocess with the workspace as argument and env vars WORKSPACE and FINAL_ANSWER; the last
  line of its stdout is the reward, a float in [0, 1].

Loaders: :func:`load_task_folder` (one ClawGym ``task_XXXX`` folder), :func:`load_tasks` (a folder
of task folders, a ``.jsonl`` or a ``.parquet`` task list). Bad task data raises HscaleError
naming the file. :func:`write_task_folder` exports a task as a ClawGym folder whose
``reward/reward.py`` imports nothing from hscale.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.types import CANONICAL_TOOLS, ToolCall
from hscale.errors import HscaleError

SPLITS = ("train", "eval")
TARGETS = ("final", "file", "both")
MAX_PATH_CHARS = 200
MAX_INPUT_FILE_BYTES = 1 << 20
MAX_INPUT_TOTAL_BYTES = 16 << 20
FOLDER_HINT = ("a ClawGym task folder holds data_entry.json (task_id, user_query, metadata), "
               "input_files/ and reward/reward.sh or reward/reward.py")

_TASK_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")

Checker = Callable[[Path, str], float] | dict[str, Any]


@dataclass(kw_only=True)
class Task:
    """One task. ``solution``/``final_answer`` are an oracle's plan, when the task has one."""

    task_id: str
    user_query: str
    category: str = "general"
    grading_type: str = "code"
    input_files: dict[str, str] = field(default_factory=dict)
    checker: Checker
    split: str = "train"
    metadata: dict[str, Any] = field(default_factory=dict)
    solution: list[ToolCall] = field(default_factory=list)
    final_answer: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.task_id, str) or not _TASK_ID.fullmatch(self.task_id):
            raise HscaleError(f"task id {self.task_id!r} is not a safe name",
                              "use letters, digits, '_', '-' and '.', starting with a letter "
                              "or digit")
        if not isinstance(self.user_query, str) or not self.user_query.strip():
            raise HscaleError(f"task {self.task_id}: user_query is empty",
                              "give the question the agent must answer")
        if self.split not in SPLITS:
            raise HscaleError(f"task {self.task_id}: split {self.split!r} is not one of {SPLITS}")
        if not isinstance(self.input_files, dict):
            raise HscaleError(f"task {self.task_id}: input_files must map paths to text")
        for rel, text in self.input_files.items():
            problem = path_problem(rel)
            if problem or not isinstance(text, str):
                raise HscaleError(f"task {self.task_id}: input file {rel!r}: "
                                  f"{problem or 'content is not text'}",
                                  "input files are relative paths inside the workspace, "
                                  "mapped to their text")
        if not callable(self.checker):
            self.checker = check_spec(self.checker)
        for call in self.solution:
            if not isinstance(call, ToolCall):
                raise HscaleError(f"task {self.task_id}: solution steps must be ToolCall")

    def check(self, workspace: Path, final_answer: str, timeout: float = 10.0) -> float:
        """The reward in [0, 1] for a finished workspace and final answer."""
        return run_checker(self.checker, workspace, final_answer, timeout=timeout)


# ---------------------------------------------------------------------------- paths and specs


def path_problem(rel: object, max_chars: int = MAX_PATH_CHARS) -> str | None:
    """Why a relative workspace path is unsafe (a short message in the world's words), or None."""
    if not isinstance(rel, str) or not rel.strip():
        return "path is empty"
    if "\x00" in rel:
        return "bad path"
    if len(rel) > max_chars:
        return "path is too long"
    if rel.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", rel):
        return "path must be relative"
    if ".." in re.split(r"[/\\]", rel):
        return "path leaves the workspace"
    return None


def check_spec(spec: object, where: str = "checker") -> dict[str, Any]:
    """Validate a checker spec and return a normalised copy."""
    hint = ('use {"kind": "answer", "expected": ..., "target": "final"|"file"|"both"} '
            'or {"kind": "script", "path": ...}')
    if not isinstance(spec, dict):
        raise HscaleError(f"{where}: checker must be a spec dict or a callable, "
                          f"got {type(spec).__name__}", hint)
    kind = spec.get("kind")
    if kind == "answer":
        expected, target = spec.get("expected"), spec.get("target", "final")
        out_file = spec.get("file", "out.txt")
        if not isinstance(expected, str) or not expected.strip():
            raise HscaleError(f"{where}: answer checker needs a non-empty 'expected' text", hint)
        if target not in TARGETS:
            raise HscaleError(f"{where}: answer target {target!r} is not one of {TARGETS}", hint)
        if path_problem(out_file):
            raise HscaleError(f"{where}: answer file {out_file!r}: {path_problem(out_file)}")
        return {"kind": "answer", "expected": expected, "target": target, "file": out_file}
    if kind == "script":
        path = spec.get("path")
        if not isinstance(path, str) or Path(path).suffix not in (".sh", ".py"):
            raise HscaleError(f"{where}: script checker needs a 'path' to a .sh or .py file",
                              hint)
        return {"kind": "script", "path": path}
    raise HscaleError(f"{where}: unknown checker kind {kind!r}", hint)


# ---------------------------------------------------------------------------- checking


def score_answer(spec: dict, workspace: str, final_answer: str) -> float:
    """Score an "answer" spec. Stdlib only: its source is embedded in exported reward.py files."""
    import os
    import re

    def norm(text: str) -> str:
        tokens = re.findall(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]", text.lower())
        while tokens and tokens[-1] == ".":
            tokens.pop()
        return " ".join(tokens)

    expected = norm(spec["expected"])
    final_ok = norm(final_answer or "") == expected
    file_ok = False
    if spec.get("target", "final") != "final":
        root = os.path.realpath(workspace)
        path = os.path.realpath(os.path.join(root, spec.get("file", "out.txt")))
        if path.startswith(root + os.sep) and os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as handle:
                file_ok = norm(handle.read(4096)) == expected
    target = spec.get("target", "final")
    if target == "final":
        return float(final_ok)
    if target == "file":
        return float(file_ok)
    return (final_ok + file_ok) / 2


class _Worker:
    """A daemon thread that runs jobs for one calling thread, one at a time.

    Starting a thread per call cost more than most tools do; a stuck job cannot be killed, so
    its worker is abandoned (it is a daemon) and the caller's next call gets a fresh one.
    """

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._loop, daemon=True, name="hscale-limited").start()

    def _loop(self) -> None:
        while True:
            fn, done, box = self.jobs.get()
            try:
                box["value"] = fn()
            except BaseException as exc:  # re-raised in the caller's thread
                box["error"] = exc
            done.set()


_workers = threading.local()


def call_with_timeout(fn: Callable[[], Any], seconds: float) -> Any:
    """Run ``fn`` on this thread's worker; raise TimeoutError if it runs past ``seconds``."""
    worker = getattr(_workers, "worker", None)
    if worker is None:
        worker = _workers.worker = _Worker()
    done, box = threading.Event(), {}
    worker.jobs.put((fn, done, box))
    if not done.wait(seconds):
        _workers.worker = None  # abandon the stuck worker
        raise TimeoutError(f"still running after {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def run_checker(checker: Checker, workspace: Path, final_answer: str | None,
                timeout: float = 10.0) -> float:
    """Run a checker (callable or spec) under a wall-clock limit; return a reward in [0, 1].

    A checker that fails, times out or returns something outside [0, 1] is a task-data bug and
    raises HscaleError rather than silently scoring 0.
    """
    workspace, answer = Path(workspace), final_answer or ""
    if callable(checker):
        name = getattr(checker, "__name__", "checker")
        try:
            value = call_with_timeout(lambda: checker(workspace, answer), timeout)
        except TimeoutError:
            raise HscaleError(f"checker {name} took longer than {timeout:g} s",
                              "make the checker faster or raise the time limit") from None
        return _reward_value(value, f"checker {name}")
    spec = check_spec(checker)
    if spec["kind"] == "answer":
        return score_answer(spec, str(workspace), answer)
    return _run_script(Path(spec["path"]), workspace, answer, timeout)


def _reward_value(value: object, where: str) -> float:
    try:
        reward = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise HscaleError(f"{where} returned {value!r}, not a number",
                          "a checker returns one float in [0, 1]") from None
    if math.isnan(reward) or not 0.0 <= reward <= 1.0:
        raise HscaleError(f"{where} returned {reward}, outside [0, 1]",
                          "a checker returns one float in [0, 1]")
    return reward


def _run_script(script: Path, workspace: Path, answer: str, timeout: float) -> float:
    if not script.is_file():
        raise HscaleError(f"{script}: reward script not found", FOLDER_HINT)
    cmd = ["bash", str(script)] if script.suffix == ".sh" else [sys.executable, str(script)]
    env = {**os.environ, "WORKSPACE": str(workspace), "FINAL_ANSWER": answer}
    proc = subprocess.Popen([*cmd, str(workspace)], cwd=script.parent, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the script and anything it started
        proc.communicate()
        raise HscaleError(f"{script}: reward script ran longer than {timeout:g} s",
                          "make it faster or raise the checker time limit") from None
    if proc.returncode != 0:
        tail = " ".join(err.strip().splitlines()[-3:])[-300:]
        raise HscaleError(f"{script}: reward script exited with {proc.returncode}: {tail}",
                          "run it by hand with the workspace path as argument")
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if not lines:
        raise HscaleError(f"{script}: reward script printed nothing",
                          "print one float in [0, 1] as the last line")
    return _reward_value(lines[-1], f"{script}")


# ---------------------------------------------------------------------------- loading


def load_task_folder(path: str | Path, split: str | None = None) -> Task:
    """Load one ClawGym task folder (``data_entry.json``, ``input_files/``, ``reward/``).

    The reward folder stays outside the workspace; the checker runs ``reward/reward.sh`` (or
    ``reward.py``) as a subprocess. ``split`` overrides the entry's (default "eval").
    """
    folder = Path(path)
    entry_path = folder / "data_entry.json"
    if not entry_path.is_file():
        raise HscaleError(f"{entry_path}: missing", FOLDER_HINT)
    try:
        entry = json.loads(entry_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HscaleError(f"{entry_path}: not valid JSON ({exc})", FOLDER_HINT) from None
    if not isinstance(entry, dict):
        raise HscaleError(f"{entry_path}: must hold a JSON object", FOLDER_HINT)
    for key in ("task_id", "user_query"):
        if not isinstance(entry.get(key), str | int) or not str(entry[key]).strip():
            raise HscaleError(f"{entry_path}: field {key!r} is missing or empty", FOLDER_HINT)
    meta = entry.get("metadata", {})
    if not isinstance(meta, dict):
        raise HscaleError(f"{entry_path}: 'metadata' must be an object", FOLDER_HINT)
    script = next((folder / "reward" / name for name in ("reward.sh", "reward.py")
                   if (folder / "reward" / name).is_file()), None)
    if script is None:
        raise HscaleError(f"{folder / 'reward' / 'reward.sh'}: missing (no reward.py either)",
                          FOLDER_HINT)
    files = _read_input_files(folder / "input_files")
    metadata = {k: v for k, v in meta.items() if k not in ("category", "grading_type")}
    metadata.update(source=str(folder), input_mount_dir=entry.get("input_mount_dir"))
    try:
        return Task(task_id=str(entry["task_id"]), user_query=str(entry["user_query"]),
                    category=str(meta.get("category", "general")),
                    grading_type=str(meta.get("grading_type", "code")),
                    input_files=files,
                    checker={"kind": "script", "path": str(script.resolve())},
                    split=split or entry.get("split", "eval"), metadata=metadata,
                    solution=_solution(entry.get("solution", []), str(entry_path)),
                    final_answer=entry.get("final_answer"))
    except HscaleError as exc:
        raise HscaleError(f"{entry_path}: {exc.message}", exc.hint) from None


def _read_input_files(root: Path) -> dict[str, str]:
    """Text of every file under ``root`` (bytes kept exactly via surrogateescape)."""
    files: dict[str, str] = {}
    if not root.exists():
        return files
    total = 0
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            raise HscaleError(f"{path}: symbolic links are not allowed in input_files",
                              "copy the file instead")
        if path.is_dir():
            continue
        size = path.stat().st_size
        total += size
        if size > MAX_INPUT_FILE_BYTES or total > MAX_INPUT_TOTAL_BYTES:
            raise HscaleError(f"{path}: input files are too large (limit "
                              f"{MAX_INPUT_FILE_BYTES} bytes a file, "
                              f"{MAX_INPUT_TOTAL_BYTES} in all)", "keep task inputs small")
        rel = path.relative_to(root).as_posix()
        problem = path_problem(rel)
        if problem:
            raise HscaleError(f"{path}: {problem}", "shorten the input file's path")
        files[rel] = path.read_bytes().decode("utf-8", "surrogateescape")
    return files


def _solution(raw: object, where: str) -> list[ToolCall]:
    if not isinstance(raw, list):
        raise HscaleError(f"{where}: 'solution' must be a list of tool calls")
    calls = []
    for step in raw:
        if (not isinstance(step, dict) or step.get("name") not in CANONICAL_TOOLS
                or not isinstance(step.get("args", {}), dict)):
            raise HscaleError(f"{where}: bad solution step {step!r}",
                              'write steps as {"name": "read", "args": {"path": "a.txt"}}')
        calls.append(ToolCall(step["name"], {str(k): str(v) for k, v in
                                             step.get("args", {}).items()}))
    return calls


def load_tasks(path: str | Path) -> list[Task]:
    """Load tasks from a folder of ClawGym task folders (or one), a .jsonl or a .parquet list."""
    path = Path(path)
    if path.is_dir():
        if (path / "data_entry.json").is_file():
            return [load_task_folder(path)]
        folders = sorted(p for p in path.iterdir() if (p / "data_entry.json").is_file())
        if not folders:
            raise HscaleError(f"{path}: no task folders (none holds data_entry.json)",
                              FOLDER_HINT)
        return [load_task_folder(p) for p in folders]
    if not path.is_file():
        raise HscaleError(f"{path}: no such file or folder",
                          "give a folder of task folders, a .jsonl or a .parquet task list")
    if path.suffix == ".jsonl":
        rows = []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rows.append((f"{path}: line {lineno}", json.loads(line)))
            except json.JSONDecodeError as exc:
                raise HscaleError(f"{path}: line {lineno}: not valid JSON ({exc.msg})",
                                  "write one JSON object per line") from None
    elif path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path).to_pylist()
        except Exception as exc:  # any reader failure: a bad file
            raise HscaleError(f"{path}: cannot read parquet ({exc})") from None
        rows = [(f"{path}: row {i}", row) for i, row in enumerate(table)]
    else:
        raise HscaleError(f"{path}: unknown task list format {path.suffix!r}",
                          "use .jsonl, .parquet or a folder of ClawGym task folders")
    tasks = [task_from_row(row, where, base=path.parent) for where, row in rows]
    seen: set[str] = set()
    for task in tasks:
        if task.task_id in seen:
            raise HscaleError(f"{path}: task id {task.task_id!r} appears twice")
        seen.add(task.task_id)
    return tasks


def task_from_row(row: object, where: str, base: Path | None = None) -> Task:
    """Build a Task from a list row; nested fields may be objects or JSON strings."""
    hint = "rows need task_id, user_query, input_files (path -> text) and a checker spec"
    if not isinstance(row, dict):
        raise HscaleError(f"{where}: a row must be an object", hint)

    def nested(key: str, default: Any) -> Any:
        value = row.get(key)
        if value is None:
            return default
        if isinstance(value, str) and key != "final_answer":
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise HscaleError(f"{where}: field {key!r} is not valid JSON", hint) from None
        return value

    for key in ("task_id", "user_query", "checker"):
        if row.get(key) in (None, ""):
            raise HscaleError(f"{where}: field {key!r} is missing", hint)
    checker = nested("checker", None)
    if isinstance(checker, dict) and checker.get("kind") == "script" and base is not None:
        script = Path(str(checker.get("path", "")))
        checker = {**checker, "path": str(script if script.is_absolute() else base / script)}
    try:
        return Task(task_id=str(row["task_id"]), user_query=row["user_query"],
                    category=row.get("category") or "general",
                    grading_type=row.get("grading_type") or "code",
                    input_files=nested("input_files", {}), checker=check_spec(checker, where),
                    split=row.get("split") or "train", metadata=nested("metadata", {}),
                    solution=_solution(nested("solution", []), where),
                    final_answer=row.get("final_answer"))
    except HscaleError as exc:
        if exc.message.startswith(where):
            raise
        raise HscaleError(f"{where}: {exc.message}", exc.hint) from None


# ---------------------------------------------------------------------------- writing


def task_to_row(task: Task) -> dict[str, Any]:
    """A JSON-able row for a task list (the checker must be a spec, not a callable)."""
    if callable(task.checker):
        raise HscaleError(f"task {task.task_id}: a callable checker cannot be stored",
                          "give the task a checker spec dict")
    return {"task_id": task.task_id, "user_query": task.user_query, "category": task.category,
            "grading_type": task.grading_type, "input_files": dict(task.input_files),
            "checker": dict(task.checker), "split": task.split, "metadata": task.metadata,
            "solution": [{"name": c.name, "args": dict(c.args)} for c in task.solution],
            "final_answer": task.final_answer}


def write_tasks(tasks: Iterable[Task], path: str | Path) -> Path:
    """Write a .jsonl or .parquet task list atomically (nested fields as JSON in parquet)."""
    path = Path(path)
    rows = [task_to_row(t) for t in tasks]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        if path.suffix == ".jsonl":
            Path(tmp).write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows),
                                 encoding="utf-8")
        elif path.suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            nested = ("input_files", "checker", "metadata", "solution")
            flat = [{k: json.dumps(v, sort_keys=True) if k in nested else v
                     for k, v in r.items()} for r in rows]
            pq.write_table(pa.Table.from_pylist(flat), tmp)
        else:
            raise HscaleError(f"{path}: unknown task list format {path.suffix!r}",
                              "use .jsonl or .parquet")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


_REWARD_PY = '''"""Reward for task {task_id}, written by hscale. Standalone: Python stdlib only.

Usage: reward.py WORKSPACE (or env WORKSPACE); the final answer comes in env FINAL_ANSWER.
Prints one float in [0, 1].
"""

from __future__ import annotations

import json
import os
import sys

SPEC = json.loads({spec!r})


{source}

if __name__ == "__main__":
    workspace = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WORKSPACE", ".")
    print(score_answer(SPEC, workspace, os.environ.get("FINAL_ANSWER", "")))
'''


def write_task_folder(task: Task, directory: str | Path) -> Path:
    """Export ``task`` as the ClawGym folder ``directory/<task_id>`` and return its path.

    An "answer" checker becomes a self-contained ``reward/reward.py``; a script checker is
    copied. The solution and split travel in data_entry.json (never into the workspace).
    """
    if callable(task.checker):
        raise HscaleError(f"task {task.task_id}: a callable checker cannot be exported",
                          "give the task a checker spec dict")
    folder = Path(directory) / task.task_id
    if folder.exists():
        raise HscaleError(f"{folder}: already exists", "export into an empty folder")
    (folder / "reward").mkdir(parents=True)
    for rel, text in task.input_files.items():
        target = folder / "input_files" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8", "surrogateescape"))
    if task.checker["kind"] == "answer":
        reward = _REWARD_PY.format(task_id=task.task_id,
                                   spec=json.dumps(task.checker, sort_keys=True),
                                   source=inspect.getsource(score_answer))
        (folder / "reward" / "reward.py").write_text(reward, encoding="utf-8")
    else:
        script = Path(task.checker["path"])
        shutil.copy2(script, folder / "reward" / f"reward{script.suffix}")
    row = task_to_row(task)
    entry = {"task_id": task.task_id, "user_query": task.user_query, "input_mount_dir": ".",
             "metadata": {**task.metadata, "category": task.category,
                          "grading_type": task.grading_type},
             "split": task.split, "solution": row["solution"], "final_answer": task.final_answer}
    (folder / "data_entry.json").write_text(json.dumps(entry, indent=2, sort_keys=True) + "\n",
                                            encoding="utf-8")
    return folder
