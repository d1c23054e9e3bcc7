"""Ray as an executor: the runs of any backend on a Ray cluster, each followed from a thread
of the runner, which still decides what runs and writes every status.json."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hscale.contracts import Manifest
from hscale.errors import HscaleError
from hscale.train.backends import (
    CPU_EXTRA,
    Backend,
    RayJob,
    RayTask,
    Requirement,
    StepProgress,
    package,
    require,
)


class RayExecutor:
    """Runs go to the Ray cluster at ``address``; ``interval``: seconds between two looks
    at a job (tasks are looked at every half second)."""

    def __init__(self, address: str, interval: float | None = None) -> None:
        self.address = address
        self.interval = interval
        self._tasks: Any = None
        self._jobs: Any = None
        self._records: dict[Path, Path] = {}

    def requirements(self) -> list[Requirement]:
        return [package("ray", "ray", CPU_EXTRA, "runs go to the Ray cluster")]

    def check(self, backend: Backend) -> None:
        """The address and the backend, before anything is written or joined."""
        if backend.ray is None:
            raise HscaleError(f"the {backend.name} backend does not run on a Ray cluster",
                              "drop --ray-address, or use --backend local or verl")
        if backend.ray == "task":
            from hscale.train.ray_cluster._tasks import driver_address

            driver_address(self.address)
        else:
            from hscale.train.ray_cluster._jobs import dashboard_url

            dashboard_url(self.address)

    def start(self, backend: Backend, manifests: Sequence[Manifest]) -> int | None:
        """Join the cluster the way ``backend``'s runs travel; how many runs at once (a
        task a CPU: the cluster's CPUs; jobs: None, the runner's workers)."""
        require(self.requirements())
        if not manifests:
            return None
        if backend.ray == "task":
            from hscale.train.ray_cluster._tasks import RayTasks

            self._tasks = RayTasks(self.address)
            return self._tasks.start()
        from hscale.train.ray_cluster._jobs import POLL_SECONDS, RayJobs

        self._jobs = RayJobs(self.address, POLL_SECONDS if self.interval is None
                             else self.interval)
        self._jobs.start()
        return None

    def run(self, backend: Backend, run_dir: Path, manifest: Manifest,
            progress: StepProgress | None = None) -> None:
        """The run's work on the cluster, followed to its end; then the backend collects
        what it left."""
        run_dir = Path(run_dir)
        work = backend.ray_work(run_dir, manifest)
        if isinstance(work, RayTask):
            self._tasks.run(run_dir, manifest, work, progress)
        elif isinstance(work, RayJob):
            self._records[run_dir.resolve()] = work.record
            self._jobs.run(run_dir, manifest, work, progress)
        else:
            raise TypeError(f"{backend.name}.ray_work gave {type(work).__name__}, not a "
                            "RayTask or RayJob")
        backend.collect(run_dir, manifest)

    def status_fields(self, run_dir: Path) -> dict[str, Any]:
        """Where the run's work is: the task, node and worker pid, or the job's id."""
        if self._tasks is not None:
            return self._tasks.status_fields(run_dir)
        record = self._records.get(Path(run_dir).resolve())
        if record is None:
            return {}
        from hscale.train.ray_cluster._jobs import job_fields

        return job_fields(record)
