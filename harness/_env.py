"""The sandboxed task environment: a fresh workspace and the canonical tools acting inside it.

Model tool calls are untrusted input. Every path is checked twice: lexically (relative, no
``..``, no NUL, short) and after resolving symlinks (it must stay under the workspace); files
are opened with O_NOFOLLOW. Writes, outputs, file counts and ``calc`` numbers are capped; the
built-in tools are bounded by construction, ``run`` (the shell, for the real formats' tasks)
by its own jail and time limit, any replacement runs under a wall-clock watchdog; errors come
back as ``ToolResult(ok=False)`` with short messages in the built-in world's words.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hscale.errors import HscaleError
from hscale.harness._types import (
    BUILTIN_TOOLS,
    CANONICAL_TOOLS,
    OPTIONAL_ARGS,
    ToolCall,
    ToolResult,
)
from hscale.harness._vocab import tokenize
from hscale.harness._workspaces import default_root
from hscale.harness.tasks import (
    CheckerError,
    Task,
    call_with_timeout,
    containment,
    path_problem,
    plain_env,
    remove_entry,
    run_checker,
    run_limited,
)

# Words of the messages below; hscale.harness._world adds them to the vocabulary.
WORDS = (
    "unknown tool tools are expects args no arg must be text",
    "path is empty bad too long relative leaves the workspace points outside",
    "no file is a folder not plain file files has other links many big",
    "wrote no files no file has word empty",
    "expr is too long bad expr use whole numbers and + - * / // % only",
    "division by zero number too big",
    "took too long and was stopped failed",
    "cut output too long",
)

TRUNCATION_MARKER = "\n[cut : output too long]"
WINDOW_NOTE_ROOM = 120  # characters (and the path's) a window keeps to say where it was cut

_CALC_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
             ast.Div: int.__floordiv__, ast.FloorDiv: int.__floordiv__, ast.Mod: int.__mod__}


class ToolError(Exception):
    """A tool refused or failed; the message is shown to the model."""


@dataclass(frozen=True)
class Limits:
    """Time and size limits of one environment."""

    tool_seconds: float = 2.0
    checker_seconds: float = 10.0
    max_write_bytes: int = 4096
    max_output_chars: int = 400
    max_read_bytes: int = 65536
    max_entries: int = 64          # files and folders in the workspace
    max_path_chars: int = 200
    max_word_chars: int = 50
    calc_max_chars: int = 100
    calc_max_nodes: int = 64
    calc_max_abs: int = 10**6
    run_seconds: float = 10.0      # a shell command's wall clock (and CPU) limit

    @classmethod
    def of(cls, task: Task) -> Limits:
        """The limits a task's benchmark set (``Task.limits``), the defaults elsewhere."""
        return cls(**{k: v for k, v in task.limits.items() if k != "max_turns"})


MAX_COMMAND_BYTES = 100_000  # under the kernel's 128 KiB for one argument
CUT_NOTE_ROOM = 30  # characters of a stream's "[N characters cut]" line
MAX_WORKSPACE_BYTES = 512 << 20  # what a workspace may hold after a command


def _end(text: str, room: int) -> str:
    """The last ``room`` characters of ``text``, saying how much came before."""
    if len(text) <= room:
        return text
    return f"[{len(text) - room} characters cut]\n" + text[len(text) - room:]


def untouched_reward(task: Task, limits: Limits | None = None) -> float:
    """The task's checker on its untouched workspace, as an episode that ends at once is
    scored (no answer, the query its transcript); a failing checker raises CheckerError.
    What validation and ``hscale tasks check`` run to find a checker that crashes."""
    with Env(task, limits=limits) as env:
        return env.reward("", [{"role": "user", "content": task.user_query}])


def _has_link(workspace: Path, path: Path) -> bool:
    """Whether a part of ``path`` below ``workspace`` (itself resolved, so free of links)
    is a symbolic link. A path without one is its own resolution (its parts hold no ``..``:
    :func:`path_problem` refuses them), so only a path with one pays :meth:`Path.resolve`,
    which checks every part from the root. A part that is missing, or below a file, is no
    link, as :func:`os.path.realpath` takes it."""
    here = str(workspace)
    for part in path.relative_to(workspace).parts:
        here = os.path.join(here, part)
        try:
            if stat.S_ISLNK(os.lstat(here).st_mode):
                return True
        except OSError:
            return False  # nothing exists below a missing part
    return False


class Env:
    """A task's workspace (a new temporary folder under ``root``, by default
    :func:`default_root`) and its tools.

    Use as a context manager, or call :meth:`close`, to delete the workspace.
    ``tools`` maps each canonical tool name to its implementation (replaceable, e.g. in tests).
    """

    def __init__(self, task: Task, root: str | Path | None = None,
                 limits: Limits | None = None) -> None:
        self.task = task
        self.limits = limits or Limits.of(task)
        root = default_root() if root is None else root
        if root is not None:
            Path(root).mkdir(parents=True, exist_ok=True)
        self.workspace = Path(tempfile.mkdtemp(prefix="hscale-ws-", dir=root)).resolve()
        self.closed = False
        self.checker_error = ""  # the short error of the last failed :meth:`score`
        self.tools: dict[str, Callable[..., str]] = {
            "list": self._list, "read": self._read, "write": self._write,
            "search": self._search, "calc": self._calc, "run": self._run,
        }
        # The built-in tools are bounded by construction (size, entry and step limits), so
        # they run inline; any other implementation runs under the wall-clock watchdog.
        self._bounded = dict(self.tools)
        try:
            self._setup()
        except BaseException:
            self.close()
            raise

    def _setup(self) -> None:
        for rel, text in self.task.input_files.items():
            try:
                self._create(rel, text.encode("utf-8", "surrogateescape"), setup=True)
            except (ToolError, OSError) as exc:
                raise HscaleError(f"task {self.task.task_id}: cannot create input file {rel!r} "
                                  f"({exc})", "give input files distinct, valid paths") from None

    def __enter__(self) -> Env:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Delete the workspace (symlinks are removed, never followed)."""
        if not self.closed:
            self.closed = True
            try:
                remove_entry(self.workspace)
            except OSError:
                shutil.rmtree(self.workspace, ignore_errors=True)

    # ------------------------------------------------------------------------ public API

    def execute(self, call: ToolCall) -> ToolResult:
        """Run one canonical tool call; any problem becomes an error result, never an exception."""
        if self.closed:
            raise RuntimeError("the environment is closed")
        expected = CANONICAL_TOOLS.get(call.name)
        impl = self.tools.get(call.name)
        if expected is None or impl is None or call.name not in self.task.tools:
            return ToolResult(False, error=f"unknown tool {str(call.name)[:40]} ; tools are "
                              + " , ".join(self.task.tools))
        args = call.args if isinstance(call.args, dict) else {}
        optional = OPTIONAL_ARGS.get(call.name, ())
        if (not set(expected) <= set(args) or not set(args) - set(expected) <= set(optional)
                or not isinstance(call.args, dict)):
            want = f"args : {' , '.join(expected)}" if expected else "no args"
            return ToolResult(False, error=f"{call.name} expects {want}")
        for key in args:
            if not isinstance(args[key], str):
                return ToolResult(False, error=f"arg {key} must be text")
        given = {k: args[k] for k in optional if k in args}
        try:
            if self._bounded.get(call.name) == impl:
                output = impl(*(args[k] for k in expected), **given)
            else:
                output = call_with_timeout(lambda: impl(*(args[k] for k in expected), **given),
                                           self.limits.tool_seconds)
        except TimeoutError:
            return ToolResult(False, error=f"{call.name} took too long and was stopped")
        except ToolError as exc:
            return ToolResult(False, error=str(exc))
        except Exception:
            return ToolResult(False, error=f"{call.name} failed")
        return self._cap(str(output))

    def waits(self, call: ToolCall) -> bool:
        """Whether ``call`` may wait on something outside this process: the shell's ``run``
        (a sandbox's start alone takes tens of milliseconds) or a replaced tool. A batched
        driver runs such calls side by side (:func:`hscale.harness.submit_all`)."""
        impl = self.tools.get(call.name)
        return call.name == "run" or (impl is not None and self._bounded.get(call.name) != impl)

    def reward(self, final_answer: str | None, transcript: list[dict] | None = None) -> float:
        """The task's checker on this workspace and final answer (and the episode's
        transcript, for checkers that read it), under the checker time limit; a failing
        checker raises CheckerError (a task-data bug, named)."""
        meta = {k: v for k, v in self.task.metadata.items()
                if k not in ("source", "input_mount_dir")}
        return run_checker(self.task.checker, self.workspace, final_answer or "",
                           timeout=self.limits.checker_seconds,
                           context={"task_id": self.task.task_id,
                                    "user_query": self.task.user_query, "metadata": meta,
                                    "transcript": transcript or []})

    def score(self, final_answer: str | None, transcript: list[dict] | None = None) -> float:
        """:meth:`reward` for an episode: a failing checker scores 0 and leaves its short error
        in ``checker_error``, so one broken checker cannot stop a run, yet shows."""
        self.checker_error = ""
        try:
            return self.reward(final_answer, transcript)
        except CheckerError as exc:
            self.checker_error = exc.short
        except Exception as exc:  # e.g. a bad spec; never out of the episode
            self.checker_error = f"checker: {type(exc).__name__}: {exc}"[:200]
        return 0.0

    # ------------------------------------------------------------------------ helpers

    def _cap(self, output: str) -> ToolResult:
        cap = self.limits.max_output_chars
        if len(output) <= cap:
            return ToolResult(True, output=output)
        return ToolResult(True, output=output[:cap] + TRUNCATION_MARKER, truncated=True)

    def _resolve(self, rel: str) -> Path:
        """The absolute path of ``rel``; refused unless it (after symlinks) is in the workspace."""
        problem = path_problem(rel, self.limits.max_path_chars)
        if problem:
            raise ToolError(problem)
        path = self.workspace / rel
        if not _has_link(self.workspace, path):  # the common case: resolving changes nothing
            return path
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError):  # e.g. a symlink loop
            raise ToolError("bad path") from None
        if not resolved.is_relative_to(self.workspace):  # symlinks resolved just above
            raise ToolError("path points outside the workspace")
        return resolved

    def _inside(self, path: Path) -> bool:
        """Whether ``path`` (found by walking the workspace without following links),
        symlinks resolved, is the workspace or below it."""
        if not path.is_symlink():  # its folders are real ones inside: nothing to resolve
            return True
        try:
            return path.resolve().is_relative_to(self.workspace)
        except (OSError, RuntimeError):
            return False

    def _entries(self) -> list[Path]:
        """Files and folders in the workspace, symlinks not followed, in sorted order."""
        found = []
        for top, dirs, files in os.walk(self.workspace):
            dirs.sort()
            found.extend(Path(top) / name for name in dirs + sorted(files))
        return found

    def _create(self, rel: str, data: bytes, setup: bool = False) -> Path:
        """Create or replace a regular file inside the workspace (for setup and ``write``)."""
        path = self._resolve(rel)
        if path == self.workspace or path.is_dir():
            raise ToolError(f"{rel} is a folder")
        if not setup and not path.exists():
            # the file and every folder the write would create count toward the cap
            new = 1 + sum(1 for parent in path.parents if not parent.exists())
            if len(self._entries()) + new > self.limits.max_entries:
                raise ToolError("too many files")
        path.parent.mkdir(parents=True, exist_ok=True)
        # non-blocking and not yet truncated: a FIFO or device is refused, never waited on
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as exc:  # e.g. ENXIO: a FIFO nobody reads
            raise ToolError("not a plain file" if path.exists() else
                            f"cannot write {rel} ({exc.strerror})") from None
        with os.fdopen(fd, "wb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ToolError("not a plain file")
            if info.st_nlink > 1:  # a hard link may share its data with a file outside
                raise ToolError("file has other links")
            handle.truncate(0)
            handle.write(data)
        return path

    def _read_text(self, path: Path) -> str:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise ToolError("not a plain file")
            if info.st_nlink > 1:  # a hard link may share its data with a file outside
                raise ToolError("file has other links")
            data = handle.read(self.limits.max_read_bytes)
        return data.decode("utf-8", errors="replace")

    # ------------------------------------------------------------------------ the tools

    def _list(self) -> str:
        names = sorted(p.relative_to(self.workspace).as_posix() for p in self._entries()
                       if not p.is_dir() and self._inside(p))
        return "\n".join(names) if names else "no files"

    def _read(self, path: str, offset: str | None = None) -> str:
        """A file's text; for a task of the real formats (tools beyond the built-in world's),
        a window of it from character ``offset`` that says where it was cut and how to read
        on (the built-in world's reads are as they always were)."""
        resolved = self._resolve(path)
        if resolved.is_dir():
            raise ToolError(f"{path} is a folder")
        if not resolved.exists():
            raise ToolError(f"no file {path}")
        text = self._read_text(resolved)
        if offset is None and self.task.tools == BUILTIN_TOOLS:
            return text
        start = offset.strip() if offset is not None else "0"
        if not re.fullmatch(r"[0-9]{1,12}", start):
            raise ToolError("offset must be a whole number of characters")
        room = WINDOW_NOTE_ROOM + len(path)  # the note below fits in the output window
        first, window = int(start), max(self.limits.max_output_chars - room, 1)
        piece = text[first:first + window]
        size = f"{len(text)} characters"
        if resolved.stat().st_size > self.limits.max_read_bytes:  # only its start is read
            size += f" (its first {self.limits.max_read_bytes} bytes)"
        if first + window >= len(text):
            return piece if first < len(text) or not text else f"{path} has {size}"
        return (piece + f"\n[cut at {first + len(piece)} of {size} : read "
                f"{path} with offset {first + len(piece)} for more]")

    def _write(self, path: str, text: str) -> str:
        data = text.encode("utf-8", errors="replace")
        if len(data) > self.limits.max_write_bytes:
            raise ToolError("text is too big")
        self._create(path, data)
        return f"wrote {path}"

    def _search(self, word: str) -> str:
        word = word.strip()
        if not word:
            raise ToolError("word is empty")
        if len(word) > self.limits.max_word_chars or "\n" in word:
            raise ToolError("word is too long")
        single = len(tokenize(word)) == 1
        needle = word.lower()
        hits = []
        for path in self._entries():
            if path.is_symlink() or not path.is_file():
                continue
            rel = path.relative_to(self.workspace).as_posix()
            try:
                text = self._read_text(path)
            except ToolError:
                continue
            for line in text.splitlines():
                low = line.lower()
                if (needle in tokenize(low)) if single else (needle in low):
                    hits.append(f"{rel}: {line.strip()}")
        return "\n".join(hits) if hits else f"no file has {word}"

    def _calc(self, expr: str) -> str:
        lim = self.limits
        if len(expr) > lim.calc_max_chars:
            raise ToolError("expr is too long")
        bad = "bad expr , use whole numbers and + - * / // % only"
        try:
            tree = ast.parse(expr.strip(), mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise ToolError(bad) from None
        if sum(1 for _ in ast.walk(tree)) > lim.calc_max_nodes:
            raise ToolError("expr is too long")

        def value(node: ast.AST) -> int:
            if isinstance(node, ast.Constant) and type(node.value) is int:
                result = node.value
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
                inner = value(node.operand)
                result = -inner if isinstance(node.op, ast.USub) else inner
            elif isinstance(node, ast.BinOp) and type(node.op) in _CALC_OPS:
                left, right = value(node.left), value(node.right)
                if right == 0 and not isinstance(node.op, ast.Add | ast.Sub | ast.Mult):
                    raise ToolError("division by zero")
                result = _CALC_OPS[type(node.op)](left, right)
            else:
                raise ToolError(bad)
            if abs(result) > lim.calc_max_abs:
                raise ToolError("number too big")
            return result

        return str(value(tree.body))

    def _run(self, command: str) -> str:
        """A shell command from the workspace (``run``): contained as reward scripts are (own
        namespaces, no network, a read-only system but the workspace), a scrubbed environment,
        ``run_seconds`` of wall clock and CPU, every process it started killed after; refused
        where the machine gives no such containment. Shows ``exit N`` and the end of its
        stdout, then of its stderr, in the output window."""
        if not command.strip():
            raise ToolError("command is empty")
        if "\x00" in command:
            raise ToolError("command holds a NUL")
        if len(command.encode("utf-8", "surrogateescape")) > min(self.limits.max_write_bytes,
                                                                   MAX_COMMAND_BYTES):
            raise ToolError("command is too long")
        if not containment().strong:  # the agent's code never runs uncontained
            raise ToolError("run needs a contained shell, which this machine lacks "
                            "(hscale doctor says why; install bubblewrap)")
        cwd, mounts = self.workspace, None
        mount = self.task.mount
        if mount is not None and containment().mounts:
            cwd, mounts = Path(mount), {mount: self.workspace}
        with tempfile.TemporaryDirectory(prefix="hscale-run-", ignore_cleanup_errors=True) as tmp:
            scratch = Path(tmp)
            env = {**plain_env(scratch), "PWD": str(cwd)}
            done = run_limited(["bash", "-c", command], cwd, env, scratch,
                               self.limits.run_seconds, writable=[self.workspace],
                               mounts=mounts)
        self._check_growth()
        if done.returncode is None:
            head = f"timeout after {self.limits.run_seconds:g} s"
        else:
            head = f"exit {done.returncode}"
        # each stream's end (where errors are), so stderr shows however long stdout was
        room = max((self.limits.max_output_chars - len(head) - 2) // 2 - CUT_NOTE_ROOM, 1)
        body = "\n".join(_end(part.rstrip("\n"), room) for part in (done.stdout, done.stderr)
                         if part.strip())
        return f"{head}\n{body}" if body else head

    def _check_growth(self) -> None:
        """After a command: a workspace past its limits (entries, bytes) is emptied, so one
        command cannot fill the memory the workspaces live in."""
        entries, size = 0, 0
        for top, dirs, files in os.walk(self.workspace):
            for name in files:
                try:
                    size += os.lstat(os.path.join(top, name)).st_size
                except OSError:
                    continue
            entries += len(dirs) + len(files)
            if entries > self.limits.max_entries or size > MAX_WORKSPACE_BYTES:
                for child in list(self.workspace.iterdir()):
                    remove_entry(child)
                raise ToolError(f"the command filled the workspace past its limits "
                                f"({self.limits.max_entries} files, "
                                f"{MAX_WORKSPACE_BYTES >> 20} MiB): it was emptied")
