"""Pass@1 evaluation of the embedded policy: base harness, in-space eval set, out-of-space.

Held-out tasks come from the world's eval split (disjoint from training by content). Each
run executes every (harness, task) pair of a setting once; with ``episodes`` set, each
harness of a setting runs ``ceil(episodes / harnesses)`` tasks per run (at least one), on a
slice of the task pool that moves with every run and seed. Sampled decoding runs ``runs``
times; greedy decoding is deterministic, so once (``run`` 0, ``decoding`` greedy).
"""

from __future__ import annotations

import pandas as pd
import torch

from harness.world import generate
from train.embedded.sampler import Sampler, harness_named
from train.manifest import eval_pairs, rng_for
from train.spec import EVAL_TASKS


def evaluate(sampler: Sampler, manifest: dict, step: int) -> pd.DataFrame:
    """One row per evaluated episode, in the eval.parquet contract (plus ``decoding``)."""
    bench, ev = manifest["benchmark"], manifest["evaluation"]
    tasks = generate(ev.get("tasks") or EVAL_TASKS, seed=bench["seed"], split="eval")
    plans = [("greedy", 0)] + [("sampled", run) for run in range(ev["runs"])]
    seed = int(rng_for(manifest["seed"], manifest["arm"], f"eval-{step}").integers(2**62))
    jobs, flags, where = [], [], []
    for decoding, run in plans:  # one batch for every run and decoding: one slow tail
        rotation = manifest["seed"] * ev["runs"] + run
        pairs = [(setting, label, task) for setting, labels in manifest["eval_sets"].items()
                 for label, task in eval_pairs(labels, tasks, ev.get("episodes"), rotation)]
        for setting, label, task in pairs:
            jobs.append((harness_named(label), task))
            flags.append(decoding == "greedy")
            where.append((decoding, run, setting, label, task))
    episodes = sampler.run(jobs, greedy=flags,
                           generator=torch.Generator().manual_seed(seed))
    rows = []
    for (decoding, run, setting, label, task), ep in zip(where, episodes, strict=True):
        rows.append({"experiment": manifest["experiment"], "arm": manifest["arm"],
                     "seed": manifest["seed"], "run": run, "step": step,
                     "benchmark": bench["name"], "setting": setting, "harness": label,
                     "task_id": task.task_id, "reward": float(ep.reward),
                     "success": bool(ep.success), "turns": int(ep.turns),
                     "decoding": decoding, "category": task.category})
    return pd.DataFrame(rows)
