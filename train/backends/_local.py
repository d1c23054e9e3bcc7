"""Local backend: the embedded CPU trainer (hscale.train.embedded) runs each planned run.

The base model every run starts from is built once (cached by content hash) in ``prepare``,
before the runs are dispatched, so parallel workers never race to build it. On a Ray cluster
each run is a Ray task (one CPU) that trains the run folder, or a copy of it
(hscale.train.ray_cluster._tasks).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Literal

from hscale.contracts import Manifest
from hscale.errors import HscaleError
from hscale.train.backends._base import Backend, Progress, RayTask, StepProgress
from hscale.train.backends._environment import CPU_EXTRA, Requirement, package, require

TRAIN = "hscale.train.embedded._trainer:train_run"  # what a run's Ray task calls


def training_packages() -> list[Requirement]:
    """The embedded trainer needs torch (the model) and veRL (its loss math)."""
    return [package("torch", "torch", CPU_EXTRA, "the embedded trainer's model needs it"),
            package("verl", "verl", CPU_EXTRA, "the embedded trainer's loss math is veRL's")]


def require_training_packages() -> None:
    require(training_packages())


class LocalBackend(Backend):
    name = "local"
    ray: ClassVar[Literal["task", "job"] | None] = "task"
    # what every run imports (torch and the trainer), once for all the workers; the trainer
    # builds no torch.optim optimizer, which would import torch._dynamo (1.4 s)
    preload = ("hscale.train.embedded._trainer",)

    def check(self, manifests: Sequence[Manifest]) -> None:
        """Every run's model is a preset this trainer knows; no run trains through a
        black-box harness (the embedded policy's vocabulary holds none of a CLI's prompt); a
        profiles router has its judges."""
        from hscale.train.harness_s import require_judges
        from hscale.train.spec import preset

        for name in sorted({m.model for m in manifests}):
            preset(name)
        require_judges(manifests)
        through = [m for m in manifests if m.blackbox]
        if through:
            raise HscaleError(f"arm {through[0].arm} trains through {through[0].train_harnesses[0]}"
                              ", which the embedded trainer cannot",
                              "run it with --backend verl (a Hugging Face model, on GPUs or "
                              "the CPU) or --backend scripted (the bookkeeping)")

    def prepare(self, manifests: Sequence[Manifest], progress: Progress | None = None,
                on_ray: bool = False) -> None:
        """Build (or find in the cache) the base model of every preset the runs name: here
        the workers load it, on Ray the tasks get it through the object store."""
        if not manifests:
            return
        require(self.requirements())
        from hscale.train.policy import available  # without torch, when every one is found

        for name in sorted({m.model for m in manifests}):
            if available(name):
                continue
            from hscale.train.policy import build

            build(name, (lambda d, t, n=name: progress(f"warm start {n}", d, t))
                  if progress else None)

    def requirements(self) -> list[Requirement]:
        return training_packages()

    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        from hscale.train.embedded import train_run

        train_run(run_dir, manifest, progress)

    def ray_work(self, run_dir: Path, manifest: Manifest) -> RayTask:
        return RayTask(TRAIN, models=(manifest.model,))
