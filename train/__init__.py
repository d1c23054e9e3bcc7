"""Running experiments: specs into manifests and schedules, manifests into results.

``ExperimentSpec`` (validated YAML) -> ``Manifest`` (resolved, hashed; the file contracts live
in :mod:`train.contracts`) + ``Schedule`` (step -> [(task, harness)]) -> a ``Backend`` (local
embedded trainer, veRL, scripted) driven by the runner. Names are imported on first use, so
reading a manifest never imports torch.
"""

from __future__ import annotations

from hscale.lazy import lazy_exports

_EXPORTS = {
    "ExperimentSpec": "train.spec",
    "load_spec": "train.spec",
    "Manifest": "train.contracts",
    "RunState": "train.contracts",
    "Status": "train.contracts",
    "SCHEMA_VERSION": "train.contracts",
    "read_status": "train.contracts",
    "eval_frame": "train.contracts",
    "train_frame": "train.contracts",
    "check_eval": "train.contracts",
    "Schedule": "train.schedule",
    "ASSIGNMENTS": "train.schedule",
    "ROUTERS": "train.routers",
    "Backend": "train.backends",
    "BACKENDS": "train.backends",
    "get_backend": "train.backends",
    "plan": "train.plan",
    "run_experiment": "train.runner",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
