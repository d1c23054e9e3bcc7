"""Many episodes through one chat model, in waves: every live episode's view goes to the
model in one ``generate`` call (a batch, where the model batches), each reply goes through
the harness's turn engine (hscale.harness._engine.TurnEngine: parse, workflow, tool,
observation; the wave's shell commands side by side, hscale.harness.submit_all), and the
episodes still running make the next wave. The same engine the embedded sampler and the veRL
agent loop drive, so a real model meets exactly the harness a trained one does."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hscale.harness import EPISODE_TURNS, Episode, Finisher, Harness, TurnEngine, submit_all
from hscale.harness.tasks import Task
from hscale.train.lm._base import MAX_NEW_TOKENS, ChatModel, mix


def drive(model: ChatModel, jobs: Sequence[tuple[Harness, Task, bool]], *,
          max_new_tokens: int = MAX_NEW_TOKENS, max_turns: int = EPISODE_TURNS,
          seed: int = 0, seeds: Sequence[int] | None = None, max_batch: int = 32,
          done: Callable[[int, Episode], None] | None = None) -> list[Episode]:
    """One episode per (harness, task, greedy) job, in order. Up to ``max_batch`` episodes
    run together; ``done(index, episode)`` is called as each is scored (for progress and for
    saving finished work). Each episode samples from a seed of its own, ``seeds[index]``
    (or one drawn from ``seed`` and its index), mixed with its turn: what it draws does not
    depend on which episodes share its batch, so rerunning part of the jobs draws what the
    whole run drew, wherever the model is deterministic for a seed."""
    own = list(seeds) if seeds is not None else [mix(seed, i) for i in range(len(jobs))]
    if len(own) != len(jobs):
        raise ValueError(f"{len(own)} seeds for {len(jobs)} jobs")
    episodes: dict[int, Episode] = {}
    waiting = list(range(len(jobs)))[::-1]
    live: dict[int, TurnEngine] = {}
    turns: dict[int, int] = {}
    finisher = Finisher()
    try:
        while waiting or live:
            while waiting and len(live) < max_batch:
                i = waiting.pop()
                harness, task, _ = jobs[i]
                live[i], turns[i] = TurnEngine(harness, task, max_turns), 0
                if live[i].done:  # no turns allowed
                    finisher.submit(i, live.pop(i))
            _record(finisher.ready(), episodes, done)
            order = list(live)
            if not order:
                continue
            views = [live[i].view() for i in order]
            replies = model.generate(views, [jobs[i][2] for i in order], max_new_tokens,
                                     seed=[mix(own[i], turns[i]) for i in order])
            ended = submit_all([live[i] for i in order], replies)
            for i, finished in zip(order, ended, strict=True):
                turns[i] += 1
                if finished:  # scored while the next wave runs
                    finisher.submit(i, live.pop(i))
    finally:
        try:  # every ended episode is recorded, also when interrupted: none is replayed
            _record(finisher.wait(), episodes, done)
        finally:
            for engine in live.values():
                engine.env.close()
    return [episodes[i] for i in range(len(jobs))]


def _record(ended: dict, episodes: dict[int, Episode],
            done: Callable[[int, Episode], None] | None) -> None:
    for index, episode in ended.items():
        episodes[index] = episode
        if done is not None:
            done(index, episode)


__all__ = ["drive"]
