"""``hscale harness evolve``: a frozen Harness-S sibling pool by directional evolution."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from hscale.errors import HscaleError

console = Console(highlight=False, soft_wrap=True, emoji=False)


def _rounds(text: str) -> tuple[int, ...]:
    try:
        rounds = tuple(int(x) for x in text.split(","))
    except ValueError:
        rounds = ()
    if not rounds or min(rounds) < 1 or len(rounds) > 20:
        raise HscaleError(f"--rounds {text!r}: give proposals per round, e.g. 7,8,8",
                          "one to twenty positive numbers joined with commas")
    return rounds


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _editor(source: str, served_name: str | None):
    """An endpoint URL (a chat model that writes edits) or a file of scripted replies."""
    from hscale.train.harness_s import ModelEditor, ScriptedEditor
    from hscale.train.lm import is_endpoint, open_chat_model

    if is_endpoint(source):
        return ModelEditor(open_chat_model(source, served_name))
    from hscale.yamlio import read_yaml

    data, _ = read_yaml(Path(source), "editor replies")
    if not isinstance(data, list):
        raise HscaleError(f"{source}: scripted editor replies are a list (one a proposal)",
                          "write a YAML or JSON list of edits ({set: {...}, why: ...})")
    return ScriptedEditor(data)


def _tasks(spec: Path | None, count: int):
    """(the space, the training tasks, the validation tasks) of a spec or the papers'."""
    from hscale.contracts import BenchmarkRecord
    from hscale.train.planning import router_pool

    if spec is None:
        from hscale.harness import BuiltinWorld, papers_space

        space, bench = papers_space(), BenchmarkRecord(name="builtin", tasks=count, seed=0)
        train = BuiltinWorld().tasks(count, 0)
    else:
        from hscale.harness import benchmark_of
        from hscale.train.planning import resolve_sources, space_of
        from hscale.train.spec import load_spec

        loaded = load_spec(spec)
        space = space_of(loaded)
        bench = BenchmarkRecord.model_validate(resolve_sources(loaded, spec).train)
        train = benchmark_of(bench).tasks(min(count, bench.tasks), bench.seed)
    return space, train, router_pool(bench)


def evolve_cmd(
    editor: Annotated[str, typer.Option(
        "--editor", help="The editor: an endpoint (http://HOST:PORT/v1) whose model writes "
                         "edits, or a YAML/JSON file of scripted replies.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The pool file to write "
                                                          "(and <name>.episodes.parquet).")],
    model: Annotated[str, typer.Option(help="The policy the pool is evolved for (as hscale "
                                            "evaluate takes it).")] = "hscale-tiny",
    spec: Annotated[Path | None, typer.Option(
        "--spec", help="An experiment spec: its space, base harness and training "
                       "benchmark (default: the papers' space, the built-in world).")] = None,
    rounds: Annotated[str, typer.Option(help="Proposals per round.")] = "7,8,8",
    tasks: Annotated[int, typer.Option(min=2, help="Training tasks whose failures are "
                                                   "grouped by root cause.")] = 24,
    served_name: Annotated[str | None, typer.Option(help="The editor endpoint's model name.")
                           ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing pool file.")
                     ] = False,
) -> None:
    """Grow a sibling pool from the base harness: each round, parents chosen for joint
    coverage of the validation tasks, their training failures grouped by root cause, one
    editor proposal per direction; every child that builds, keeps the protocol and runs joins
    (the rest are counted with their reason). The pool is then frozen (content-hashed): a
    rescue arm names it with assignment.pool: FILE."""
    from hscale.harness import harness_named
    from hscale.train.harness_s import Evolution, write_pool
    from hscale.train.lm import drive, open_chat_model

    plan = _rounds(rounds)
    if out.exists() and not force:
        raise HscaleError(f"{out} exists: a frozen pool is not replaced",
                          "pass --force, or write the new pool under another name")
    if out.suffix != ".json":
        raise HscaleError(f"--out {out}: a pool file is JSON", "name it pool.json")
    chosen = _editor(editor, served_name)
    space, train, validation = _tasks(spec, tasks)
    factors = space.factor_space
    base = harness_named(factors.label(factors.base), space)
    policy = open_chat_model(model)

    def play(jobs):
        return drive(policy, [(h, t, True) for h, t in jobs])

    def said(r: int, accepted: int, dropped: list) -> None:
        reasons: dict[str, int] = {}
        for drop in dropped:
            reasons[drop["reason"]] = reasons.get(drop["reason"], 0) + 1
        why = ", ".join(f"{n} {reason}" for reason, n in reasons.items())
        console.print(f"round {r}: {_count(accepted, 'child', 'children')} joined, "
                      f"{_count(len(dropped), 'proposal')} dropped" + (f" ({why})" if why
                                                                       else ""), markup=False)
        for drop in dropped[:3]:
            console.print(f"  {drop['reason']}: {drop['detail']}", markup=False)

    from rich.progress import Progress

    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("evaluating the base harness", total=None)

        def asking(r: int, done: int, total: int) -> None:
            progress.update(bar, description=f"round {r}: proposal {done + 1} of {total} "
                            "(then its children are evaluated)", completed=done, total=total)

        evolution = Evolution(play, base, space.name, train, validation, chosen, plan,
                              said, asking)
        pool = evolution.run()
    if not pool.children:
        raise HscaleError("no proposal made a child: nothing to freeze",
                          "see the reasons above; give the editor more rounds or proposals")
    episodes = out.with_name(out.stem + ".episodes.parquet")
    from hscale.files import write_parquet

    write_parquet(episodes, evolution.evaluations())
    write_pool(out, pool)
    _summary(pool, evolution.evaluations())
    console.print(f"froze {len(pool.children)} children of {pool.base} in {out} (sha256 "
                  f"{pool.sha256[:12]}); their episodes in {episodes.name}", markup=False)


def _summary(pool, episodes) -> None:
    """Locality and complementarity on the validation tasks."""
    from hscale.analysis import complementarity, locality

    val = episodes[episodes.split == "validation"]
    table = Table(title="locality on the validation tasks (vs the base harness)")
    for column in ("sibling", "round", "repairs", "regresses"):
        table.add_column(column)
    rounds = {c.name: c.round for c in pool.children}
    for row in locality(val, pool.base).itertuples():
        table.add_row(row.harness, str(rounds.get(row.harness, "")), str(row.repaired),
                      str(row.regressed))
    console.print(table)
    union = complementarity(val, pool.base)
    console.print(union.to_string(index=False), markup=False)
