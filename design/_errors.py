"""Errors of the design module: the user's request is impossible, or beyond what hscale builds.

Both are :class:`hscale.errors.HscaleError`, so the CLI prints them on one line and exits 2.
"""

from __future__ import annotations

from hscale.errors import HscaleError


class InfeasibleError(HscaleError):
    """No orthogonal array with the requested parameters can exist (a bound excludes it)."""


class NotConstructedError(HscaleError):
    """The parameters pass every bound, but no construction hscale knows produced the array."""
