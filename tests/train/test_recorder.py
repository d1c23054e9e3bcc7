"""The run's recorder, the one writer of its result files: what a driver hands it comes back
from the folder as rows of the contract (transcripts included), a resumed run continues at
its checkpoint with nothing past it and nothing missing before it, a save rewrites only
the files whose rows grew, and a damaged file is said, never read as an empty run."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.contracts import (
    EVAL,
    ROLLOUTS,
    TRAIN,
    TRANSCRIPTS,
    DumpedEpisode,
    Manifest,
    Outcome,
    check_eval,
    read_eval,
    reward_extras,
    tag_truth,
)
from hscale.harness import EPISODE_TURNS, NoisyOracle, run_episode
from hscale.train.planning import Recorder, RunPlan, harness_of, plan

SPEC = {
    "name": "rec", "model": "hscale-test",
    "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 2, "rollouts": 2, "lr": 1e-3},
    "steps": 3, "seeds": [0], "keep_rollouts": 1.0,
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 1, "tasks": 2,
                   "episodes": 2, "base_model": False},
    "arms": {"k1": {"train": {"recipe": "structured", "runs": 18},
                    "assignment": {"mode": "locality", "k": 1}}},
}


@pytest.fixture
def run(tmp_path) -> tuple[Path, Manifest]:
    spec = tmp_path / "rec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    (item,) = plan(spec, tmp_path / "runs")
    return item.path, Manifest.read(item.path)


def _evaluate(results: Recorder, manifest: Manifest, step: int) -> int:
    """The plan's evaluation played by a scripted policy, handed to ``results``."""
    jobs = RunPlan(manifest).evaluation()
    for i, job in enumerate(jobs):
        harness = harness_of(manifest, job.harness)
        episode = run_episode(NoisyOracle(job.task, harness, 0.3, seed=i), harness, job.task,
                              max_turns=EPISODE_TURNS)
        results.evaluated(job, episode, step)
    return len(jobs)


def _train(results: Recorder, manifest: Manifest, step: int) -> None:
    """A step's rollouts (two groups of two) kept, and its metrics."""
    jobs = RunPlan(manifest).evaluation()[:2]
    played = []
    for g, job in enumerate(jobs):
        harness = harness_of(manifest, job.harness)
        for r in range(2):
            episode = run_episode(NoisyOracle(job.task, harness, 0.5, seed=10 * step + r),
                                  harness, job.task, max_turns=EPISODE_TURNS)
            played.append((g, job.harness, job.task.task_id, episode))
    results.kept(step, played)
    results.trained(step, {"reward_mean": 0.5 + step / 10})


def test_what_a_driver_hands_it_comes_back_as_contracted_rows(run):
    run_dir, manifest = run
    results = Recorder(run_dir, manifest)
    evaluated = _evaluate(results, manifest, 0)
    _train(results, manifest, 0)
    results.save()
    problems: list[str] = []  # the contract's own check of eval.parquet
    assert check_eval(pd.read_parquet(run_dir / EVAL), EVAL, problems) is not None
    assert problems == []
    rows = read_eval(run_dir, transcripts=True)
    assert len(rows) == evaluated and rows["transcript"].str.startswith("{").all()
    assert len(pd.read_parquet(run_dir / TRANSCRIPTS)) == evaluated
    assert len(pd.read_parquet(run_dir / ROLLOUTS)) == 4  # every group kept (share 1.0)
    assert pd.read_parquet(run_dir / TRAIN).to_dict("list") == {"step": [0],
                                                                 "reward_mean": [0.5]}
    again = Recorder(run_dir, manifest)
    assert not again.damaged and again.last_evaluated == 0 and again.steps_trained == [0]


def test_an_outcome_by_identity_is_the_same_row_as_an_episode_of_that_job(run):
    run_dir, manifest = run
    job = RunPlan(manifest).evaluation()[0]
    harness = harness_of(manifest, job.harness)
    episode = run_episode(NoisyOracle(job.task, harness, 0.0, seed=1), harness, job.task,
                          max_turns=EPISODE_TURNS)
    by_job = Recorder(run_dir, manifest, read=False).evaluated(job, episode, 2)
    from hscale.harness import outcome

    by_identity = Recorder(run_dir, manifest, read=False).record(
        outcome(episode, job.harness), step=2, run=job.run, benchmark=job.benchmark,
        setting=job.setting, harness=job.harness, task_id=job.task.task_id,
        decoding=job.decoding, category=job.task.category)
    assert by_job == by_identity and by_job["success"] is True


def test_a_resumed_run_drops_rows_past_its_checkpoint_and_sees_rows_missing_before_it(run):
    run_dir, manifest = run
    results = Recorder(run_dir, manifest)
    _evaluate(results, manifest, 0)
    for step in range(3):
        _train(results, manifest, step)
        results.save()
    _evaluate(results, manifest, 3)
    results.save()
    resumed = Recorder(run_dir, manifest)
    assert resumed.gap(2, 0) == ""
    resumed.resume(2, 0)  # the checkpoint: two steps trained, evaluated at step 0
    assert resumed.steps_trained == [0, 1] and resumed.last_evaluated == 0
    assert sorted(set(r["step"] for r in resumed.rollouts)) == [0, 1]
    assert "holds 3 of the 4 steps" in Recorder(run_dir, manifest).gap(4, 0)
    assert "no rows of the step 2 evaluation" in Recorder(run_dir, manifest).gap(2, 2)


def _saved_step(run_dir: Path, manifest: Manifest) -> Recorder:
    """A recorder that has saved the step-0 evaluation and one training step."""
    results = Recorder(run_dir, manifest)
    _evaluate(results, manifest, 0)
    _train(results, manifest, 0)
    results.save()
    return results


def test_a_save_rewrites_only_the_files_whose_rows_grew(run):
    run_dir, manifest = run
    results = _saved_step(run_dir, manifest)
    before = {name: (run_dir / name).stat().st_ino for name in (EVAL, TRANSCRIPTS, TRAIN)}
    results.trained(1, {"reward_mean": 0.1})
    results.save()
    after = {name: (run_dir / name).stat().st_ino for name in (EVAL, TRANSCRIPTS, TRAIN)}
    assert after[EVAL] == before[EVAL] and after[TRANSCRIPTS] == before[TRANSCRIPTS]
    assert after[TRAIN] != before[TRAIN]  # an atomic write is a new file


def test_a_damaged_file_is_said_and_starting_over_removes_every_result(run):
    run_dir, manifest = run
    _saved_step(run_dir, manifest)
    (run_dir / EVAL).write_bytes((run_dir / EVAL).read_bytes()[:40])  # torn
    damaged = Recorder(run_dir, manifest)
    assert damaged.damaged and damaged.gap(1, 0) == "a result file is unreadable"
    damaged.start_over(remove=True)
    assert not any((run_dir / n).exists() for n in (EVAL, TRANSCRIPTS, TRAIN, ROLLOUTS))
    assert damaged.steps_trained == [] and damaged.last_evaluated == -1


def test_a_checker_failure_is_a_typed_error_kind_on_every_route():
    failed = Outcome(0.0, False, 2, error="checker: timeout after 10 s")
    assert failed.checker_failed and not Outcome(0.0, False, 2, error="cli: died").checker_failed
    dumped = {"score": 0.0, "step": 0, "gts": tag_truth("{}", 0), **reward_extras(failed)}
    back = DumpedEpisode.read(dumped, "dump:1", 1).outcome  # veRL's dump and back
    assert back.checker_failed and back.error.startswith("checker: ")
    assert math.isnan(back.seconds) and back.transcript is None
