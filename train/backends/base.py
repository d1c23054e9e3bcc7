"""The backend contract: what runs one planned run. Kept tiny, as the seam between the
runner and whatever trains (the embedded CPU trainer, veRL on GPUs, a scripted fake).

The runner (hscale.train.runner) owns the lifecycle: it plans, skips finished runs, calls
``prepare`` once with the manifests it is about to run (before anything is written), calls
``run`` per run and records each run's state in status.json; no backend writes status.json.
A backend reports progress through the callback it is given; each report also lets the
runner record new ``status_fields`` at once (a Ray job id the moment the job exists).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from hscale.train.contracts import Manifest, result_problems
from hscale.train.environment import Requirement

StepProgress = Callable[[int, int], None]  # (steps done, steps in all)
Progress = Callable[[str, int, int], None]  # (what, done, total)


class Backend(ABC):
    """Runs a planned run to completion, resuming from what its folder already holds."""

    name: ClassVar[str]
    # A dry run writes each run's inputs and trains nothing: the runner leaves states as they
    # are and lets errors through as they are (nothing ran, so nothing failed).
    dry_run: bool = False
    # At most this many runs at once (None: as many as the runner's workers); a backend that
    # holds this machine's GPUs says 1.
    max_workers: int | None = None
    # Runs whose work happens elsewhere (Ray tasks) are followed from threads of the runner's
    # process rather than worker processes of their own.
    in_threads: bool = False

    def prepare(self, manifests: Sequence[Manifest],  # noqa: B027 -- a no-op by default
                progress: Progress | None = None) -> None:
        """Check prerequisites and build what the runs share; called before anything is
        written, with the manifests of every run about to run. Default: nothing to do."""

    @abstractmethod
    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        """Run to completion, writing the run's result files; raise if it fails."""

    def requirements(self) -> list[Requirement]:
        """What this backend needs on this machine (``hscale doctor`` lists them; ``prepare``
        refuses the first one missing). Default: nothing."""
        return []

    def verify(self, run_dir: Path, manifest: Manifest) -> list[str]:
        """Why a run marked COMPLETED is not (its files do not hold it; the runner redoes
        it). Default: the contracted eval.parquet and a train.parquet row a step."""
        return result_problems(run_dir, manifest)

    def status_fields(self, run_dir: Path) -> dict[str, Any]:
        """Extra fields for status.json (e.g. ``ray_job_id``). Default: none."""
        return {}

    def announce(self, run_dir: Path) -> str | None:
        """A line for the user as a run starts (where its log or its inputs go), or None.
        Default: none (a progress bar says enough)."""
        return None
