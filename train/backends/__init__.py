"""Backends run one planned run (a manifest and its schedule) and write its result files.

``local`` runs the embedded CPU trainer; ``verl`` launches veRL here or on a Ray cluster, or
with ``dry_run`` writes its inputs only; ``scripted`` runs a scripted policy without a model
(the whole pipeline without torch). Register your own with ``BACKENDS.register(name, cls)``.
What each backend needs installed (``Requirement``, ``require``; ``hscale doctor`` lists them)
and dropping a finished run's checkpoints (``clean``) live here, below the runner.
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

if TYPE_CHECKING:  # numpy, pandas, pydantic: imported on first use
    from ._base import Backend, Progress, RayJob, RayTask, StepProgress
    from ._clean import clean, drop_checkpoints
    from ._environment import (
        CPU_EXTRA,
        GPU_EXTRA,
        Requirement,
        cuda_gpus,
        gpus,
        has_module,
        package,
        require,
        version,
    )
    from ._local import LocalBackend, require_training_packages
    from ._registry import BACKENDS, get_backend
    from ._scripted import ScriptedBackend

__all__ = [
    "BACKENDS",
    "Backend",
    "CPU_EXTRA",
    "GPU_EXTRA",
    "LocalBackend",
    "Progress",
    "RayJob",
    "RayTask",
    "Requirement",
    "ScriptedBackend",
    "StepProgress",
    "clean",
    "cuda_gpus",
    "drop_checkpoints",
    "get_backend",
    "gpus",
    "has_module",
    "package",
    "require",
    "require_training_packages",
    "version",
]

__getattr__ = on_first_use(__name__, __file__)
