"""Harness overhead per agent turn against one forward pass of a small transformer.

    pip install -e ".[train]" && python benchmarks/harness.py

Per turn the agent loop renders the view (the context policy applied to the history), parses
the model's call, executes the tool in the sandboxed workspace, renders the observation and
consults the workflow. Each step is timed over every turn of the oracle's own episode under
harnesses with each context policy (best of several rounds), and the sum is compared with one
forward pass of a 2-layer, d=128 torch TransformerEncoder (batch 1, sequence 256) on the same
CPU: the smallest model a rollout could plausibly use. Target: overhead < 5% of that pass.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from hscale.harness import Harness, Oracle, run_episode  # noqa: E402
from hscale.harness._env import Env  # noqa: E402
from hscale.harness._types import ToolCall  # noqa: E402
from hscale.harness._world import generate  # noqa: E402

TARGET = 0.05
LABELS = ("S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1", "S2-T2-O2-C2-W2")


def best_us(fn: Callable[[], object], repeat: int, number: int) -> float:
    """Best of ``repeat`` rounds of the mean time of ``number`` calls, in microseconds (the
    least disturbed round: this machine's other load only ever adds time)."""
    fn()
    rounds = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        rounds.append((time.perf_counter() - start) / number)
    return min(rounds) * 1e6


def forward_us(seq: int, d_model: int, layers: int, repeat: int) -> tuple[float, int]:
    """One forward pass, batch 1, of a from-scratch causal TransformerEncoder (no download):
    the faster of one thread and torch's default (the smaller time, the stricter the ratio)."""
    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=4 * d_model,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).eval()
    x = torch.randn(1, seq, d_model)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(seq)
    default = torch.get_num_threads()
    timings = []
    with torch.inference_mode():
        for threads in sorted({1, default}):
            torch.set_num_threads(threads)
            timings.append((best_us(lambda: model(x, mask=mask, is_causal=True), repeat, 5),
                            threads))
    torch.set_num_threads(default)
    return min(timings)


def turn_steps(label: str, repeat: int) -> dict[str, float]:
    """Microseconds per turn of each step under harness ``label``: the mean over every turn
    of the oracle's episode on a 4-call task (read, read, calc, write, answer)."""
    task = next(t for t in generate(20, 0) if t.category == "multi_step")
    episode = run_episode(Oracle(task, Harness.from_name(label)), Harness.from_name(label), task)
    turns = [i for i, m in enumerate(episode.messages) if m.role == "assistant"]
    histories = [episode.messages[:i] for i in turns]
    texts = [episode.messages[i].content for i in turns]
    h = Harness.from_name(label)
    parsed = [h.parse(t) for t in texts]
    calls = [c for c in parsed if isinstance(c, ToolCall)]
    assert len(calls) == len(task.solution), texts

    def views() -> None:
        h.context.start()
        for history in histories:  # as the loop does: one growing history, one view a turn
            h.view(history)

    def workflow() -> None:
        h.start(task.user_query)
        for turn, (call, text) in enumerate(zip(parsed, texts, strict=True)):
            h.after_assistant(turn, call, text)

    n, k = len(texts), len(calls)
    steps: dict[str, float] = {}
    with Env(task) as env:
        results = [env.execute(c) for c in calls]
        steps["view (context policy)"] = best_us(views, repeat, 50) / n
        steps["parse call"] = best_us(lambda: [h.parse(t) for t in texts], repeat, 50) / n
        steps["workflow"] = best_us(workflow, repeat, 200) / n
        steps["execute tool"] = best_us(lambda: [env.execute(c) for c in calls], repeat, 5) / k
        steps["render observation"] = best_us(lambda: [h.observe(r) for r in results],
                                              repeat, 200) / k
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30, help="timing rounds per step")
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args(argv)

    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores"
          + (" (busy machine: timings inflate, rerun when quiet)" if load > 0.5 else ""))
    # The harness first: torch's idle OpenMP workers spin for a while after a forward pass
    # and would slow the tool's worker thread down.
    steps = {label: turn_steps(label, args.repeat) for label in LABELS}

    import torch

    fwd, threads = forward_us(args.seq, args.d_model, args.layers, args.repeat)
    print(f"forward pass: {args.layers}-layer d={args.d_model} causal TransformerEncoder, "
          f"batch 1, seq {args.seq}, torch {torch.__version__}, {threads} thread(s): "
          f"{fwd:,.0f} us")
    ok = True
    for label, per_step in steps.items():
        total = sum(per_step.values())
        ratio = total / fwd
        ok &= ratio < TARGET
        print(f"\n{label}  ({Harness.from_name(label).realization_names()['context']})")
        for name, us in per_step.items():
            print(f"  {name:<22} {us:9.1f} us")
        print(f"  {'harness per turn':<22} {total:9.1f} us = {ratio:.1%} of a forward pass "
              f"(target < {TARGET:.0%}: {'PASS' if ratio < TARGET else 'MISS'})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
