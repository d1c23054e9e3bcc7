"""The ``hscale`` command run in this process, as a user sees it: exit status, stdout, stderr.

A subprocess per command costs 1-4 s of interpreter start and imports; ``main(argv)`` costs
the command alone. What a user would see is kept: a user error is one line on stderr with
exit status 2; a bug prints its traceback and exits 1, as the interpreter would. A handful of
tests still start real processes (``python -m hscale.cli``: signals, kill -9, the import cost
of ``--help``, the installed entry point).
"""

from __future__ import annotations

import contextlib
import io
import os
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

from hscale.cli import main


@dataclass
class Result:
    """What a finished command left: the fields of ``subprocess.CompletedProcess`` tests read."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def hscale(*args: str | Path, cwd: str | Path | None = None,
           env: dict[str, str | None] | None = None) -> Result:
    """``hscale ARGS`` in this process, from ``cwd``, with ``env`` set in the environment (a
    None value unsets the variable); both are restored after."""
    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    here, saved = os.getcwd(), {k: os.environ.get(k) for k in env or {}}
    for key, value in (env or {}).items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            warnings.simplefilter("default")
            try:
                main(argv)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception:  # a bug: the interpreter would print it and exit 1
                traceback.print_exc()
                code = 1
    finally:
        os.chdir(here)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return Result(tuple(argv), code, out.getvalue(), err.getvalue())


def assert_user_error(result: Result, *words: str) -> None:
    """Exit 2, exactly one line on stderr, a hint, no traceback."""
    assert result.returncode == 2, result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "hint" in lines[0], lines[0]
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in lines[0], lines[0]
