"""Running experiments: specs into manifests and schedules, manifests into results.

``ExperimentSpec`` (validated YAML) -> ``Manifest`` (resolved, hashed; the file contracts live
in :mod:`hscale.train.contracts`) + ``Schedule`` (step -> [(task, harness)]) -> a ``Backend`` (local
embedded trainer, veRL, scripted) driven by the runner. Names are imported on first use, so
reading a manifest never imports torch.
"""

from __future__ import annotations

from hscale.lazy import lazy_exports

_EXPORTS = {
    "ExperimentSpec": "hscale.train.spec",
    "load_spec": "hscale.train.spec",
    "Manifest": "hscale.train.contracts",
    "RunState": "hscale.train.contracts",
    "Status": "hscale.train.contracts",
    "SCHEMA_VERSION": "hscale.train.contracts",
    "read_status": "hscale.train.contracts",
    "eval_frame": "hscale.train.contracts",
    "train_frame": "hscale.train.contracts",
    "check_eval": "hscale.train.contracts",
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
