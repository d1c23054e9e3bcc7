"""A batched driver's waves of turns through the harness when the agent runs shell commands,
as an evaluation of real tasks plays them (``hscale evaluate``: the model answers the whole
wave, then the harness takes every episode's turn; with a fast model, an endpoint on a GPU,
the harness's part is what the wave waits for): the wave's commands side by side (hscale's
way, hscale.harness.submit_all) against one episode after another (``TurnEngine.submit`` in
turn). Both in one run, alternating; the episodes must be identical.

    python benchmarks/turns.py [--episodes 32] [--pairs 3] [--tasks DIR]

Each episode inspects its workspace with ``run`` (``ls -a``, then ``cat`` of an input
file, each in a sandbox of its own), then plays its task's solution and answers (the
oracle, in the harness's own syntax). ``--tasks`` takes any task folder (the example tasks
by default; ClawGym's or PinchBench's exports work too).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import shlex
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABELS = ("S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=32, help="episodes in a wave")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--tasks", type=Path, default=ROOT / "experiments" / "examples" / "tasks")
    args = parser.parse_args()
    from hscale.harness import Oracle, ToolCall, TurnEngine, harness_named, submit_all
    from hscale.harness.tasks import load_tasks
    from hscale.harness.tasks._jail import containment

    if not containment().strong:
        raise SystemExit("error: run needs a contained shell here (install bubblewrap)")

    def inspecting(task):  # run's commands first, then the task's own solution
        files = sorted(task.input_files)
        looks = [ToolCall("run", {"command": "ls -a"})]
        if files:
            looks.append(ToolCall("run", {"command": f"cat {shlex.quote(files[0])}"}))
        tools = task.tools if "run" in task.tools else (*task.tools, "run")
        return dataclasses.replace(task, tools=tools, solution=(*looks, *task.solution))

    tasks = [inspecting(t) for t in load_tasks(args.tasks)]
    jobs = list(itertools.islice(itertools.cycle(itertools.product(
        [harness_named(label) for label in LABELS], tasks)), args.episodes))

    def one_by_one(engines, generations):
        return [engine.submit(gen) for engine, gen in zip(engines, generations, strict=True)]

    def play(submit) -> tuple[float, list]:
        """Every wave of the episodes; the seconds spent in the harness's turns."""
        engines = [TurnEngine(h, t) for h, t in jobs]
        models = [Oracle(t, h) for h, t in jobs]
        seconds, live = 0.0, list(range(len(jobs)))
        while live:
            replies = [models[i].generate(engines[i].view()) for i in live]
            began = time.perf_counter()
            ended = submit([engines[i] for i in live], replies)
            seconds += time.perf_counter() - began
            live = [i for i, done in zip(live, ended, strict=True) if not done]
        return seconds, [e.finish() for e in engines]

    times: dict[str, list[float]] = {"side by side": [], "one by one": []}
    played: dict[str, list] = {}
    for _ in range(args.pairs):
        for way, submit in (("side by side", submit_all), ("one by one", one_by_one)):
            seconds, played[way] = play(submit)
            times[way].append(seconds)

    def summary(episodes: list) -> list:
        return [(e.task_id, e.reward, e.final_answer, e.turns, [r.output for _, r in e.tool_calls])
                for e in episodes]

    if summary(played["side by side"]) != summary(played["one by one"]):
        raise SystemExit("error: the episodes differ between the two ways of playing turns")
    episodes = played["one by one"]
    commands = sum(c.name == "run" for e in episodes for c, _ in e.tool_calls)
    print(f"{len(episodes)} episodes a wave ({commands} shell commands, "
          f"{sum(e.reward for e in episodes):g} solved), identical either way")
    best = {way: min(t) for way, t in times.items()}
    for way, seconds in best.items():
        print(f"{way:13} {seconds:6.2f} s in the harness's turns")
    print(f"side by side against one by one: "
          f"{best['one by one'] / best['side by side']:.2f}x faster")


if __name__ == "__main__":
    main()
