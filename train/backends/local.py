"""The local backend, running every scheduled episode on this machine.

Until the embedded trainer lands, its policy is the harness module's scripted NoisyOracle
(a fixed error rate, nothing is learned): the files, resume and statistics are real, the
learning is not. Every step draws from a generator derived from (seed, arm, step), so a run
resumed after a crash writes exactly the rows an uninterrupted run writes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from harness.harness import Harness
from harness.loop import run_episode
from harness.policies import NoisyOracle
from harness.world import generate
from train.files import write_parquet
from train.manifest import rng_for

ERROR_RATE = 0.3
EVAL_TASKS = 6


class LocalBackend:
    name = "local"

    def run(self, run_dir: str | Path, manifest: dict, progress=None) -> None:
        run_dir = Path(run_dir)
        schedule = pd.read_parquet(run_dir / "schedule.parquet")
        bench = manifest["benchmark"]
        tasks = {t.task_id: t for t in generate(bench["tasks"], seed=bench["seed"])}
        rollouts = manifest["budget"]["rollouts_per_task"]
        done = _rows(run_dir / "train.parquet")
        next_step = int(done["step"].max()) + 1 if len(done) else 0
        harnesses: dict[str, Harness] = {}
        for step, rows in schedule.groupby("step", sort=True):
            if step < next_step:
                continue
            rng = rng_for(manifest["seed"], manifest["arm"], f"step-{step}")
            rewards, effective = [], 0
            for task_id, label in zip(rows.task_id, rows.harness, strict=True):
                harness = harnesses.setdefault(label, Harness.from_name(label))
                group = [run_episode(NoisyOracle(tasks[task_id], harness, ERROR_RATE,
                                                 seed=int(rng.integers(2**31))),
                                     harness, tasks[task_id]).reward
                         for _ in range(rollouts)]
                rewards.extend(group)
                effective += 0 < sum(r >= 1 for r in group) < len(group)
            row = pd.DataFrame([{"step": int(step), "reward_mean": float(np.mean(rewards)),
                                 "effective_group_rate": effective / len(rows),
                                 "episodes": len(rewards)}])
            done = pd.concat([done, row], ignore_index=True).astype(
                {"step": "int64", "episodes": "int64"})
            write_parquet(run_dir / "train.parquet", done)
            if progress is not None:
                progress(int(step) + 1, int(schedule.step.max()) + 1)
        if not (run_dir / "eval.parquet").is_file():
            write_parquet(run_dir / "eval.parquet", self._evaluate(manifest, harnesses))

    def _evaluate(self, manifest: dict, harnesses: dict[str, Harness]) -> pd.DataFrame:
        bench = manifest["benchmark"]
        tasks = generate(EVAL_TASKS, seed=bench["seed"], split="eval")
        step = manifest["budget"]["steps"]
        rows = []
        for run in range(manifest["evaluation"]["runs"]):
            rng = rng_for(manifest["seed"], manifest["arm"], f"eval-{run}")
            for setting, labels in manifest["eval_sets"].items():
                for label in labels:
                    harness = harnesses.setdefault(label, Harness.from_name(label))
                    for task in tasks:
                        ep = run_episode(NoisyOracle(task, harness, ERROR_RATE,
                                                     seed=int(rng.integers(2**31))),
                                         harness, task)
                        rows.append({"experiment": manifest["experiment"],
                                     "arm": manifest["arm"], "seed": manifest["seed"],
                                     "run": run, "step": step, "benchmark": bench["name"],
                                     "setting": setting, "harness": label,
                                     "task_id": task.task_id, "reward": ep.reward,
                                     "success": ep.success, "turns": ep.turns})
        return pd.DataFrame(rows)


def _rows(path: Path) -> pd.DataFrame:
    if path.is_file():
        return pd.read_parquet(path)
    return pd.DataFrame({"step": pd.Series(dtype="int64")})
