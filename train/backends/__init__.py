"""Backends run one planned run (a manifest and its schedule) and write its result files.

``local`` runs the embedded CPU trainer; ``verl`` launches veRL here or on a Ray cluster, or
with ``dry_run`` writes its inputs only; ``scripted`` runs a scripted policy without a model
(the whole pipeline without torch). Register your own with ``BACKENDS.register(name, cls)``.
What each backend needs installed (``Requirement``, ``require``; ``hscale doctor`` lists them)
and dropping a finished run's checkpoints (``clean``) live here, below the runner.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
