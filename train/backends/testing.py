"""The backend contract as a pytest suite: subclass it to check a backend the way hscale
checks its own (as optuna ships its sampler tests)::

    class TestMyBackend(BackendContract):
        cli_args = ("--backend", "mine")

        @pytest.fixture(scope="class")
        def backend(self):
            return MyBackend()

What every backend must do, under the runner (hscale.train.runner): end every planned run in a
recorded state (COMPLETED, or untouched by a dry run), write result files that keep the
file contracts (hscale.train.contracts), hear of every run in ``prepare`` before anything is
written, never run a finished run again, let one failing run fail alone, keep its
``status_fields`` in status.json, and give from the command line what it gives from Python.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest
import yaml

from hscale.train.backends.base import Backend
from hscale.train.contracts import (
    EVAL,
    STATUS,
    TRAIN,
    Manifest,
    RunState,
    check_eval,
    read_status,
)
from hscale.train.runner import run_experiment

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


class BackendContract:
    """The suite; a subclass gives the ``backend`` fixture, ``spec_changes`` (e.g. a small
    model) and ``cli_args`` (how ``hscale run`` selects the same backend)."""

    spec_changes: ClassVar[dict[str, Any]] = {}
    cli_args: ClassVar[tuple[str, ...]] = ()
    compared: ClassVar[tuple[str, ...]] = (EVAL, TRAIN)  # files both routes must equal

    @pytest.fixture(scope="class")
    def backend(self) -> Backend:
        raise NotImplementedError("a subclass gives its backend")

    # --- helpers ---------------------------------------------------------------------
    @classmethod
    def write_spec(cls, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "contract.yaml"
        path.write_text(yaml.safe_dump({**SPEC, **cls.spec_changes}))
        return path

    @pytest.fixture(scope="class")
    def ran(self, backend, tmp_path_factory) -> dict[str, Any]:
        """One run of the spec through the runner, with what the backend was asked to do."""
        folder = tmp_path_factory.mktemp("contract")
        spec, out = self.write_spec(folder), folder / "runs"
        seen: dict[str, Any] = {"prepared": [], "runs": [], "out_existed": []}
        prepare, run = backend.prepare, backend.run

        def spy_prepare(manifests, progress=None):
            seen["out_existed"].append(out.exists())
            seen["prepared"].append([m.hash for m in manifests])
            return prepare(manifests, progress)

        def spy_run(run_dir, manifest, progress=None):
            seen["runs"].append(Path(run_dir))
            return run(run_dir, manifest, progress)

        backend.prepare, backend.run = spy_prepare, spy_run
        try:
            states = run_experiment(spec, out, backend=backend)
            again = run_experiment(spec, out, backend=backend)
        finally:
            del backend.prepare, backend.run
        return {"spec": spec, "out": out, "states": states, "again": again, **seen}

    # --- the contract ----------------------------------------------------------------
    def test_every_planned_run_ends_in_a_recorded_state(self, backend, ran):
        runs = sorted(Path(p) for p in ran["states"])
        # every arm, and the base model's reference run, at every seed
        assert len(runs) == (len(SPEC["arms"]) + 1) * len(SPEC["seeds"])
        for run_dir in runs:
            status = read_status(run_dir)
            if backend.dry_run:
                assert status.state is RunState.PLANNED and not (run_dir / STATUS).exists()
            else:
                assert status.state is RunState.COMPLETED, status
                assert status.manifest_hash == Manifest.read(run_dir).hash
                assert status.backend == backend.name and status.completed_at

    def test_result_files_keep_the_contracts(self, backend, ran):
        if backend.dry_run:
            pytest.skip("a dry run writes inputs, no results")
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

    def test_prepare_hears_every_run_before_anything_is_written(self, ran):
        assert ran["out_existed"][0] is False  # nothing written before the first prepare
        assert len(ran["prepared"][0]) == len(ran["states"])

    def test_finished_runs_are_not_run_again(self, backend, ran):
        if backend.dry_run:  # nothing finished: a dry run writes the inputs again
            assert len(ran["runs"]) == 2 * len(ran["states"])
            return
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
            if backend.dry_run:  # nothing ran, so nothing failed: the error is the user's
                with pytest.raises(RuntimeError, match="this run breaks"):
                    run_experiment(spec, out, backend=backend)
                return
            states = run_experiment(spec, out, backend=backend)
        finally:
            del backend.run
        by_arm = {Path(p).parent.name: s for p, s in states.items()}
        assert by_arm == {"single": "FAILED", "structured": "COMPLETED",
                          "base-model": "COMPLETED"}
        failed = read_status(out / "contract" / "single" / "0")
        assert "RuntimeError: this run breaks" in failed.error

    def test_a_replanned_run_starts_over(self, backend, tmp_path):
        """Results of an earlier plan of a run never pass for the new plan's."""
        if backend.dry_run:
            pytest.skip("a dry run writes inputs, no results")
        spec, out = self.write_spec(tmp_path), tmp_path / "runs"
        run_experiment(spec, out, backend=backend)
        changed = {**SPEC, **self.spec_changes,
                   "evaluation": {**SPEC["evaluation"], "runs": 1}}
        spec.write_text(yaml.safe_dump(changed))
        from hscale.train.plan import plan

        plan(spec, out, force=True)
        run_experiment(spec, out, backend=backend)
        for run_dir in (out / "contract").glob("*/0"):
            evals = pd.read_parquet(run_dir / EVAL)
            assert set(evals.run) == {0}, run_dir

    def test_status_fields_reach_status_json(self, backend, ran):
        for run_dir in map(Path, ran["states"]):
            fields = backend.status_fields(run_dir)
            if not backend.dry_run:
                recorded = json.loads((run_dir / STATUS).read_text())
                assert {k: recorded.get(k) for k in fields} == fields

    def test_the_command_line_gives_what_python_gives(self, backend, ran, tmp_path):
        if not self.cli_args:
            pytest.skip("this backend has no command-line form")
        out = tmp_path / "runs"
        done = subprocess.run([sys.executable, "-m", "hscale.cli", "run",
                               str(self.write_spec(tmp_path)), "--out", str(out),
                               "--workers", "1", *self.cli_args],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        for run_dir in map(Path, ran["states"]):
            other = out / run_dir.relative_to(ran["out"])
            assert read_status(other).state is read_status(run_dir).state
            for name in self.compared:
                got, want = pd.read_parquet(other / name), pd.read_parquet(run_dir / name)
                got, want = (f.drop(columns=[c for c in TIMINGS if c in f]) for f in (got, want))
                pd.testing.assert_frame_equal(got, want, check_like=True)

TIMINGS = ("rollout_s", "update_s", "tokens_per_s")  # wall-clock metrics differ run to run
