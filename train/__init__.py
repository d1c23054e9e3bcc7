"""Running experiments: specs into manifests and schedules, manifests into results.

``ExperimentSpec`` (validated YAML) -> ``Manifest`` (resolved, hashed; the file contracts live
in :mod:`hscale.contracts`) + ``Schedule`` (step -> [(task, harness)]) -> a ``Backend`` (local
embedded trainer, veRL, scripted) driven by the runner. Names are imported on first use, so
reading a manifest never imports torch.
"""

from __future__ import annotations

from hscale.lazy import lazy_exports

_EXPORTS = {
    "ExperimentSpec": "hscale.train.spec",
    "load_spec": "hscale.train.spec",
    "Manifest": "hscale.contracts",
    "RunState": "hscale.contracts",
    "Status": "hscale.contracts",
    "SCHEMA_VERSION": "hscale.contracts",
    "read_status": "hscale.contracts",
    "eval_frame": "hscale.contracts",
    "train_frame": "hscale.contracts",
    "check_eval": "hscale.contracts",
    "Schedule": "hscale.train.schedule",
    "ASSIGNMENTS": "hscale.train.schedule",
    "ROUTERS": "hscale.train.routers",
    "Backend": "hscale.train.backends",
    "BACKENDS": "hscale.train.backends",
    "get_backend": "hscale.train.backends",
    "plan": "hscale.train.plan",
    "run_experiment": "hscale.train.runner",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
