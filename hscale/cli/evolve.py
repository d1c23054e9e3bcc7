"""``hscale harness evolve``: a frozen Harness-S sibling pool by directional evolution."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from hscale.errors import HscaleError, HscaleWarning
from hscale.files import atomic_write_text, reads_as, refuse_foreign_file, write_parquet

console = Console(highlight=False, soft_wrap=True, emoji=False)
# each proposal is an editor request and its child's evaluation on every task: bounded so a
# typo cannot start days of work (the paper's AppWorld pool: 7,8,8)
MAX_ROUNDS, MAX_A_ROUND, MAX_IN_ALL = 20, 64, 256
CHECKPOINT_FORMAT = "hscale-evolving/1"


def _rounds(text: str) -> tuple[int, ...]:
    try:
        rounds = tuple(int(x) for x in text.split(","))
    except ValueError:
        rounds = ()
    if not rounds or min(rounds) < 1 or len(rounds) > MAX_ROUNDS:
        raise HscaleError(f"--rounds {text!r}: give proposals per round, e.g. 7,8,8",
                          f"one to {MAX_ROUNDS} positive numbers joined with commas")
    if max(rounds) > MAX_A_ROUND or sum(rounds) > MAX_IN_ALL:
        raise HscaleError(f"--rounds {text[:40]!r}: at most {MAX_A_ROUND} proposals a round "
                          f"and {MAX_IN_ALL} in all (each is an editor request and its "
                          "child's evaluation on every task)",
                          "the paper's pool took 7,8,8; give a few rounds of a few proposals")
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

    data, _ = read_yaml(Path(source), "file of editor replies")
    if not isinstance(data, list):
        raise HscaleError(f"{source}: scripted editor replies are a list (one a proposal)",
                          "write a YAML or JSON list of edits ({set: {...}, why: ...})")
    return ScriptedEditor(data)


def _digest(source: str | Path) -> str:
    """A file's sha256 (what it holds, wherever it lies), or an endpoint as given."""
    from hscale.harness import sha256_of
    from hscale.train.lm import is_endpoint

    return str(source) if is_endpoint(str(source)) else sha256_of(Path(source).read_bytes())


def _checkpoint(out: Path) -> Path:
    return out.with_name(out.stem + ".evolving.json")


def _saved(path: Path, inputs: dict[str, Any], force: bool) -> dict[str, Any] | None:
    """The state an interrupted evolution of the same inputs left in ``path``, or None (start
    afresh). One of other inputs is refused, naming what differs, unless ``force``: then it
    is started over (and replaced at the first checkpoint)."""
    if not path.exists():
        return None
    try:
        raw = json.loads(path.read_text())
        theirs = raw["inputs"] if raw.get("format") == CHECKPOINT_FORMAT and "state" in raw \
            else None
    except (OSError, ValueError, KeyError, AttributeError):
        raw, theirs = {}, None
    if theirs == inputs:
        return raw["state"]
    what = (f"an unfinished evolution of other inputs ("
            f"{', '.join(k for k in inputs if theirs.get(k) != inputs[k])} differ)"
            if isinstance(theirs, dict) else "not a checkpoint this version reads")
    if not force:
        raise HscaleError(f"{path}: {what}", "rerun with the inputs it was started with to "
                          "resume it, or pass --force to start over")

    warnings.warn(f"{path}: {what}; --force: starting over", HscaleWarning, stacklevel=2)
    return None


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
    rounds: Annotated[str, typer.Option(help=f"Proposals per round, comma-separated (at "
                                             f"most {MAX_A_ROUND} a round, {MAX_IN_ALL} in "
                                             f"all, {MAX_ROUNDS} rounds).")] = "7,8,8",
    tasks: Annotated[int, typer.Option(min=2, help="Training tasks whose failures are "
                                                   "grouped by root cause.")] = 24,
    served_name: Annotated[str | None, typer.Option(help="The editor endpoint's model name.")
                           ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing pool file, or "
                                                        "start over from a checkpoint of "
                                                        "other inputs.")] = False,
) -> None:
    """Grow a sibling pool from the base harness: each round, parents chosen for joint
    coverage of the validation tasks, their training failures grouped by root cause, one
    editor proposal per direction; every child that builds, keeps the protocol and runs joins
    (the rest are counted with their reason). The pool is then frozen (content-hashed): a
    rescue arm names it with assignment.pool: FILE.

    Progress is shown from the start (a bar on a terminal, plain lines on stderr off one).
    The work is checkpointed in <out name>.evolving.json after the base harness's evaluation
    and after each round: after Ctrl-C or a kill the same command resumes after the last
    finished round and writes the pool an uninterrupted run writes; a checkpoint of other
    inputs (editor, model, spec, rounds, tasks) is refused, or started over with --force."""
    from hscale.harness import canonical, harness_named, sha256_of
    from hscale.train.harness_s import Evolution, read_pool, write_pool
    from hscale.train.lm import drive, open_chat_model

    plan = _rounds(rounds)
    if out.suffix != ".json":
        raise HscaleError(f"--out {out}: a pool file is JSON", "name it pool.json")
    refuse_foreign_file(out, reads_as(read_pool), "an hscale pool file",
                        "give the name of a new file (nothing was written)", name=f"--out {out}")
    if out.exists() and not force:
        raise HscaleError(f"--out {out}: a frozen pool exists there and is not replaced",
                          "pass --force to replace it, or write the new pool under another "
                          "name")
    chosen = _editor(editor, served_name)
    space, train, validation = _tasks(spec, tasks)
    factors = space.factor_space
    base = harness_named(factors.label(factors.base), space)
    inputs = {"--editor": _digest(editor), "--served-name": served_name, "--model": model,
              "--spec": None if spec is None else _digest(spec), "--rounds": list(plan),
              "--tasks": tasks, "the tasks": [space.name, base.name,
                                              [t.task_id for t in train],
                                              [t.task_id for t in validation]]}
    checkpoint = _checkpoint(out)
    saved = _saved(checkpoint, inputs, force)
    live = console.is_terminal

    def say(line: str) -> None:
        if live:
            console.print(line, markup=False)
        else:
            print(line, file=sys.stderr, flush=True)

    policy = open_chat_model(model)  # a bad model is one line, before any progress
    say(f"evolving a pool from {base.name} for {model}: {_count(len(plan), 'round')} of "
        f"{','.join(map(str, plan))} proposals, checkpointed in {checkpoint}")
    if saved is not None:
        done = len(saved["rounds"])
        say("resuming after " + (f"round {done} of {len(plan)}" if done else "the base "
            "harness's evaluation") + f" ({_count(saved['requests'], 'editor request')} "
            "made before): its work is not repeated")

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

    def save(state: dict) -> None:
        atomic_write_text(checkpoint, json.dumps({
            "format": CHECKPOINT_FORMAT, "fingerprint": sha256_of(canonical(inputs)),
            "inputs": inputs, "state": state}))

    from rich.progress import Progress

    try:
        with Progress(console=console, transient=True, disable=not live) as progress:
            bar = progress.add_task("starting", total=None)

            def play(jobs):  # the bar counts the episodes
                return drive(policy, [(h, t, True) for h, t in jobs],
                             done=lambda *_: progress.advance(bar))

            def asking(r: int, done: int, total: int) -> None:
                line = f"round {r}: asking the editor for proposal {done + 1} of {total}"
                progress.update(bar, description=line, completed=done, total=total)
                if not live:
                    say(line)

            def evaluating(r: int, harnesses: int, episodes: int) -> None:
                what = "the base harness" if r == 0 else \
                    f"round {r}: {_count(harnesses, 'child', 'children')} that built and ran"
                line = (f"evaluating {what} on {len(train)} training and {len(validation)} "
                        f"validation tasks ({_count(episodes, 'episode')})")
                progress.update(bar, description=line, completed=0, total=episodes)
                say(line)

            evolution = Evolution(play, base, space.name, train, validation, chosen, plan,
                                  said, asking, evaluating, save)
            if saved is not None:
                evolution.resume(saved)
            pool = evolution.run()
    except KeyboardInterrupt:
        if checkpoint.exists():
            print(f"{checkpoint} keeps the finished work: rerun the same command to resume",
                  file=sys.stderr)
        raise
    if not pool.children:
        checkpoint.unlink(missing_ok=True)  # finished: a rerun would end here again
        raise HscaleError("no proposal made a child: nothing to freeze",
                          "see the reasons above; give the editor more rounds or proposals")
    episodes = out.with_name(out.stem + ".episodes.parquet")

    write_parquet(episodes, evolution.evaluations())
    write_pool(out, pool)
    checkpoint.unlink(missing_ok=True)
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
