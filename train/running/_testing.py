"""The backend contract as a pytest suite: subclass it to check a backend the way hscale
checks its own (as optuna ships its sampler tests)::

    class TestMyBackend(BackendContract):
        cli_args = ("--backend", "mine")

        def make_backend(self):
            return MyBackend()

What every backend must do, under the runner (hscale.train.running): end every planned run in a
recorded state, write result files that keep the file contracts (hscale.contracts),
hear of every run in ``check`` and ``prepare`` before anything is written, never run a
finished run again, let one failing run fail alone, and give from the command line what it
gives from Python. A backend that exports (``Backend.export``) also passes
:class:`ExportContract`: every run's inputs written, no state changed, the same again.

The suite lives beside the runner it drives (nothing below it imports it). Its expensive
fixtures are built once per class (cached on the class, not class-scoped instance fixtures).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest
import yaml

from hscale.contracts import (
    EVAL,
    STATUS,
    TRAIN,
    Manifest,
    RunState,
    check_eval,
    read_status,
)
from hscale.train.backends import Backend
from hscale.train.running._runner import export_experiment, run_experiment

SPEC: dict[str, Any] = {
    "name": "contract",
    "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 2, "rollouts": 2},
    "steps": 2, "seeds": [0],
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 2, "tasks": 4,
                   "episodes": 4},
    "defaults": {"train": {"recipe": "structured", "runs": 18},
                 "assignment": {"mode": "locality", "k": 2}},
    "arms": {"structured": {}, "single": {"train": "single",
                                          "assignment": {"mode": "repeat", "k": 2}}},
}
TIMINGS = ("rollout_s", "update_s", "tokens_per_s")  # wall-clock metrics differ run to run


class _Contract:
    """What both suites share: the subclass's backend, its spec, and a per-class cache."""

    spec_changes: ClassVar[dict[str, Any]] = {}
    cli_args: ClassVar[tuple[str, ...]] = ()

    def make_backend(self) -> Backend:
        raise NotImplementedError("a subclass gives its backend")

    @classmethod
    def cached(cls, key: str, build: Callable[[], Any]) -> Any:
        """``build()`` once per test class (each subclass has its own cache)."""
        cache = cls.__dict__.get("_cache")
        if cache is None:
            cache = {}
            cls._cache = cache  # type: ignore[attr-defined]
        if key not in cache:
            cache[key] = build()
        return cache[key]

    @pytest.fixture
    def backend(self) -> Backend:
        return self.cached("backend", self.make_backend)

    @classmethod
    def write_spec(cls, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "contract.yaml"
        path.write_text(yaml.safe_dump({**SPEC, **cls.spec_changes}))
        return path

    def command_line(self, tmp_path: Path, out: Path) -> subprocess.CompletedProcess:
        """``hscale run`` of the same spec, as a user runs it (a process: the suite sits
        below the command line and imports nothing of it)."""
        return subprocess.run([sys.executable, "-m", "hscale.cli", "run",
                               str(self.write_spec(tmp_path)), "--out", str(out),
                               "--workers", "1", *self.cli_args],
                              capture_output=True, text=True, timeout=600)


class BackendContract(_Contract):
    """The suite for running; a subclass gives ``make_backend``, ``spec_changes`` (e.g. a
    small model) and ``cli_args`` (how ``hscale run`` selects the same backend)."""

    compared: ClassVar[tuple[str, ...]] = (EVAL, TRAIN)  # files both routes must equal

    @pytest.fixture
    def ran(self, backend, tmp_path_factory) -> dict[str, Any]:
        """One run of the spec through the runner (then a second, which must find it
        done), with what the backend was asked to do; once per class."""
        return self.cached("ran", lambda: self._run_twice(backend, tmp_path_factory))

    def _run_twice(self, backend: Backend, tmp_path_factory) -> dict[str, Any]:
        folder = tmp_path_factory.mktemp("contract")
        spec, out = self.write_spec(folder), folder / "runs"
        seen: dict[str, Any] = {"prepared": [], "checked": [], "runs": [], "out_existed": []}
        check, prepare, run = backend.check, backend.prepare, backend.run

        def spy_check(manifests):
            seen["checked"].append([m.hash for m in manifests])
            return check(manifests)

        def spy_prepare(manifests, progress=None, on_ray=False):
            seen["out_existed"].append(out.exists())
            seen["prepared"].append([m.hash for m in manifests])
            return prepare(manifests, progress, on_ray)

        def spy_run(run_dir, manifest, progress=None):
            seen["runs"].append(Path(run_dir))
            return run(run_dir, manifest, progress)

        backend.check, backend.prepare, backend.run = spy_check, spy_prepare, spy_run
        try:
            states = run_experiment(spec, out, backend=backend)
            again = run_experiment(spec, out, backend=backend)
        finally:
            del backend.check, backend.prepare, backend.run
        return {"spec": spec, "out": out, "states": states, "again": again, **seen}

    # --- the contract ----------------------------------------------------------------
    def test_every_planned_run_ends_in_a_recorded_state(self, backend, ran):
        runs = sorted(Path(p) for p in ran["states"])
        # every arm, and the base model's reference run, at every seed
        assert len(runs) == (len(SPEC["arms"]) + 1) * len(SPEC["seeds"])
        for run_dir in runs:
            status = read_status(run_dir)
            assert status.state is RunState.COMPLETED, status
            assert status.manifest_hash == Manifest.read(run_dir).hash
            assert status.backend == backend.name and status.completed_at

    def test_result_files_keep_the_contracts(self, ran):
        for run_dir in map(Path, ran["states"]):
            manifest, problems = Manifest.read(run_dir), []
            evals = check_eval(pd.read_parquet(run_dir / EVAL), str(run_dir), problems)
            assert problems == [] and evals is not None and len(evals)
            for column in ("experiment", "arm", "seed"):
                assert set(evals[column].astype(str)) == {str(getattr(manifest, column))}
            assert set(evals.setting) == set(manifest.eval_sets)
            assert set(evals.harness) <= {h for hs in manifest.eval_sets.values() for h in hs}
            sampled = evals[evals.get("decoding", "sampled") == "sampled"]
            assert set(sampled.run) == set(range(manifest.evaluation.runs))
            train = pd.read_parquet(run_dir / TRAIN)
            assert train.step.tolist() == list(range(manifest.budget.steps))

    def test_check_and_prepare_hear_every_run_before_anything_is_written(self, ran):
        assert ran["out_existed"][0] is False  # nothing written before the first prepare
        assert ran["checked"][0] == ran["prepared"][0]
        assert len(ran["prepared"][0]) == len(ran["states"])

    def test_finished_runs_are_not_run_again(self, ran):
        assert ran["prepared"][1] == [] and len(ran["runs"]) == len(ran["states"])
        assert set(ran["again"].values()) == {RunState.COMPLETED.value}

    def test_a_failing_run_fails_alone(self, backend, tmp_path):
        spec, out = self.write_spec(tmp_path), tmp_path / "runs"
        run = backend.run

        def fail_one(run_dir, manifest, progress=None):
            if manifest.arm == "single":
                raise RuntimeError("this run breaks")
            return run(run_dir, manifest, progress)

        backend.run = fail_one
        try:
            states = run_experiment(spec, out, backend=backend)
        finally:
            del backend.run
        by_arm = {Path(p).parent.name: s for p, s in states.items()}
        assert by_arm == {"single": "FAILED", "structured": "COMPLETED",
                          "base-model": "COMPLETED"}
        failed = read_status(out / "contract" / "single" / "0")
        assert "RuntimeError: this run breaks" in failed.error

    def test_a_replanned_run_starts_over(self, backend, ran, tmp_path):
        """Results of an earlier plan of a run never pass for the new plan's (the first
        run's folder, copied, then re-planned)."""
        from hscale.train.planning import plan

        out = tmp_path / "runs"
        shutil.copytree(ran["out"], out)
        spec = self.write_spec(tmp_path)
        changed = {**SPEC, **self.spec_changes,
                   "evaluation": {**SPEC["evaluation"], "runs": 1}}
        spec.write_text(yaml.safe_dump(changed))
        plan(spec, out, force=True)
        run_experiment(spec, out, backend=backend)
        for run_dir in (out / "contract").glob("*/0"):
            evals = pd.read_parquet(run_dir / EVAL)
            assert set(evals.run) == {0}, run_dir

    def test_the_command_line_gives_what_python_gives(self, ran, tmp_path):
        if not self.cli_args:
            pytest.skip("this backend has no command-line form")
        out = tmp_path / "runs"
        done = self.command_line(tmp_path, out)
        assert done.returncode == 0, done.stderr[-2000:]
        for run_dir in map(Path, ran["states"]):
            other = out / run_dir.relative_to(ran["out"])
            assert read_status(other).state is read_status(run_dir).state
            for name in self.compared:
                got, want = pd.read_parquet(other / name), pd.read_parquet(run_dir / name)
                got, want = (f.drop(columns=[c for c in TIMINGS if c in f]) for f in (got, want))
                pd.testing.assert_frame_equal(got, want, check_like=True)


class ExportContract(_Contract):
    """The suite for exporting (``hscale run --dry-run``): ``compared`` names the files an
    export writes in a run folder, which the command line must write alike."""

    compared: ClassVar[tuple[str, ...]] = ()

    @pytest.fixture
    def exported(self, backend, tmp_path_factory) -> dict[str, Any]:
        return self.cached("exported", lambda: self._export_twice(backend, tmp_path_factory))

    def _export_twice(self, backend: Backend, tmp_path_factory) -> dict[str, Any]:
        folder = tmp_path_factory.mktemp("export")
        spec, out = self.write_spec(folder), folder / "runs"
        seen: dict[str, Any] = {"checked": [], "out_existed": []}
        check = backend.check

        def spy_check(manifests):
            seen["out_existed"].append(out.exists())
            seen["checked"].append([m.hash for m in manifests])
            return check(manifests)

        backend.check = spy_check
        try:
            first = export_experiment(spec, out, backend=backend)
            snapshot = {p: p.read_bytes() for p in first}
            second = export_experiment(spec, out, backend=backend)
        finally:
            del backend.check
        return {"spec": spec, "out": out, "first": first, "second": second,
                "snapshot": snapshot, **seen}

    def test_every_run_is_exported_and_no_state_changes(self, exported):
        runs = {p.parent for p in (exported["out"] / "contract").glob("*/0/manifest.json")}
        assert len(runs) == (len(SPEC["arms"]) + 1) * len(SPEC["seeds"])
        assert len(exported["first"]) == len(runs)
        for path in exported["first"]:
            assert path.is_file()
        for run_dir in runs:
            assert read_status(run_dir).state is RunState.PLANNED
            assert not (run_dir / STATUS).exists()

    def test_check_hears_every_run_before_anything_is_written(self, exported):
        assert exported["out_existed"][0] is False
        assert len(exported["checked"][0]) == len(exported["first"])

    def test_exporting_again_writes_the_same(self, exported):
        assert exported["second"] == exported["first"]
        assert {p: p.read_bytes() for p in exported["second"]} == exported["snapshot"]

    def test_a_failing_export_is_the_users_error_as_it_is(self, backend, tmp_path):
        """Nothing ran, so nothing failed: the error comes through unchanged."""
        spec, out = self.write_spec(tmp_path), tmp_path / "runs"
        export = backend.export

        def fail_one(run_dir, manifest):
            if manifest.arm == "single":
                raise RuntimeError("this export breaks")
            return export(run_dir, manifest)

        backend.export = fail_one
        try:
            with pytest.raises(RuntimeError, match="this export breaks"):
                export_experiment(spec, out, backend=backend)
        finally:
            del backend.export

    def test_the_command_line_gives_what_python_gives(self, exported, tmp_path):
        if not self.cli_args:
            pytest.skip("this backend has no command-line form")
        out = tmp_path / "runs"
        done = self.command_line(tmp_path, out)
        assert done.returncode == 0, done.stderr[-2000:]
        for path in exported["first"]:
            run_dir = next(p for p in path.parents if (p / "manifest.json").is_file())
            other = out / run_dir.relative_to(exported["out"])
            for name in self.compared:
                got, want = pd.read_parquet(other / name), pd.read_parquet(run_dir / name)
                pd.testing.assert_frame_equal(got, want, check_like=True)
