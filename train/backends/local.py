"""Local backend: the embedded CPU trainer (train.embedded) runs each planned run.

The base model every run starts from is built once (cached by content hash) in ``prepare``,
before the runs are dispatched, so parallel workers never race to build it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from train.backends.base import Backend, Progress, StepProgress
from train.contracts import Manifest
from train.environment import CPU_EXTRA, Requirement, package, require


def training_packages() -> list[Requirement]:
    """The embedded trainer needs torch (the model) and veRL (its loss math)."""
    return [package("torch", "torch", CPU_EXTRA, "the embedded trainer's model needs it"),
            package("verl", "verl", CPU_EXTRA, "the embedded trainer's loss math is veRL's")]


def require_training_packages() -> None:
    require(training_packages())


class LocalBackend(Backend):
    name = "local"

    def prepare(self, manifests: Sequence[Manifest], progress: Progress | None = None) -> None:
        """Build (or find in the cache) the base model of every preset the runs name."""
        if not manifests:
            return
        require(self.requirements())
        from train.embedded.warmstart import available, build, preset

        for name in sorted({m.model for m in manifests}):
            preset(name)
            if available(name):
                continue
            build(name, (lambda d, t, n=name: progress(f"warm start {n}", d, t))
                  if progress else None)

    def requirements(self) -> list[Requirement]:
        return training_packages()

    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        from train.embedded.trainer import Trainer

        Trainer(run_dir, manifest).run(progress)
