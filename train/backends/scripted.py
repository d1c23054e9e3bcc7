"""The scripted backend: every scheduled and evaluated episode runs through the real harness
and task world, played by a scripted policy (``NoisyOracle``, a fixed error rate). Nothing is
learned and no model is loaded, so the whole pipeline (plan, run, resume, report) runs
without torch in seconds: the fake that ships with the code, for tests and for checking a
study's bookkeeping before spending compute on it.

Every step draws from a generator derived from (seed, arm, step), so a run resumed after a
crash writes exactly the rows an uninterrupted run writes; ``scripted.json`` records which
manifest the rows belong to, so a re-planned run starts over.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from hscale.files import atomic_write_text, write_parquet
from hscale.harness.blackbox import is_blackbox
from hscale.harness.engine import EPISODE_TURNS
from hscale.harness.loop import run_episode
from hscale.harness.policies import NoisyOracle
from hscale.train.backends.base import Backend, StepProgress
from hscale.train.contracts import (
    EVAL,
    TRAIN,
    Manifest,
    episode_row,
    eval_frame,
    result_problems,
    train_frame,
)
from hscale.train.schedule import Schedule
from hscale.train.workload import eval_jobs, train_tasks

RECORD = "scripted.json"


class ScriptedBackend(Backend):
    """``error_rate``: the chance that a turn of the scripted policy goes wrong."""

    name = "scripted"

    def __init__(self, error_rate: float = 0.3) -> None:
        self.error_rate = error_rate

    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        run_dir = Path(run_dir)
        self._own(run_dir, manifest)
        schedule = Schedule.read(run_dir)
        tasks = train_tasks(manifest)
        done = _read(run_dir / TRAIN)
        steps = manifest.budget.steps
        for step in schedule.steps():
            if len(done) and step <= int(done.step.max()):
                continue
            rng = manifest.rng(f"step-{step}")
            rewards, effective, checker_errors = [], 0, 0
            pairs = schedule.at(step)
            for task_id, label in pairs:
                played = [self._episode(manifest, tasks[task_id], label, rng)
                          for _ in range(manifest.budget.rollouts_per_task)]
                group = [e.reward for e in played]
                checker_errors += sum(e.checker_failed for e in played)
                rewards += group
                effective += 0 < sum(r >= 1 for r in group) < len(group)
            row = {"step": step, "reward_mean": float(np.mean(rewards)),
                   "effective_group_rate": effective / len(pairs), "episodes": len(rewards),
                   "checker_error_rate": checker_errors / len(rewards)}
            done = train_frame(pd.concat([done, pd.DataFrame([row])], ignore_index=True))
            write_parquet(run_dir / TRAIN, done)
            if progress is not None:
                progress(step + 1, steps)
        if not (run_dir / TRAIN).is_file():  # a run of 0 steps (the base model's)
            write_parquet(run_dir / TRAIN, train_frame([]))
        if result_problems(run_dir, manifest, train=False):  # none yet, or damaged
            write_parquet(run_dir / EVAL, self._evaluate(manifest))
        if progress is not None:
            progress(steps, steps)

    @staticmethod
    def _own(run_dir: Path, manifest: Manifest) -> None:
        """Rows of an earlier plan of this run, or damaged rows, are dropped: the run starts
        over."""
        record = run_dir / RECORD
        try:
            mine = json.loads(record.read_text()).get("manifest_hash") == manifest.hash
            if (run_dir / TRAIN).is_file():
                pd.read_parquet(run_dir / TRAIN)
        except Exception:  # no record, another plan's, or a damaged train.parquet
            mine = False
        if not mine:
            for name in (TRAIN, EVAL):
                (run_dir / name).unlink(missing_ok=True)
            atomic_write_text(record, json.dumps({"manifest_hash": manifest.hash}) + "\n")

    def _episode(self, manifest: Manifest, task, label: str, rng: np.random.Generator):
        harness = manifest.harness(label)
        policy = NoisyOracle(task, harness, self.error_rate, seed=int(rng.integers(2**31)))
        return run_episode(policy, harness, task, max_turns=EPISODE_TURNS)

    def _evaluate(self, manifest: Manifest) -> pd.DataFrame:
        """Each eval run executes every (harness, task) pair of each setting once; a
        black-box harness's pairs through the real CLI (:meth:`_blackbox`)."""
        rows, rngs, outside = [], {}, []
        for job in eval_jobs(manifest):
            if is_blackbox(job.harness):
                outside.append(job)
                continue
            rng = rngs.setdefault(job.run, manifest.rng(f"eval-{job.run}"))
            episode = self._episode(manifest, job.task, job.harness, rng)
            rows.append(episode_row(manifest, job, episode, step=manifest.budget.steps))
        for run in sorted({job.run for job in outside}):
            jobs = [job for job in outside if job.run == run]
            for job, episode in zip(jobs, self._blackbox(manifest, run, jobs), strict=True):
                rows.append(episode_row(manifest, job, episode, step=manifest.budget.steps))
        return eval_frame(rows)

    def _blackbox(self, manifest: Manifest, run: int, jobs: list) -> list:
        """One run's black-box episodes: the scripted chat model (hscale.train.serving)
        served to the CLIs, replaying a task's solution unless the run's draw (error_rate
        a task) says it goes wrong, in which case it answers without acting."""
        from hscale.train.lm.blackbox_eval import played
        from hscale.train.serving.scripted import ScriptedChat, solution_commands

        rng = manifest.rng(f"eval-blackbox-{run}")
        right = {job.task.task_id: bool(rng.random() >= self.error_rate) for job in jobs}
        model = ScriptedChat({job.task.user_query: solution_commands(job.task) for job in jobs
                              if right[job.task.task_id]}, default=())
        return played(model, [(job.harness, job.task) for job in jobs])


def _read(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path) if path.is_file() else train_frame([])
