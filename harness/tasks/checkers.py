"""Running checkers: score "answer" specs, run ClawGym reward scripts as subprocesses and call
Python checkers, each under a wall-clock limit, and insist on a reward in [0, 1].

A checker that fails, hangs or returns a bad value is a task-data bug, so every failure here
raises HscaleError naming the checker rather than scoring 0.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path

from harness.tasks.specs import FOLDER_HINT, Checker, check_spec
from harness.tasks.timeout import call_with_timeout
from hscale.errors import HscaleError


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
    hint = "a checker returns one float in [0, 1]"
    try:
        reward = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise HscaleError(f"{where} returned {value!r}, not a number", hint) from None
    if math.isnan(reward) or not 0.0 <= reward <= 1.0:
        raise HscaleError(f"{where} returned {reward}, outside [0, 1]", hint)
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
