"""What this machine has for each backend: packages, GPUs, and what is missing with its fix.

Backends state their needs as :class:`Requirement` lists; ``prepare`` refuses the first one
missing (one line with the fix) and ``hscale doctor`` shows them all. Nothing heavy is
imported to find a package; torch is imported only to count CUDA GPUs.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass

from hscale.errors import HscaleError

CPU_EXTRA = 'pip install -e ".[train]"'
GPU_EXTRA = 'pip install -e ".[gpu]"'  # veRL's vLLM extra, with the torch it pins


@dataclass(frozen=True)
class Requirement:
    """One thing a backend needs: ``ok`` or not, what was found, and when not, the problem
    in words and its fix."""

    what: str
    ok: bool
    found: str
    problem: str
    fix: str


def has_module(name: str) -> bool:
    """Whether ``name`` is installed (found without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def cuda_gpus() -> int:
    """CUDA GPUs torch sees here (0 without torch or CUDA)."""
    if not has_module("torch"):
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def package(name: str, distribution: str, fix: str, why: str = "", label: str = ""
            ) -> Requirement:
    """The importable ``name`` (from ``distribution``), with ``why`` it is needed."""
    found = (version(distribution) or "installed") if has_module(name) else None
    label = label or distribution
    return Requirement(label, found is not None, found or "not installed",
                       f"{label} is not installed" + (f": {why}" if why else ""), fix)


def gpus() -> Requirement:
    count = cuda_gpus()
    return Requirement("CUDA GPUs", count > 0, str(count),
                       "no CUDA GPU on this machine (torch.cuda.is_available() is false)",
                       "use --dry-run to write each run's launch.sh for a GPU node, or "
                       "--ray-address ADDR to run on a Ray cluster")


def require(requirements: Iterable[Requirement]) -> None:
    """Refuse, in one line with its fix, the first requirement that is not met."""
    for need in requirements:
        if not need.ok:
            raise HscaleError(need.problem, need.fix)
