"""Backends run one planned run (a manifest and its schedule) and write its result files.

``local`` runs the embedded CPU trainer; ``verl`` launches veRL here or on a Ray cluster
(train.backends.verl_backend, train.backends.ray_jobs).
"""

from __future__ import annotations

import difflib
from typing import Protocol

from hscale.errors import HscaleError

__all__ = ["Backend", "get_backend"]


class Backend(Protocol):
    """Run a planned run to completion, resuming from what its folder already holds."""

    name: str

    def run(self, run_dir, manifest: dict, progress=None) -> None: ...


def get_backend(name: str) -> Backend:
    if name == "local":
        from train.backends.local import LocalBackend

        return LocalBackend()
    if name == "verl":  # launches here; for a Ray cluster build VerlBackend(ray_address=...)
        from train.backends.verl_backend import VerlBackend

        return VerlBackend()
    close = difflib.get_close_matches(name, ["local", "verl"], n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise HscaleError(f"unknown backend {name!r}", hint + "available: local, verl")
