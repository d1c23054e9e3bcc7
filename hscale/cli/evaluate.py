"""``hscale evaluate``: a model's Pass@1 across harnesses, without training."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer


def evaluate_cmd(
    model: Annotated[str, typer.Argument(
        help="An endpoint (http://HOST:PORT/v1), smollm2, a Hugging Face model folder, an "
             "embedded checkpoint (.pt) or preset (hscale-tiny).")],
    harnesses: Annotated[str, typer.Option(
        "--harnesses", "-H", help="base, in_space (the held-out 18), all (every "
        "configuration), out_of_space, joined with +; or labels (S0-T1-O0-C2-W1,oos/shell); "
        "or a design CSV; or a frozen pool (pool.json: its base harness and children on "
        "the router's validation tasks).")] = "base+in_space+out_of_space",
    benchmark: Annotated[str, typer.Option(
        help="Benchmark kind: builtin, clawgym, jsonl, parquet, pinchbench, jobbench.")
    ] = "builtin",
    path: Annotated[str | None, typer.Option(help="The benchmark's files (data kinds).")
                    ] = None,
    tasks: Annotated[int, typer.Option(min=1, help="Eval tasks per harness (at most what "
                                                   "the benchmark holds).")] = 6,
    runs: Annotated[int, typer.Option(min=1, help="Sampled runs (with --decoding sampled "
                                                  "or both).")] = 1,
    decoding: Annotated[str, typer.Option(help="greedy, sampled or both.")] = "greedy",
    out: Annotated[Path, typer.Option("--out", "-o", help="Runs folder.")] = Path("runs"),
    experiment: Annotated[str, typer.Option(help="Experiment folder under --out.")
                          ] = "evaluate",
    label: Annotated[str | None, typer.Option(help="The model's name in the report "
                                                   "(default: from MODEL).")] = None,
    max_new_tokens: Annotated[int, typer.Option(min=1, help="Tokens a turn may take.")
                              ] = 256,
    batch: Annotated[int, typer.Option(min=1, help="Episodes generated together.")] = 32,
    served_name: Annotated[str | None, typer.Option(
        help="An endpoint's model name (default: 'default').")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an evaluation of another "
                                                        "model or set under the same name.")
                     ] = False,
    spec: Annotated[Path | None, typer.Option(
        "--spec", help="An experiment spec: evaluate over its harness space (plugins "
                       "loaded) and its out-of-space harnesses.")] = None,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Run the black-box (bb/...) episodes as Ray tasks on this "
                              "cluster (HEAD:6379, ray://HEAD:10001 or auto); each node needs "
                              "the model and the harnesses.")] = None,
) -> None:
    """Pass@1 of any model across harnesses, no training: its harness map.

    Evaluate MODEL under every harness of a set, with no training, into a run folder that
    `hscale report` reads (heat map over the space, component effects, best vs worst).

    Cost: episodes = harnesses x tasks x runs, about 5 turns each. On a 2-core CPU a 135M
    model generates about 40-60 tokens/s at batch 32, so the default (base + 18 in-space + 2
    out-of-space harnesses, 6 tasks, greedy: 126 episodes) takes minutes; `--harnesses all`
    (242 configurations) with 6 tasks takes hours. Interrupted work resumes on rerun.
    """
    from hscale.cli._progress import progress
    from hscale.train.lm import is_endpoint
    from hscale.train.running import Request, evaluate, plan_evaluation

    is_endpoint(model)  # a malformed endpoint URL is one line here, before any planning
    request = Request(model=model, harnesses=harnesses, benchmark=benchmark, path=path,
                      tasks=tasks, runs=runs, decoding=decoding, experiment=experiment,
                      label=label, max_new_tokens=max_new_tokens, max_batch=batch,
                      served_name=served_name, spec=None if spec is None else str(spec),
                      ray_address=ray_address)
    manifest = plan_evaluation(request)
    sizes = ", ".join(f"{k} {len(v)}" for k, v in manifest.eval_sets.items())
    passes = 1 if decoding == "greedy" else runs + (decoding == "both")
    episodes = sum(len(v) for v in manifest.eval_sets.values()) * manifest.benchmark.tasks * \
        passes
    print(f"evaluating {model} as {manifest.arm}: harnesses {sizes}; "
          f"{manifest.benchmark.tasks} tasks; decoding {decoding}; about {episodes} episodes"
          + ("" if model.startswith("hscale-") else
             " (a real model on a CPU: about 15 s an episode on 2 cores, in waves; the time "
             "left follows the first wave)"))
    with progress("episodes") as update:
        run_dir = evaluate(request, out, force, update)
    import pandas as pd

    rows = pd.read_parquet(run_dir / "eval.parquet")
    summary = rows.groupby(["decoding", "benchmark", "setting"])["success"].agg(["mean", "size"])
    for (dec, bench, setting), row in summary.iterrows():
        print(f"  {dec:<8} {bench:<12} {setting:<13} Pass@1 {100 * row['mean']:6.2f}%  "
              f"({int(row['size'])} episodes)")
    from hscale.contracts import checker_health

    warning = checker_health([run_dir]).line()
    if warning:
        print(warning, file=sys.stderr)
    print(f"wrote {run_dir}; `hscale report {run_dir.parents[1]}` maps it")
