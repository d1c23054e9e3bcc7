"""Pass@1 evaluation of the embedded policy: base harness, in-space eval set, out-of-space.

Held-out tasks come from the world's eval split (disjoint from training by content). Each
run executes every (harness, task) pair of a setting once; with ``episodes`` set, each
harness of a setting runs ``ceil(episodes / harnesses)`` tasks per run (at least one), on a
slice of the task pool that moves with every run and seed. Sampled decoding runs ``runs``
times; greedy decoding is deterministic, so once (``run`` 0, ``decoding`` greedy).
"""

from __future__ import annotations

from typing import Any

import torch

from hscale.harness import is_blackbox, prefetch
from hscale.train.embedded._sampler import Sampler
from hscale.train.planning import Recorder, RunPlan, harness_of


def evaluate(sampler: Sampler, plan: RunPlan, router: Any, step: int, results: Recorder
             ) -> None:
    """Every episode of the plan's evaluation (:meth:`RunPlan.evaluation`) at checkpoint
    ``step``, handed to the run's recorder. Its episodes play in two batches, each drawing
    from a generator of its own: the greedy and sampled passes, then Rank-1 routing's, which
    the router routes first (one sibling a task)."""
    jobs = plan.evaluation()
    _played(sampler, plan, [j for j in jobs if not j.routed], f"eval-{step}", step, results)
    routed = [j for j in jobs if j.routed]
    if routed:
        _played(sampler, plan, router.route(routed), f"routed-{step}", step, results)


def _played(sampler: Sampler, plan: RunPlan, jobs: list, draws: str, step: int,
            results: Recorder) -> None:
    """``jobs`` played in one batch (one slow tail) from the manifest's ``draws`` generator;
    a black-box harness's through the real CLI, the policy served to it as it is now."""
    manifest = plan.manifest
    seed = int(manifest.rng(draws).integers(2**62))
    inside = [job for job in jobs if not is_blackbox(job.harness)]
    outside = [job for job in jobs if is_blackbox(job.harness)]
    episodes = sampler.run([(harness_of(manifest, job.harness), job.task) for job in inside],
                           greedy=[job.greedy for job in inside],
                           generator=torch.Generator().manual_seed(seed))
    if outside:  # real CLIs: the policy as it is now, served to them (hscale.train.serving)
        from hscale.train.blackbox import played
        from hscale.train.lm import EmbeddedChat

        episodes += played(EmbeddedChat(sampler.model, sampler.tok, manifest.arm),
                           [(job.harness, job.task) for job in outside],
                           greedy=[job.greedy for job in outside],
                           max_new_tokens=sampler.max_new)
    prefetch(episodes[:len(inside)])  # the judged capabilities, when asked for, in parallel
    for job, episode in zip(inside + outside, episodes, strict=True):
        results.evaluated(job, episode, step)
