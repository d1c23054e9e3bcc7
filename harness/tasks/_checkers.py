"""Running checkers: score "answer" specs, run ClawGym reward scripts as subprocesses and call
Python checkers, each under a wall-clock limit, and insist on a reward in [0, 1].

A checker that fails, hangs or returns a bad value is a task-data bug, so every failure here
raises :class:`CheckerError` naming the checker rather than scoring 0 silently; an episode
(``Env.score``) turns it into reward 0 and records its short form.

A reward script sees only the interface below, in a scrubbed environment (the runner's
variables, secrets included, never reach it) and under the limits of
:mod:`hscale.harness.tasks._sandbox`: argument 1 and ``WORKSPACE`` are the workspace;
``FINAL_ANSWER_FILE`` names a file holding the final answer (UTF-8, exact);
``TRANSCRIPT_FILE`` one holding the episode's transcript as JSON (``TurnEngine.transcript``:
the query, each turn, each canonical tool call and its result); ``FINAL_ANSWER``
holds the answer itself only when it is under ``ANSWER_ENV_MAX_BYTES`` and has no NUL (else it
is empty), kept for older scripts; ``HOME`` is an empty private folder, ``TMPDIR`` another,
``PATH`` is the runner's, ``LANG``/``LC_ALL`` are ``C.UTF-8``. The last line of its stdout is
the reward. A script spec with a ``mount`` (a real ClawGym task: its ``input_mount_dir``) runs
as ClawGym's runner runs it instead (:func:`clawgym_layout`): reward/ copied into the
workspace, the workspace at ``mount``, the payload file named by ``OPENCLAW_REWARD_PAYLOAD``,
no argument, from ``/``, for up to 120 s.

A "weighted" spec is the weighted mean of its parts' rewards (PinchBench's hybrid tasks,
JobBench's rubrics); a part that fails fails the whole.

A "rubric" spec asks the LLM judge of :mod:`hscale.harness.tasks` (configured by environment);
with no judge configured it raises CheckerError, so such episodes score 0 with a counted error.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.harness.tasks._jail import containment
from hscale.harness.tasks._judge import JudgeError, judge_rubric
from hscale.harness.tasks._sandbox import ScriptLimits, plain_env, run_limited
from hscale.harness.tasks._specs import FOLDER_HINT, Checker, check_spec
from hscale.harness.tasks._timeout import call_with_timeout
from hscale.text import printable

# An environment string may not exceed 128 KiB (MAX_ARG_STRLEN) nor hold a NUL.
ANSWER_ENV_MAX_BYTES = 65536
_SIGNALS = {signal.SIGXCPU: "cpu time limit", signal.SIGXFSZ: "file size limit"}


class CheckerError(HscaleError):
    """A checker crashed, ran too long, hit a limit or gave no reward in [0, 1].

    ``short`` is the one-line form an episode records, e.g. ``checker: timeout after 10 s``.
    """

    def __init__(self, message: str, hint: str | None, short: str) -> None:
        super().__init__(message, hint)
        self.short = short


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


def checker_words(checker: Checker) -> tuple[str | None, str]:
    """(the expected answer where the checker names one, how it scores) of a checker, in a
    reader's words: what an episode page says beside a reward of 0."""
    if callable(checker):
        return None, f"checker {getattr(checker, '__name__', 'function')}"
    try:
        spec = check_spec(checker)
    except HscaleError:
        return None, "a checker of an unknown kind"
    kind = spec["kind"]
    if kind == "answer":
        what = {"final": "the final answer", "file": f"the file {spec['file']}",
                "both": f"the final answer and the file {spec['file']}"}[spec["target"]]
        return spec["expected"], f"{what} must be {spec['expected']!r}"
    if kind == "script":
        return None, f"the reward script {Path(spec['path']).name}"
    if kind == "rubric":
        return None, f"the LLM judge, on a rubric of {len(spec['criteria'])} criteria"
    parts = [f"{p['weight']:g} x {checker_words(p['checker'])[1]}"
             for p in spec.get("parts", [])]
    return None, "a weighted mean of " + "; ".join(parts)


def scoring(task: Any) -> tuple[str | None, str]:
    """(what a task expects, how it is scored) as an episode records them, whichever driver
    played it: the checker's expected answer, else the task's recorded final answer, and
    :func:`checker_words`."""
    expected, checked = checker_words(task.checker)
    return expected or task.final_answer, checked


def run_checker(checker: Checker, workspace: Path, final_answer: str | None,
                timeout: float = 10.0, limits: ScriptLimits | None = None,
                context: dict | None = None) -> float:
    """Run a checker (callable or spec) under a wall-clock limit; return a reward in [0, 1].
    ``context`` (task_id, user_query, metadata) goes into a ClawGym script's payload.

    A checker that fails, times out or returns something outside [0, 1] is a task-data bug and
    raises CheckerError rather than silently scoring 0.
    """
    workspace, answer = Path(workspace), final_answer or ""
    if callable(checker):
        return _call_checker(checker, workspace, answer, timeout)
    spec = check_spec(checker)
    if spec["kind"] == "answer":
        return score_answer(spec, str(workspace), answer)
    if spec["kind"] == "rubric":
        return _run_rubric(spec, workspace, answer, context or {})
    if spec["kind"] == "weighted":
        return _run_weighted(spec, workspace, answer, timeout, limits, context or {})
    return _run_script(Path(spec["path"]), workspace, answer, timeout, limits,
                       spec.get("mount"), context or {})


def _call_checker(checker: Callable[[Path, str], object], workspace: Path, answer: str,
                  timeout: float) -> float:
    name = getattr(checker, "__name__", "checker")
    try:
        value = call_with_timeout(lambda: checker(workspace, answer), timeout)
    except TimeoutError:
        raise CheckerError(f"checker {name} took longer than {timeout:g} s",
                           "make the checker faster or raise the time limit",
                           f"checker: timeout after {timeout:g} s") from None
    except Exception as exc:
        what = type(exc).__name__ + (f": {exc}" if str(exc) else "")
        raise CheckerError(f"checker {name} raised {what}", "fix the checker",
                           f"checker: {what}"[:200]) from exc
    return _reward_value(value, f"checker {name}")


def _run_rubric(spec: dict, workspace: Path, answer: str, context: dict) -> float:
    """Ask the judge; its own per-request timeout applies (:mod:`hscale.harness.tasks._judge`)."""
    try:
        reward = judge_rubric(spec, workspace, answer, context)
    except JudgeError as exc:
        raise CheckerError(exc.message, exc.hint, exc.short) from None
    return _reward_value(reward, "rubric checker")


def _run_weighted(spec: dict, workspace: Path, answer: str, timeout: float,
                  limits: ScriptLimits | None, context: dict) -> float:
    """The weighted mean of the parts' rewards, each part run as :func:`run_checker` runs it
    (with its own time limit); a part that fails fails the whole checker."""
    total = sum(part["weight"] for part in spec["parts"])
    reward = sum(part["weight"] * run_checker(part["checker"], workspace, answer, timeout,
                                              limits, context)
                 for part in spec["parts"])
    return _reward_value(min(1.0, max(0.0, reward / total)), "weighted checker")


def _reward_value(value: object, where: str) -> float:
    hint = "a checker returns one float in [0, 1]"
    try:
        reward = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise CheckerError(f"{where} returned {value!r}, not a number", hint,
                           f"checker: {str(value)[:40]!r} is not a number") from None
    if math.isnan(reward) or not 0.0 <= reward <= 1.0:
        raise CheckerError(f"{where} returned {reward}, outside [0, 1]", hint,
                           f"checker: reward {reward} outside [0, 1]")
    return reward


def script_env(workspace: Path, answer: str, scratch: Path,
               transcript: list[dict] | None = None) -> dict[str, str]:
    """The whole environment of a reward script (see the module docstring); writes the answer
    file, the transcript file and the empty HOME into the private folder ``scratch``."""
    try:
        data = answer.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate no byte stands for
        data = answer.encode("utf-8", "replace")
    answer_file = scratch / "final_answer"
    answer_file.write_bytes(data)
    inline = len(data) <= ANSWER_ENV_MAX_BYTES and b"\0" not in data
    transcript_file = scratch / "transcript.json"
    transcript_file.write_text(json.dumps(transcript or [], ensure_ascii=False),
                               encoding="utf-8", errors="surrogateescape")
    return {**plain_env(scratch), "WORKSPACE": str(workspace),
            "FINAL_ANSWER_FILE": str(answer_file), "TRANSCRIPT_FILE": str(transcript_file),
            "FINAL_ANSWER": data.decode("utf-8", "surrogateescape") if inline else ""}


def _run_script(script: Path, workspace: Path, answer: str, timeout: float,
                limits: ScriptLimits | None, mount: str | None = None,
                context: dict | None = None) -> float:
    if not script.is_file():
        raise CheckerError(f"{script}: reward script not found", FOLDER_HINT,
                           "checker: reward script not found")
    cmd = ["bash", str(script)] if script.suffix == ".sh" else [sys.executable, str(script)]
    with tempfile.TemporaryDirectory(prefix="hscale-check-", ignore_cleanup_errors=True) as tmp:
        env = script_env(workspace, answer, Path(tmp), (context or {}).get("transcript"))
        cmd, cwd, mounts = [*cmd, str(workspace)], script.parent, None
        if mount is not None:
            cmd, cwd, mounts = clawgym_layout(script, workspace, mount, answer, context or {},
                                              Path(tmp), env)
            timeout = max(timeout, CLAWGYM_SECONDS)
        try:
            done = run_limited(cmd, cwd, env, Path(tmp), timeout, limits, writable=[workspace],
                               mounts=mounts)
        except (OSError, subprocess.SubprocessError) as exc:
            raise CheckerError(f"{script}: reward script could not start ({exc})",
                               "check that it exists and its interpreter runs",
                               "checker: could not start") from None
    if done.returncode is None:
        raise CheckerError(f"{script}: reward script ran longer than {timeout:g} s",
                           "make it faster or raise the checker time limit",
                           f"checker: timeout after {timeout:g} s")
    if done.returncode != 0:
        cause = first_cause(done.stderr)
        if mount is not None:  # name the task's own file, not its place in the runner's layout
            for inside in (mount.rstrip("/"), str(workspace)):  # shown there, or mapped
                cause = cause.replace(f"{inside}/reward/", f"{script.parent}/")
        how = _exit_words(done.returncode)
        raise CheckerError(f"{script}: reward script {how}" + (f": {cause}" if cause else ""),
                           "run it by hand with the workspace path as argument",
                           f"checker: {how}" + (f" ({cause[:120]})" if cause else ""))
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if not lines:
        raise CheckerError(f"{script}: reward script printed nothing",
                           "print one float in [0, 1] as the last line",
                           "checker: printed nothing")
    return _reward_value(lines[-1], f"{script}")


def first_cause(stderr: str, limit: int = 300) -> str:
    """The first thing a failed script said: its first line, or, when that opens a Python
    traceback, the exception that ends it (a pipeline's later errors are consequences);
    printable: a script's escape sequences never reach a terminal or a record."""
    lines = [line.rstrip() for line in printable(stderr).splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].startswith("Traceback (most recent call last)"):
        ends = (line for line in lines[1:] if not line.startswith((" ", "\t")))
        return next(ends, lines[0])[:limit]
    return lines[0][:limit]


CLAWGYM_SECONDS = 120.0  # ClawGym's runner's limit for reward.sh
PAYLOAD_ENV = "OPENCLAW_REWARD_PAYLOAD"


def clawgym_layout(script: Path, workspace: Path, mount: str, answer: str, context: dict,
                   scratch: Path, env: dict[str, str]) -> tuple[list[str], Path,
                                                               dict[str, Path] | None]:
    """(command, cwd, mounts) of a reward script run as ClawGym's runner runs it: the task's
    reward/ copied into the workspace, the workspace shown at ``mount``, a payload file
    ({task_id, user_query, metadata, final_message, transcript}) named by
    OPENCLAW_REWARD_PAYLOAD, ``bash MOUNT/reward/reward.sh`` with no argument from ``/``.
    Where the containment cannot show a folder elsewhere, the path is mapped instead: the
    script runs as a copy with ``mount`` written as the workspace's own path."""
    # whatever the agent left at reward/ goes first, never followed: a link there (its shell
    # can make one) would have this process, outside the jail, write where it points
    remove_entry(workspace / "reward")
    shutil.copytree(script.parent, workspace / "reward", symlinks=True)
    payload = scratch / "payload.json"
    payload.write_text(json.dumps({
        "task_id": context.get("task_id", ""), "user_query": context.get("user_query", ""),
        "metadata": context.get("metadata", {}), "final_message": answer,
        "transcript": context.get("transcript", [])}, ensure_ascii=False))
    env[PAYLOAD_ENV] = str(payload)
    inside = workspace / "reward" / script.name
    if containment().mounts:
        env["WORKSPACE"] = mount
        return ["bash", f"{mount.rstrip('/')}/reward/{script.name}"], Path("/"), {
            mount: workspace}
    mapped = scratch / script.name
    mapped.write_text(inside.read_text(encoding="utf-8", errors="surrogateescape")
                      .replace(mount.rstrip("/"), str(workspace)),
                      encoding="utf-8", errors="surrogateescape")
    return ["bash", str(mapped)], Path("/"), None


def remove_entry(path: Path) -> None:
    """Delete a file, a link (not what it points to) or a folder tree (links in it are
    removed, not followed; folders made unreadable are made readable first)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        path.unlink()
        return

    def retry(func, name, _exc):  # a folder the agent made 000: open it up and go on
        os.chmod(os.path.dirname(name), 0o700)
        if os.path.isdir(name) and not os.path.islink(name):
            os.chmod(name, 0o700)
        func(name)

    shutil.rmtree(path, onerror=retry)


def _exit_words(code: int) -> str:
    """``exited with 4``, or ``killed by SIGXCPU (cpu time limit)`` for a signal."""
    if code > 0:
        return f"exited with {code}"
    try:
        sig = signal.Signals(-code)
    except ValueError:
        return f"killed by signal {-code}"
    limit = _SIGNALS.get(sig)
    return f"killed by {sig.name}" + (f" ({limit})" if limit else "")
