"""veRL backend: a planned run becomes veRL 0.9.1 inputs and a launch script (inputs), checked
on CPU against veRL's own config (overrides), launched here (launch) or as a Ray job (the
runner's Ray executor), and its validation dumps become eval.parquet (dumps). veRL, Hydra,
torch and Ray are imported lazily."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Literal

from hscale.contracts import Manifest, result_problems
from hscale.train.backends._base import Backend, Progress, RayJob, StepProgress
from hscale.train.backends._clean import drop_checkpoints
from hscale.train.backends._environment import Requirement, require
from hscale.train.backends.verl._check import validate_overrides, verdict_key
from hscale.train.backends.verl._dumps import (
    import_metrics,
    import_profiles,
    import_validation,
)
from hscale.train.backends.verl._inputs import OUT_ENV, prepare_verl_run
from hscale.train.backends.verl._launch import (
    JOB_RECORD,
    LOG,
    RAY_EXCLUDES,
    check_launch,
    launch_local,
    launch_requirements,
)
from hscale.train.backends.verl._overrides import VERL_DIR, build_overrides, settings
from hscale.train.backends.verl.rescue import check_rescue
from hscale.train.blackbox import fine_tuned, sft_rows
from hscale.train.planning import Recorder, is_blackbox_sft


class VerlBackend(Backend):
    """Run a planned run with veRL: its inputs and launch.sh written, launch.sh run here (one
    at a time: it holds this machine's GPUs) or as a job on a Ray cluster; then its
    validation dumps become eval.parquet. ``export`` writes the inputs and launch.sh only.
    ``overrides``: more Hydra overrides for every launch (after the spec's own), validated
    like them."""

    name = "verl"
    max_workers: ClassVar[int | None] = 1
    ray: ClassVar[Literal["task", "job"] | None] = "job"

    def __init__(self, overrides: Sequence[str] = ()) -> None:
        self.overrides = list(overrides)

    def check(self, manifests: Sequence[Manifest]) -> None:
        """Every run's overrides validated against veRL's own config (veRL is needed for
        that), its rescue arms against what veRL can rescue. Runs whose overrides differ only
        in their log labels share a verdict (:func:`verdict_key`): each is composed once."""
        require(launch_requirements(False)[:1])
        check_rescue(manifests)
        checked = set()
        for manifest in manifests:
            overrides = [*build_overrides(Path("."), manifest), *self.overrides]
            if (key := verdict_key(overrides)) not in checked:
                validate_overrides(overrides)
                checked.add(key)

    def prepare(self, manifests: Sequence[Manifest], progress: Progress | None = None,
                on_ray: bool = False) -> None:
        """What a launch needs here (GPUs and vLLM, or veRL's CPU platform), or on a Ray
        cluster (the GPUs of its nodes, said in the spec), before anything is written."""
        if manifests:
            check_launch(manifests, on_ray)

    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        run_dir = Path(run_dir)
        _fine_tune(run_dir, manifest, progress)
        prepare_verl_run(run_dir, manifest, validate=False)
        steps = manifest.budget.steps
        if progress is not None:
            progress(0 if not is_blackbox_sft(manifest) else steps, steps)
        launch_local(run_dir, self.overrides)
        self.collect(run_dir, manifest)
        if progress is not None:
            progress(steps, steps)

    def export(self, run_dir: Path, manifest: Manifest) -> Path:
        """The run's veRL inputs and its launch.sh, which runs anywhere veRL is installed."""
        prepare_verl_run(Path(run_dir), manifest, validate=False)
        return Path(run_dir) / VERL_DIR / "launch.sh"

    def ray_work(self, run_dir: Path, manifest: Manifest) -> RayJob:
        """launch.sh as a job whose working_dir is verl/; its outputs go to this run
        folder's absolute path, so the cluster must see the runs folder at the same path."""
        run_dir = Path(run_dir).resolve()
        _fine_tune(run_dir, manifest)  # here: the job validates what it wrote
        prepare_verl_run(run_dir, manifest, validate=False)
        out = run_dir / VERL_DIR
        return RayJob(shlex.join(["bash", "launch.sh", *self.overrides]), out, out / LOG,
                      out / JOB_RECORD, env_vars={OUT_ENV: str(out)}, excludes=RAY_EXCLUDES)

    def collect(self, run_dir: Path, manifest: Manifest) -> None:
        """veRL's validation dumps and metrics as eval.parquet and train.parquet; a black-box
        SFT run's one validation is of its fine-tuned model (its final step), its train rows
        the fine-tune's."""
        results = Recorder(run_dir, manifest, read=False)  # the one writer of the results
        if is_blackbox_sft(manifest):
            import_validation(run_dir, manifest, results, step=manifest.budget.steps)
            results.replace_train(sft_rows(_fine_tune(run_dir, manifest)))
        else:
            import_validation(run_dir, manifest, results)
            results.replace_train(import_metrics(run_dir))
            import_profiles(run_dir)
        results.save()
        if settings(manifest).checkpoints == "drop":  # results are in; resume is not needed
            drop_checkpoints(run_dir)

    def requirements(self) -> list[Requirement]:
        return launch_requirements(False)

    def verify(self, run_dir: Path, manifest: Manifest) -> list[str]:
        # train rows come from veRL's logger: their absence must not relaunch a GPU job
        return result_problems(run_dir, manifest, train=False)

    def announce(self, run_dir: Path) -> str | None:
        return f"{run_dir}: veRL (log: {Path(run_dir) / VERL_DIR / LOG})"


def _fine_tune(run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
               ) -> dict | None:
    """A black-box SFT run's teacher episodes and fine-tune, before veRL validates the
    result (done once: a resumed run finds them); its sft.json. Nothing for other runs."""
    if not is_blackbox_sft(manifest):
        return None
    from hscale.train.spec import resolve_model

    return fine_tuned(run_dir, manifest, resolve_model(manifest.model), progress)[1]
