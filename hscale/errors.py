"""User-facing errors: one message that names the problem and a hint that names the fix, and
the one place that decides how an error ends the ``hscale`` command.

Exit statuses: 0 success, 1 a negative answer (e.g. ``design verify`` on a non-array, a run
that failed), 2 a user error (one line on stderr, never a traceback), 130 interrupted.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from hscale.text import printable

USER_ERROR = 2
INTERRUPTED = 130


class HscaleError(ValueError):
    """A problem with the user's input; the CLI prints it on one line and exits 2.

    ``message`` says what is wrong, with the offending values; ``hint`` says what to do next.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        """The message and hint on one line; a value the user gave that runs long (a
        pasted file, a 5,000-character name) is cut, so the line stays readable."""
        text = self.message if not self.hint else f"{self.message} (hint: {self.hint})"
        return " ".join(_cut(word) for word in printable(text).split())


WORD = 240  # characters of one word of a message (paths fit)


def _cut(word: str) -> str:
    return word if len(word) <= WORD else f"{word[:60]}...({len(word):,} characters)"


def reason(exc: BaseException, limit: int = 160) -> str:
    """A third-party error as a short clause for a one-line message: its type and text."""
    text = " ".join(printable(exc).split())[:limit]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class HscaleWarning(UserWarning):
    """Something the user should know that does not stop the work (the CLI prints it as one
    ``warning:`` line)."""


def exit_for(exc: BaseException, command: str = "hscale") -> tuple[int, str] | None:
    """``(exit status, one-line message)`` for an error that ends a command, or None when it is
    a bug whose traceback should show. ``command`` names the command for the default hint."""
    if isinstance(exc, HscaleError):
        hint = exc.hint if exc.hint is not None else f"run '{command} --help'"
        return USER_ERROR, HscaleError(exc.message, hint).one_line()
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED, "interrupted"
    if isinstance(exc, MemoryError):
        return USER_ERROR, "out of memory (hint: ask for a smaller array, space or enumeration)"
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return USER_ERROR, printable(f"{exc.strerror or exc}{where} (hint: check the path "
                                     "and its permissions)")
    return None
