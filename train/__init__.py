"""Running experiments: specs into manifests and schedules, manifests into results.

``ExperimentSpec`` (validated YAML) -> ``Manifest`` (resolved, hashed; the file contracts live
in :mod:`hscale.contracts`) + ``Schedule`` (step -> [(task, harness)]) -> a ``Backend`` (local
embedded trainer, veRL, scripted) driven by the runner. Names are imported on first use, so
reading a manifest never imports torch.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
