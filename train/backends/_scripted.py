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
import shutil
from pathlib import Path

import numpy as np

from hscale.contracts import Manifest, result_problems
from hscale.files import atomic_write_text
from hscale.harness import EPISODE_TURNS, NoisyOracle, is_blackbox, run_episode
from hscale.train.backends._base import Backend, StepProgress
from hscale.train.blackbox import SFT_DIR, collect_teacher, teacher_samples
from hscale.train.planning import Recorder, RunPlan, Schedule, harness_of, is_blackbox_sft

RECORD = "scripted.json"


class ScriptedBackend(Backend):
    """``error_rate``: the chance that a turn of the scripted policy goes wrong."""

    name = "scripted"

    def __init__(self, error_rate: float = 0.3) -> None:
        self.error_rate = error_rate

    def run(self, run_dir: Path, manifest: Manifest, progress: StepProgress | None = None
            ) -> None:
        run_dir = Path(run_dir)
        results = Recorder(run_dir, manifest)  # the one writer of the result files
        self._own(run_dir, manifest, results)
        schedule = Schedule.read(run_dir)
        plan = RunPlan(manifest)
        tasks = plan.train_tasks
        done = results.steps_trained
        steps = manifest.budget.steps
        sft = is_blackbox_sft(manifest)
        results.resume(done[-1] + 1 if done else 0, manifest.budget.steps)
        if sft:  # the teacher's episodes are real; nothing is fine-tuned
            tally = teacher_samples(collect_teacher(run_dir, manifest))[1]
        for step in schedule.steps():
            if done and step <= done[-1]:
                continue
            if sft:
                results.trained(step, tally)
                results.save()
                continue
            rng = manifest.rng(f"step-{step}")
            rewards, effective, checker_errors = [], 0, 0
            pairs = schedule.at(step)
            groups = self._groups(manifest, [(tasks[t], label) for t, label in pairs], rng)
            results.kept(step, [(g, label, t, e) for g, ((t, label), played)
                                in enumerate(zip(pairs, groups, strict=True)) for e in played],
                         rescues=plan.rescues)
            for played in groups:
                group = [e.reward for e in played]
                checker_errors += sum(e.checker_failed for e in played)
                rewards += group
                effective += 0 < sum(r >= 1 for r in group) < len(group)
            results.trained(step, {"reward_mean": float(np.mean(rewards)),
                                   "effective_group_rate": effective / len(pairs),
                                   "episodes": len(rewards),
                                   "checker_error_rate": checker_errors / len(rewards)})
            results.save()  # kept rollouts before train.parquet, which says the step is done
            if progress is not None:
                progress(step + 1, steps)
        if result_problems(run_dir, manifest, train=False):  # none yet, or damaged
            results.drop_evaluation()
            self._evaluate(plan, results)
        results.save()  # a run of 0 steps (the base model's) has its empty train.parquet
        if progress is not None:
            progress(steps, steps)

    @staticmethod
    def _own(run_dir: Path, manifest: Manifest, results: Recorder) -> None:
        """Rows of an earlier plan of this run, or damaged rows, are dropped: the run starts
        over."""
        record = run_dir / RECORD
        try:
            mine = json.loads(record.read_text()).get("manifest_hash") == manifest.hash
        except Exception:  # no record, or another plan's
            mine = False
        if not mine or results.train is None:  # a damaged train.parquet
            results.start_over(remove=True)
            shutil.rmtree(run_dir / SFT_DIR, ignore_errors=True)  # another plan's teacher
            atomic_write_text(record, json.dumps({"manifest_hash": manifest.hash}) + "\n")

    def _groups(self, manifest: Manifest, pairs: list, rng: np.random.Generator) -> list:
        """A step's rollout groups, one a (task, harness) pair; a black-box harness's
        played through the real CLI, one session a rollout (:meth:`_blackbox`)."""
        n = manifest.budget.rollouts_per_task
        if not any(is_blackbox(label) for _, label in pairs):
            return [[self._episode(manifest, task, label, rng) for _ in range(n)]
                    for task, label in pairs]
        rounds = [self._blackbox_jobs(pairs, rng) for _ in range(n)]
        return [list(group) for group in zip(*rounds, strict=True)]

    def _episode(self, manifest: Manifest, task, label: str, rng: np.random.Generator):
        harness = harness_of(manifest, label)
        policy = NoisyOracle(task, harness, self.error_rate, seed=int(rng.integers(2**31)))
        return run_episode(policy, harness, task, max_turns=EPISODE_TURNS)

    def _evaluate(self, plan: RunPlan, results: Recorder) -> None:
        """The plan's evaluation (:meth:`RunPlan.evaluation`) at the last step, each episode
        drawn from its pass's and run's generator; Rank-1 routing's under the siblings the
        router picks; a black-box harness's through the real CLI (:meth:`_blackbox`)."""
        manifest = plan.manifest
        jobs = plan.evaluation()
        if any(job.routed for job in jobs):
            jobs = plan.router().route(jobs)
        rngs, outside = {}, []
        for job in jobs:
            if is_blackbox(job.harness):
                outside.append(job)
                continue
            rng = rngs.setdefault(job.key[:2], manifest.rng(_draws("eval", job)))
            episode = self._episode(manifest, job.task, job.harness, rng)
            results.evaluated(job, episode, manifest.budget.steps)
        for key in dict.fromkeys(job.key[:2] for job in outside):
            mine = [job for job in outside if job.key[:2] == key]
            for job, episode in zip(mine, self._blackbox(manifest, mine), strict=True):
                results.evaluated(job, episode, manifest.budget.steps)

    def _blackbox(self, manifest: Manifest, jobs: list) -> list:
        """One pass and run's black-box episodes (:meth:`_blackbox_jobs`), drawn from their
        own generator."""
        return self._blackbox_jobs([(job.task, job.harness) for job in jobs],
                                   manifest.rng(_draws("eval-blackbox", jobs[0])))

    def _blackbox_jobs(self, pairs: list, rng: np.random.Generator) -> list:
        """(task, black-box harness) pairs played through the CLIs by the scripted chat
        model, which replays a task's solution unless the draw (error_rate a task) says it
        goes wrong, in which case it answers without acting."""
        from hscale.train.blackbox import played
        from hscale.train.serving import ScriptedChat, solution_commands

        right = {task.task_id: bool(rng.random() >= self.error_rate) for task, _ in pairs}
        model = ScriptedChat({task.user_query: solution_commands(task) for task, _ in pairs
                              if right[task.task_id]}, default=())
        return played(model, [(label, task) for task, label in pairs])


def _draws(kind: str, job) -> str:
    """The generator an evaluation episode draws from: its pass's and run's (a sampled
    run's named as it always was, so its rows do not change)."""
    return f"{kind}-{job.run}" if not job.greedy else f"{kind}-greedy-{job.run}"
