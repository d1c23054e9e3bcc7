"""veRL backend: a planned run becomes veRL 0.9.1 inputs and a launch script (inputs), checked
on CPU against veRL's own config (overrides), launched here or on a Ray cluster (launch), and
its validation dumps become eval.parquet (dumps). veRL, Hydra, torch and Ray are imported
lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hscale.files import write_parquet
from hscale.train.backends.base import Backend, Progress, StepProgress
from hscale.train.backends.verl.check import validate_overrides
from hscale.train.backends.verl.dumps import import_metrics, import_validation
from hscale.train.backends.verl.inputs import prepare_verl_run
from hscale.train.backends.verl.launch import (
    LOG,
    POLL_SECONDS,
    check_launch,
    job_fields,
    launch_local,
    launch_ray,
    launch_requirements,
)
from hscale.train.backends.verl.overrides import VERL_DIR, build_overrides, settings
from hscale.train.backends.verl.rescue import check_rescue
from hscale.train.clean import drop_checkpoints
from hscale.train.contracts import EVAL, TRAIN, Manifest, result_problems
from hscale.train.environment import Requirement, require

__all__ = ["LOG", "VERL_DIR", "VerlBackend", "build_overrides", "import_validation",
           "prepare_verl_run", "validate_overrides"]


class VerlBackend(Backend):
    """Run a planned run with veRL: launch.sh here, or as a job on the Ray cluster at
    ``ray_address``; then its validation dumps become eval.parquet. With ``dry_run`` each
    run's inputs and launch.sh are written and nothing is launched. ``overrides``: more Hydra
    overrides for every launch (after the spec's own), validated like them."""

    name = "verl"

    def __init__(self, dry_run: bool = False, ray_address: str | None = None,
                 overrides: Sequence[str] = (), interval: float | None = None) -> None:
        self.dry_run, self.ray_address = dry_run, ray_address
        self.overrides = list(overrides)
        self.interval = POLL_SECONDS if interval is None else interval
        if not dry_run and not ray_address:
            self.max_workers = 1  # one launch at a time holds this machine's GPUs

    def prepare(self, manifests: Sequence[Manifest], progress: Progress | None = None) -> None:
        """Every run's overrides validated against veRL's config; for a launch, what it needs
        here or on the cluster (GPUs, vLLM, a reachable Ray head), before anything is written."""
        require(self.requirements()[:1])
        check_rescue(manifests)
        for manifest in manifests:
            validate_overrides([*build_overrides(Path("."), manifest), *self.overrides])
        if not self.dry_run and manifests:
            check_launch(manifests, self.ray_address)

    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        run_dir = Path(run_dir)
        prepare_verl_run(run_dir, manifest, validate=False)
        if self.dry_run:
            return
        steps = manifest.budget.steps
        if progress is not None:
            progress(0, steps)
        if self.ray_address:
            launch_ray(run_dir, manifest, self.ray_address, self.overrides,
                       self.interval,
                       on_poll=(lambda state: progress(0, steps)) if progress else None)
        else:
            launch_local(run_dir, self.overrides)
        write_parquet(run_dir / EVAL, import_validation(run_dir, manifest))
        write_parquet(run_dir / TRAIN, import_metrics(run_dir))
        if settings(manifest).checkpoints == "drop":  # results are in; resume is not needed
            drop_checkpoints(run_dir)
        if progress is not None:
            progress(steps, steps)

    def requirements(self) -> list[Requirement]:
        if self.dry_run:  # inputs are validated against veRL's own config: veRL itself
            return launch_requirements(self.ray_address)[:1]
        return launch_requirements(self.ray_address)

    def verify(self, run_dir: Path, manifest: Manifest) -> list[str]:
        # train rows come from veRL's logger: their absence must not relaunch a GPU job
        return result_problems(run_dir, manifest, train=False)

    def status_fields(self, run_dir: Path) -> dict[str, Any]:
        return job_fields(run_dir)

    def announce(self, run_dir: Path) -> str | None:
        folder = Path(run_dir) / VERL_DIR
        if self.dry_run:
            return f"{folder / 'launch.sh'}: veRL inputs and launch script"
        where = f"Ray job at {self.ray_address}" if self.ray_address else "veRL here"
        return f"{run_dir}: {where} (log: {folder / LOG})"
