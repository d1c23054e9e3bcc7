"""The backend contract: what runs one planned run. Kept small, as the seam between the
runner and whatever trains (the embedded CPU trainer, veRL on GPUs, a scripted fake).

The runner (hscale.train.running._runner) owns the lifecycle and where runs execute: it plans, skips
finished runs, calls ``check`` and then ``prepare`` once with the manifests it is about to run
(before anything is written), runs each run here (``run``) or on a Ray cluster
(``ray_work``, then ``collect``), and records each run's state in status.json; no backend
writes status.json. ``export`` is not a run: it writes what a run needs to run elsewhere,
and the runner's export changes no state.

Everything a backend declares about itself is a class attribute, fixed before any run:
``name``, ``max_workers`` (how many of its runs this machine takes at once), ``ray``
(how its runs travel to a Ray cluster: as a Python task or as a job's command line) and
``preload`` (modules its worker processes import once, before they fork).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from hscale.contracts import Manifest, result_problems
from hscale.errors import HscaleError
from hscale.train.backends._environment import Requirement

StepProgress = Callable[[int, int], None]  # (steps done, steps in all)
Progress = Callable[[str, int, int], None]  # (what, done, total)


@dataclass(frozen=True)
class RayTask:
    """A run as a Ray task: ``function`` (``"module:attribute"``, called with the run folder,
    its manifest and a step-progress callback) runs on a cluster node, on the folder itself
    where the node sees it, else on a copy whose result files come back after every step;
    ``models`` are the base models it needs, shared through the object store."""

    function: str
    models: tuple[str, ...] = ()


@dataclass(frozen=True)
class RayJob:
    """A run as a Ray job: ``entrypoint`` runs in an uploaded copy of ``working_dir`` (less
    ``excludes``) with ``env_vars``; its logs are kept in ``log`` and its id in ``record``
    (a re-run re-attaches to a job still running)."""

    entrypoint: str
    working_dir: Path
    log: Path
    record: Path
    env_vars: Mapping[str, str] = field(default_factory=dict)
    excludes: tuple[str, ...] = ()


class Backend(ABC):
    """Runs a planned run to completion, resuming from what its folder already holds."""

    name: ClassVar[str]
    # At most this many of its runs at once on this machine (None: as many as the runner's
    # workers); a backend whose runs hold this machine's GPUs says 1.
    max_workers: ClassVar[int | None] = None
    # How a run goes to a Ray cluster: "task" (ray_work gives a RayTask), "job" (a RayJob),
    # or None (it runs here only).
    ray: ClassVar[Literal["task", "job"] | None] = None
    # Modules the runner's worker processes share, imported once where the platform forks
    # them from a server (torch and veRL take seconds a process to import).
    preload: ClassVar[tuple[str, ...]] = ()

    def check(self, manifests: Sequence[Manifest]) -> None:  # noqa: B027 -- no-op default
        """Refuse, in one line, runs this backend cannot run or export; called before
        anything is written, for a run and for an export alike. Default: nothing to check."""

    def prepare(self, manifests: Sequence[Manifest],  # noqa: B027 -- no-op default
                progress: Progress | None = None, on_ray: bool = False) -> None:
        """Ready the runs about to run, here or (``on_ray``) on a Ray cluster: what they
        share (a base model), and what this machine or the cluster must have; called after
        ``check``, before anything is written. Default: nothing to do."""

    @abstractmethod
    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        """Run to completion here, writing the run's result files; raise if it fails."""

    def export(self, run_dir: Path, manifest: Manifest) -> Path:
        """Write what the run needs to run elsewhere; the file that starts it. Default: a
        backend whose runs need this process has nothing to export."""
        raise HscaleError(f"the {self.name} backend has nothing to export",
                          "drop --dry-run (the verl backend exports veRL inputs)")

    def ray_work(self, run_dir: Path, manifest: Manifest) -> RayTask | RayJob:
        """What runs on the Ray cluster for this run (see :attr:`ray`); inputs it needs are
        written first. Default: none."""
        raise HscaleError(f"the {self.name} backend does not run on a Ray cluster",
                          "drop --ray-address, or use --backend local or verl")

    def collect(self, run_dir: Path, manifest: Manifest) -> None:  # noqa: B027
        """Turn what the Ray work left in the folder into the run's result files. Default:
        the work wrote them itself."""

    def requirements(self) -> list[Requirement]:
        """What this backend needs on this machine (``hscale doctor`` lists them; ``prepare``
        refuses the first one missing). Default: nothing."""
        return []

    def verify(self, run_dir: Path, manifest: Manifest) -> list[str]:
        """Why a run marked COMPLETED is not (its files do not hold it; the runner redoes
        it). Default: the contracted eval.parquet and a train.parquet row a step."""
        return result_problems(run_dir, manifest)

    def settings(self) -> dict[str, Any]:
        """The backend's settings as configured (a run's provenance.jsonl records them).
        Default: its public attributes (veRL's extra overrides, the scripted error rate)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def announce(self, run_dir: Path) -> str | None:
        """A line for the user as a run starts here (where its log goes), or None.
        Default: none (a progress bar says enough)."""
        return None
