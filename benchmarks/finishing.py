"""Episodes of reward-script tasks played by the embedded sampler, as a run's evaluation
plays them: ended episodes scored in background threads while the batch goes on (hscale's
way, hscale.harness.Finisher), against scoring each inline, which holds up the batch for
every script's sandbox start. Both in one run, alternating, on the example tasks
(experiments/examples/tasks) with the shipped base model; the episodes must be identical.

    python benchmarks/finishing.py [--jobs 96] [--pairs 3]
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class Inline:
    """The Finisher's interface, scoring each episode as it is handed over."""

    def __init__(self) -> None:
        self.done: dict = {}

    def submit(self, key, engine) -> None:
        self.done[key] = engine.finish()

    def wait(self) -> dict:
        return self.done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=96)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    import torch

    import hscale.train.embedded._sampler as sampler_module
    from hscale.harness import Finisher, harness_named, tokenizer
    from hscale.harness.tasks import load_tasks
    from hscale.train.policy import base_model

    torch.set_num_threads(1)
    tasks = load_tasks(ROOT / "experiments" / "examples" / "tasks")
    harnesses = [harness_named(label) for label in ("S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1")]
    jobs = list(itertools.islice(itertools.cycle(itertools.product(harnesses, tasks)),
                                 args.jobs))
    sampler = sampler_module.Sampler(base_model("hscale-tiny"), tokenizer())
    times: dict[str, list[float]] = {"background": [], "inline": []}
    played: dict[str, list] = {}
    for _ in range(args.pairs):
        for way, finisher in (("background", Finisher), ("inline", Inline)):
            sampler_module.Finisher = finisher
            began = time.perf_counter()
            played[way] = sampler.run(jobs, generator=torch.Generator().manual_seed(0))
            times[way].append(time.perf_counter() - began)
    sampler_module.Finisher = Finisher

    def summary(episodes: list) -> list:
        return [(e.task_id, e.reward, e.final_answer, [g.text for g in e.generations])
                for e in episodes]

    if summary(played["background"]) != summary(played["inline"]):
        raise SystemExit("error: the episodes differ between the two ways of scoring")
    solved = sum(e.reward for e in played["inline"])
    best = {way: min(t) for way, t in times.items()}
    print(f"{len(jobs)} episodes of {len(tasks)} reward-script tasks ({solved:g} solved), "
          f"identical either way")
    for way, seconds in best.items():
        print(f"{way:10} {seconds:6.2f} s")
    print(f"background against inline: {best['inline'] / best['background']:.2f}x faster")


if __name__ == "__main__":
    main()
