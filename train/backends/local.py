"""Local backend: the embedded CPU trainer (train.embedded) runs each planned run.

The base model every run starts from is built once (cached by content hash) in ``prepare``,
before the runs are dispatched, so parallel workers never race to build it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from hscale.errors import HscaleError
from train.backends.base import Backend, Progress, StepProgress
from train.contracts import Manifest


def require_training_packages() -> None:
    """The embedded trainer needs torch (the model) and veRL (its loss math)."""
    missing = [name for name in ("torch", "verl") if importlib.util.find_spec(name) is None]
    if missing:
        raise HscaleError(f"the embedded trainer needs {' and '.join(missing)}, which "
                          "is not installed", 'pip install -e ".[train]"')


class LocalBackend(Backend):
    name = "local"

    def prepare(self, manifests: Sequence[Manifest], progress: Progress | None = None) -> None:
        """Build (or find in the cache) the base model of every preset the runs name."""
        if not manifests:
            return
        require_training_packages()
        from train.embedded.warmstart import available, build, preset

        for name in sorted({m.model for m in manifests}):
            preset(name)
            if available(name):
                continue
            build(name, (lambda d, t, n=name: progress(f"warm start {n}", d, t))
                  if progress else None)

    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        from train.embedded.trainer import Trainer

        Trainer(run_dir, manifest).run(progress)
