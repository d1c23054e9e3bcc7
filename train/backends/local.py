"""Local backend: the embedded CPU trainer (hscale.train.embedded) runs each planned run.

The base model every run starts from is built once (cached by content hash) in ``prepare``,
before the runs are dispatched, so parallel workers never race to build it. With
``ray_address`` each run is a Ray task on that cluster instead (hscale.train.backends.ray_tasks):
the runner follows the tasks from threads, as many at once as the cluster has CPUs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hscale.train.backends.base import Backend, Progress, StepProgress
from hscale.train.contracts import Manifest
from hscale.train.environment import CPU_EXTRA, Requirement, package, require


def training_packages() -> list[Requirement]:
    """The embedded trainer needs torch (the model) and veRL (its loss math)."""
    return [package("torch", "torch", CPU_EXTRA, "the embedded trainer's model needs it"),
            package("verl", "verl", CPU_EXTRA, "the embedded trainer's loss math is veRL's")]


def require_training_packages() -> None:
    require(training_packages())


class LocalBackend(Backend):
    name = "local"

    def __init__(self, ray_address: str | None = None) -> None:
        self.ray_address = ray_address
        self.in_threads = ray_address is not None  # run() then follows a Ray task
        self._ray: Any = None  # hscale.train.backends.ray_tasks.RayRuns, once prepared

    def prepare(self, manifests: Sequence[Manifest], progress: Progress | None = None) -> None:
        """Build (or find in the cache) the base model of every preset the runs name; on Ray,
        then join the cluster and share the models (a wrong address is reported first: it is
        the plainer mistake)."""
        if not manifests:
            return
        require(self.requirements())
        if self.ray_address is not None:
            from hscale.train.backends.ray_tasks import driver_address

            driver_address(self.ray_address)
        from hscale.train.embedded.warmstart import available, build, preset

        names = sorted({m.model for m in manifests})
        for name in names:
            preset(name)
        for name in names:
            if available(name):
                continue
            build(name, (lambda d, t, n=name: progress(f"warm start {n}", d, t))
                  if progress else None)
        if self.ray_address is not None:
            from hscale.train.backends.ray_tasks import RayRuns

            self._ray = RayRuns(self.ray_address)
            self.max_workers = self._ray.start(names)

    def requirements(self) -> list[Requirement]:
        needs = training_packages()
        if self.ray_address is not None:
            needs.append(package("ray", "ray", CPU_EXTRA, "runs go to the Ray cluster as tasks"))
        return needs

    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        if self.ray_address is not None:
            if self._ray is None:
                self.prepare([manifest])
            self._ray.run(run_dir, manifest, progress)
            return
        from hscale.train.embedded.trainer import Trainer

        Trainer(run_dir, manifest).run(progress)

    def status_fields(self, run_dir: Path) -> dict[str, Any]:
        """On Ray: the cluster, and the task, node and worker pid that run the run."""
        return self._ray.status_fields(run_dir) if self._ray is not None else {}
