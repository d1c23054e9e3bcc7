"""The embedded trainer: one planned run (manifest + schedule) trained by GRPO or PPO on the CPU.

It follows the schedule exactly: at each step every scheduled (task, harness) pair gets
``rollouts_per_task`` rollouts (a GRPO group), so a task's K harnesses fall in K successive
steps, Repeat-K repeats the anchor and random assignment ignores distance, as planned.
Rescue arms (Harness-S) re-sample zero-signal groups under routed sibling harnesses.

After every step the run folder holds ``train.parquet`` (one row per finished step),
``eval.parquet`` (rows of finished checkpoints), both written by the run's recorder
(hscale.train.planning.Recorder), then ``checkpoint.pt`` (model, optimizer, sampler
generator, step); a resumed run trims rows past the
checkpoint and continues bit for bit, so an interrupted run ends with the same rows.
"""

from __future__ import annotations

import copy
import io
import json
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from hscale.contracts import Manifest
from hscale.errors import HscaleWarning
from hscale.files import atomic_write_bytes
from hscale.harness import Episode, tokenizer
from hscale.train.embedded._checkpoint_eval import evaluate
from hscale.train.embedded._optimizer import AdamW
from hscale.train.embedded._rl import Hyper, update
from hscale.train.embedded._sampler import Sampler
from hscale.train.harness_s import PROFILES
from hscale.train.planning import Recorder, RunPlan, Schedule, harness_of
from hscale.train.policy import base_model

StepProgress = Callable[[int, int], None]  # (steps done, steps in all), as a backend hears it

CHECKPOINT = "checkpoint.pt"
CHECKPOINT_FIELDS = {"model", "optimizer", "generator", "step", "evaluated", "router_rng",
                     "router_score", "manifest_hash"}



def hyper(manifest: Manifest) -> Hyper:
    algo = manifest.algorithm
    return Hyper(algorithm=algo.name, lr=algo.lr, clip_low=algo.clip_low,
                 clip_high=algo.clip_high, gamma=algo.gamma, lam=algo.lam)


def tracker(manifest: Manifest, run_dir: Path):
    """veRL's Tracking over the spec's loggers (none unless the spec names some); the file
    logger writes ``<run>/metrics.jsonl``, as a veRL run's does under verl/metrics/."""
    if not manifest.tracking:
        return None

    from verl.utils.tracking import Tracking

    os.environ["VERL_FILE_LOGGER_PATH"] = str(run_dir / "metrics.jsonl")
    return Tracking(f"hscale-{manifest.experiment}", f"{manifest.arm}-{manifest.seed}",
                    default_backend=list(manifest.tracking))


class Trainer:
    def __init__(self, run_dir: str | Path, manifest: Manifest, threads: int | None = 1
                 ) -> None:
        if threads:
            torch.set_num_threads(threads)
        self.dir, self.manifest = Path(run_dir), manifest
        self.plan = RunPlan(manifest)
        self.tok = tokenizer()
        self.hyper = hyper(manifest)
        self.ref = base_model(manifest.model)
        self.model = copy.deepcopy(self.ref)  # trained; ref stays the base for the KL metric
        self.opt = AdamW(self.model.parameters(), lr=self.hyper.lr, weight_decay=0.0,
                         betas=(0.9, 0.99))
        self.sampler = Sampler(self.model, self.tok)
        self.generator = torch.Generator().manual_seed(
            int(manifest.rng("sampler").integers(2**62)))
        self.step = 0
        self.results = Recorder(self.dir, manifest)  # the one writer of the result files
        self.router = self.plan.router()
        self.tracker = tracker(manifest, self.dir)
        self._resume()

    # --- state -----------------------------------------------------------------------
    def _resume(self) -> None:
        """Continue from checkpoint.pt when it belongs to this manifest and the result files
        hold every row before it; else start afresh (a warning says why, when files were
        there to lose)."""
        state, why = self._checkpoint()
        if state is not None:
            why = self.results.gap(int(state["step"]), int(state["evaluated"]))
        if why:
            warnings.warn(f"{self.dir}: {why}: the run starts over", HscaleWarning,
                          stacklevel=2)
        if state is None or why:
            self.results.start_over()
            return
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        self.router.rng.bit_generator.state = json.loads(state["router_rng"])
        self.router.score = {c: np.asarray(v) for c, v in json.loads(state["router_score"]).items()}
        self.step = int(state["step"])
        self.results.resume(self.step, int(state["evaluated"]))

    def _checkpoint(self) -> tuple[dict | None, str]:
        """(the checkpoint of this manifest or None, why it cannot be used when it exists)."""
        path = self.dir / CHECKPOINT
        if not path.is_file():
            return None, ""
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            missing = CHECKPOINT_FIELDS - set(state)
        except Exception as exc:  # truncated or foreign: torch raises several types
            return None, f"{CHECKPOINT} is unreadable ({type(exc).__name__})"
        if missing:
            return None, f"{CHECKPOINT} lacks {sorted(missing)}"
        if state["manifest_hash"] != self.manifest.hash:
            return None, ""  # results of an earlier plan of this run: start over quietly
        return state, ""

    def _save(self, evaluated: int) -> None:
        """The result files (the recorder writes those that grew), then the checkpoint that
        covers them."""
        self.results.save()
        buffer = io.BytesIO()
        score = {c: v.tolist() for c, v in self.router.score.items()}
        torch.save({"model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
                    "generator": self.generator.get_state(), "step": self.step,
                    "evaluated": evaluated, "manifest_hash": self.manifest.hash,
                    "router_rng": json.dumps(self.router.rng.bit_generator.state),
                    "router_score": json.dumps(score)}, buffer)
        atomic_write_bytes(self.dir / CHECKPOINT, buffer.getvalue())

    # --- the run ---------------------------------------------------------------------
    def run(self, progress: StepProgress | None = None) -> None:
        schedule = Schedule.read(self.dir).frame
        total = self.manifest.budget.steps
        checkpoints = self.plan.eval_steps
        evaluated = self.results.last_evaluated
        by_step = dict(tuple(schedule.groupby("step", sort=True)))
        while True:
            if self.step in checkpoints and self.step > evaluated:
                self._measure_siblings(self.router.measurement(checkpoint=True))
                evaluate(self.sampler, self.plan, self.router, self.step, self.results)
                evaluated = self.step
                self._save(evaluated)
            if self.step >= total:
                break
            self._measure_siblings(self.router.measurement(checkpoint=False))
            rows = by_step.get(self.step)
            metrics = self.train_step(rows, self.plan.train_tasks) if rows is not None else {}
            self.results.trained(self.step, metrics)
            if self.tracker is not None:
                self.tracker.log(metrics, self.step)
            self.step += 1
            self._save(evaluated)
            if progress is not None:
                progress(self.step, total)

    def train_step(self, rows: pd.DataFrame, tasks: dict) -> dict[str, float]:
        n = self.manifest.budget.rollouts_per_task
        began = time.perf_counter()
        jobs, groups = [], []
        for g, (task_id, label) in enumerate(zip(rows.task_id, rows.harness, strict=True)):
            jobs += [(harness_of(self.manifest, label), tasks[task_id])] * n
            groups += [g] * n
        sampled_before = self.sampler.stats.sampled
        entropy_before = self.sampler.stats.entropy
        episodes = self.sampler.run(jobs, generator=self.generator)
        metrics = _group_metrics(episodes, groups)
        played = [(g, rows.harness.iloc[g], rows.task_id.iloc[g], e)
                  for g, e in zip(groups, episodes, strict=True)]
        rescued: list[tuple[int, str, str, Episode]] = []
        if self.plan.rescues:
            episodes, groups, rescue, rescued = self._rescue(episodes, groups, rows, tasks)
            metrics.update(rescue)
        self.results.kept(self.step, played, rescued, self.plan.rescues)
        rollout_s = time.perf_counter() - began
        gen_tokens = self.sampler.stats.sampled - sampled_before
        metrics["entropy"] = (self.sampler.stats.entropy - entropy_before) / max(gen_tokens, 1)
        began = time.perf_counter()
        metrics.update(update(self.model, self.ref, self.opt, self.tok, episodes, groups,
                              self.hyper, self.generator))
        update_s = time.perf_counter() - began
        metrics.update({"rollout_s": rollout_s, "update_s": update_s,
                        "sampled_tokens": gen_tokens,
                        "tokens_per_s": (gen_tokens + metrics["train_tokens"])
                        / max(rollout_s + update_s, 1e-9)})
        return metrics

    def _measure_siblings(self, labels: list[str]) -> None:
        """Greedy episodes of the harnesses the router measures (``labels``; none: nothing
        is due) on its validation tasks, absorbed by the router."""
        if not labels:
            return
        tasks = self.plan.router_tasks
        jobs = [(harness_of(self.manifest, label), task) for label in labels for task in tasks]
        episodes = self.sampler.run(jobs, greedy=True, generator=self.generator)
        self.router.absorb(tasks, episodes, self.step, self.dir / PROFILES)

    def _rescue(self, episodes: list[Episode], groups: list[int], rows: pd.DataFrame,
                tasks: dict) -> tuple[list[Episode], list[int], dict[str, float], list]:
        """Replace every all-failed group by a routed rescue group (one rollout per sibling);
        also the rescue rollouts as (group, sibling, task id, episode)."""
        k = self.manifest.assignment.group
        before = self.router.metrics()
        failed = [g for g in sorted(set(groups))
                  if not any(e.success for e, gg in zip(episodes, groups, strict=True)
                             if gg == g)]
        jobs, owners, labels = [], [], []
        task_list = list(rows.task_id)
        for g in failed:
            task = tasks[task_list[g]]
            for label in self.router.pick(task, k):
                jobs.append((harness_of(self.manifest, label), task))
                owners.append(g)
                labels.append(label)
        rescued = self.sampler.run(jobs, generator=self.generator) if jobs else []
        keep = [(e, g) for e, g in zip(episodes, groups, strict=True) if g not in failed]
        keep += list(zip(rescued, owners, strict=True))
        rescued_groups = {g for e, g in zip(rescued, owners, strict=True) if e.success}
        out = {**{k: v - before.get(k, 0) for k, v in self.router.metrics().items()},  # step's
               "zero_signal_share": len(failed) / max(len(set(groups)), 1),
               "rescue_groups": len(failed),
               "rescue_success": len(rescued_groups) / len(failed) if failed else float("nan"),
               "extra_rollouts": len(jobs) / max(len(episodes), 1)}
        played = [(g, label, task_list[g], e)
                  for g, label, e in zip(owners, labels, rescued, strict=True)]
        return [e for e, _ in keep], [g for _, g in keep], out, played


def train_run(run_dir: str | Path, manifest: Manifest, progress: StepProgress | None = None
              ) -> None:
    """Train one planned run in its folder, resuming from what the folder holds; ``progress``
    hears the step it resumed at, then every step (the local backend's run, here or as a Ray
    task)."""
    trainer = Trainer(Path(run_dir), manifest)
    if progress is not None and trainer.step < manifest.budget.steps:
        progress(trainer.step, manifest.budget.steps)
    trainer.run(progress)


def _group_metrics(episodes: list[Episode], groups: list[int]) -> dict[str, float]:
    rewards = np.array([e.reward for e in episodes])
    success = np.array([e.success for e in episodes])
    ids = np.array(groups)
    effective = [0 < success[ids == g].sum() < (ids == g).sum() for g in np.unique(ids)]
    zero = [not success[ids == g].any() for g in np.unique(ids)]
    return {"reward_mean": float(rewards.mean()), "success_rate": float(success.mean()),
            "effective_group_rate": float(np.mean(effective)),
            "zero_signal_rate": float(np.mean(zero)), "episodes": len(episodes),
            "turns_mean": float(np.mean([e.turns for e in episodes])),
            "checker_error_rate": float(np.mean([e.checker_failed for e in episodes]))}
