"""Backends run one planned run (a manifest and its schedule) and write its result files."""

from __future__ import annotations

import difflib
from typing import Protocol

from design.errors import HscaleError


class Backend(Protocol):
    """Run a planned run to completion, resuming from what its folder already holds."""

    name: str

    def run(self, run_dir, manifest: dict, progress=None) -> None: ...


def get_backend(name: str) -> Backend:
    if name == "local":
        from train.backends.local import LocalBackend

        return LocalBackend()
    close = difflib.get_close_matches(name, ["local", "verl"], n=1)
    if name == "verl":
        raise HscaleError("the verl backend is not available in this version",
                          "use --backend local; veRL training runs arrive with the launcher")
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise HscaleError(f"unknown backend {name!r}", hint + "available: local")
