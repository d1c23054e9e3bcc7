"""User-facing errors: one message that names the problem and a hint that names the fix."""

from __future__ import annotations


class HscaleError(ValueError):
    """A problem with the user's input; the CLI prints it on one line and exits 2.

    ``message`` says what is wrong, with the offending values; ``hint`` says what to do next.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message if not self.hint else f"{self.message} (hint: {self.hint})"
        return " ".join(text.split())


class InfeasibleError(HscaleError):
    """No orthogonal array with the requested parameters can exist (a bound excludes it)."""


class NotConstructedError(HscaleError):
    """The parameters pass every bound, but no construction hscale knows produced the array."""
