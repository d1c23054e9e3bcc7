"""Pass@1 evaluation of the embedded policy: base harness, in-space eval set, out-of-space.

Held-out tasks come from the world's eval split (disjoint from training by content). Each
run executes every (harness, task) pair of a setting once; with ``episodes`` set, each
harness of a setting runs ``ceil(episodes / harnesses)`` tasks per run (at least one), on a
slice of the task pool that moves with every run and seed. Sampled decoding runs ``runs``
times; greedy decoding is deterministic, so once (``run`` 0, ``decoding`` greedy).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import torch

from hscale.harness.blackbox import is_blackbox
from hscale.harness.capabilities import prefetch
from hscale.train.contracts import Manifest, episode_row, eval_frame
from hscale.train.embedded.sampler import Sampler
from hscale.train.workload import eval_jobs, eval_tasks, routed_jobs


def evaluate(sampler: Sampler, manifest: Manifest, step: int) -> pd.DataFrame:
    """One row per evaluated episode, in the eval.parquet contract (plus ``decoding``)."""
    tasks = eval_tasks(manifest)
    seed = int(manifest.rng(f"eval-{step}").integers(2**62))
    # the greedy pass plays run 0's episodes; all in one batch: one slow tail
    jobs = [("greedy", job) for job in eval_jobs(manifest, tasks, runs=[0])]
    jobs += [("sampled", job) for job in eval_jobs(manifest, tasks)]
    inside = [(d, job) for d, job in jobs if not is_blackbox(job.harness)]
    outside = [(d, job) for d, job in jobs if is_blackbox(job.harness)]
    episodes = sampler.run([(manifest.harness(job.harness), job.task) for _, job in inside],
                           greedy=[decoding == "greedy" for decoding, _ in inside],
                           generator=torch.Generator().manual_seed(seed))
    if outside:  # real CLIs: the policy as it is now, served to them (hscale.train.serving)
        from hscale.train.lm.blackbox_eval import played
        from hscale.train.lm.embedded import EmbeddedChat

        episodes += played(EmbeddedChat(sampler.model, sampler.tok, manifest.arm),
                           [(job.harness, job.task) for _, job in outside],
                           greedy=[decoding == "greedy" for decoding, _ in outside],
                           max_new_tokens=sampler.max_new)
    prefetch(episodes[:len(inside)])  # the judged capabilities, when asked for, in parallel
    return eval_frame([episode_row(manifest, job, ep, step=step, decoding=decoding)
                       for (decoding, job), ep in zip(inside + outside, episodes, strict=True)])


def routed_eval(sampler: Sampler, manifest: Manifest, router: Any, step: int) -> pd.DataFrame:
    """Rank-1 routing (the profiles router at evaluation): every held-out task of the run's
    evaluation (:func:`hscale.train.workload.routed_jobs`) under the one sibling the judges'
    votes put first for it (eval.parquet setting ``routed``, the sibling as its harness)."""
    seed = int(manifest.rng(f"routed-{step}").integers(2**62))
    jobs, picked = routed_jobs(manifest), {}
    for _, job in jobs:  # one pick a task, shared by its runs
        if job.task.task_id not in picked:
            picked[job.task.task_id] = router.pick(job.task, 1)[0]
    jobs = [(d, job._replace(harness=picked[job.task.task_id])) for d, job in jobs]
    episodes = sampler.run([(manifest.harness(job.harness), job.task) for _, job in jobs],
                           greedy=[decoding == "greedy" for decoding, _ in jobs],
                           generator=torch.Generator().manual_seed(seed))
    return eval_frame([episode_row(manifest, job, ep, step=step, decoding=decoding)
                       for (decoding, job), ep in zip(jobs, episodes, strict=True)])


def re_anchor(router: Any, labels: list[str], tasks: list, episodes: list, step: int,
              run_dir: Path) -> None:
    """The profiles router's profiles written again from this checkpoint's paired
    validation trajectories (``labels``: the pool, then the base harness), and recorded in
    the run's router_profiles.jsonl."""
    from hscale.train.profile_router import PROFILES, record_profiles, write_profiles

    by_label = {label: {t.task_id: ep for t, ep in zip(tasks, episodes[i * len(tasks):],
                                                         strict=False)}
                for i, label in enumerate(labels)}
    router.profiles = write_profiles(router.voters[0][1], by_label[labels[-1]],
                                     {s: by_label[s] for s in labels[:-1]},
                                     {t.task_id: t.user_query for t in tasks})
    record_profiles(run_dir / PROFILES, router.profiles, step)
