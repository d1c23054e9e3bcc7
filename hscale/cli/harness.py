"""``hscale harness ...``: list the components, render what a model sees, self-check the world."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table
from rich.text import Text

from hscale.cli.evolve import evolve_cmd
from hscale.errors import HscaleError
from hscale.text import printable

app = typer.Typer(help="Harnesses: components, rendering, and an oracle self-check.",
                  no_args_is_help=True, add_completion=False)
console = Console(highlight=False, soft_wrap=True, emoji=False)  # text printed as it is


SpecOpt = Annotated[Path | None, typer.Option(
    "--spec", help="An experiment spec: its harness space (plugins loaded) and its "
                   "out-of-space harnesses instead of the papers'.")]


def _space(spec: Path | None):
    """(the harness space, the out-of-space harnesses) of a spec, or the papers'."""
    from hscale.harness import OUT_OF_SPACE, papers_space

    if spec is None:
        return papers_space(), list(OUT_OF_SPACE)
    from hscale.train.planning import out_of_space_names, space_of
    from hscale.train.spec import load_spec

    loaded = load_spec(spec)
    return space_of(loaded), out_of_space_names(loaded)


def _all_labels(space, out_of_space: list[str]) -> list[str]:
    """Every harness of hscale's own: a black-box CLI (bb/...) renders its own prompts."""
    from hscale.contracts import is_blackbox

    factors = space.factor_space
    return factors.labels(factors.all_configs()) + [h for h in out_of_space
                                                     if not is_blackbox(h)]


@app.command("list")
def list_cmd(spec: SpecOpt = None) -> None:
    """Registered realizations per component, and the harness presets (out of space)."""
    from hscale.harness import COMPONENTS, PRESETS
    from hscale.harness.components import EXTRA_KINDS, available, load_builtins

    load_builtins()  # hscale's own added kinds (notes) are declared on import
    if spec is not None:
        _space(spec)  # its plugins register their realizations and kinds
    table = Table(show_edge=False)
    table.add_column("component")
    table.add_column("registered realizations")
    for component in (*COMPONENTS, *EXTRA_KINDS.names()):
        table.add_row(escape(component), escape(", ".join(available(component))))
    console.print(table)
    console.print("out-of-space harnesses: " + ", ".join(PRESETS.names()), markup=False)
    from hscale.harness import HARNESSES

    shown = [f"{n} ({'installed' if HARNESSES.get(n).installed() else 'not installed'})"
             for n in HARNESSES]
    console.print("black-box harnesses: " + ", ".join(shown), markup=False)


@app.command("install")
def install_cmd(
    names: Annotated[list[str], typer.Argument(help="bb/claude-code, bb/codex, bb/openclaw, "
                                                    "or all.")],
) -> None:
    """Install black-box harnesses from the npm registry, pinned, into hscale's cache
    ($HSCALE_CACHE/harnesses; OpenClaw with the Node 24 it needs)."""
    from hscale.harness import HARNESSES, install, version_of

    chosen = list(HARNESSES) if names == ["all"] else names
    for name in chosen:
        HARNESSES.check(name)
    for name in chosen:
        harness = install(name, log=lambda line: console.print(printable(line), markup=False))
        console.print(f"{name}: {version_of(harness) or harness.version} at "
                      f"{harness.executable}", markup=False)


def _task(task_id: str | None, seed: int):
    from hscale.harness import BuiltinWorld

    tasks = BuiltinWorld().tasks(20, seed)
    if task_id is None:
        return tasks[0]
    for task in tasks:
        if task.task_id == task_id:
            return task
    raise HscaleError(f"no built-in task {task_id!r} for seed {seed}",
                      f"choose one of {', '.join(t.task_id for t in tasks[:5])}, ...")


def _harness(label: str, spec: Path | None = None):
    from hscale.contracts import is_blackbox
    from hscale.harness import PRESETS, harness_named

    if is_blackbox(label):
        raise HscaleError(f"{label} is a real CLI: it renders its own prompts",
                          f"see them in a record: hscale evaluate MODEL --harnesses {label}, "
                          "or hscale serve MODEL --record DIR")
    space, _ = _space(spec)
    try:
        return harness_named(label, space).fresh()
    except HscaleError:
        example = space.factor_space.label(space.factor_space.base)
        raise HscaleError(f"unknown harness {label!r}", f"give a label such as {example} "
                          f"or one of {', '.join(PRESETS.names())}") from None


@app.command("render")
def render_cmd(
    label: Annotated[str, typer.Argument(help="A configuration label (S0-T1-O2-C0-W1) or an "
                                              "out-of-space harness (oos/shell).")],
    task: Annotated[str | None, typer.Option("--task", help="Built-in task id.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the built-in tasks.")] = 0,
    spec: SpecOpt = None,
) -> None:
    """Show exactly what the model sees at each turn of an oracle episode under LABEL."""
    from hscale.harness import Oracle, run_episode

    harness = _harness(label, spec)
    chosen = _task(task, seed)
    seen: list[list] = []

    class Recording(Oracle):
        def generate(self, messages):
            seen.append(list(messages))
            return super().generate(messages)

    episode = run_episode(Recording(chosen, harness), harness, chosen)
    for turn, view in enumerate(seen):
        console.rule(f"model call {turn}: {len(view)} messages in view")
        for message in view:  # task and model text is printed as it is, never as markup
            console.print(Text.assemble((f"[{message.role}]", "bold"), " ",
                                        str(message.content)))
        console.print(Text.assemble(("[assistant]", "bold green"), " ",
                                    str(episode.generations[turn].text)))
    console.rule()
    console.print(f"task {chosen.task_id} ({chosen.category}) under {harness.name}: reward "
                  f"{episode.reward:g}, {episode.turns} turns, ended by {episode.termination}",
                  markup=False)


@app.command("selfcheck")
def selfcheck_cmd(
    tasks: Annotated[int, typer.Option("--tasks", "-n", help="Built-in tasks per harness.")
                     ] = 20,
    seed: Annotated[int, typer.Option(help="Seed of the built-in tasks.")] = 0,
    threshold: Annotated[float, typer.Option(help="Least success rate per harness.")] = 0.99,
    spec: SpecOpt = None,
) -> None:
    """Run the oracle on every configuration and out-of-space harness; exit 1 below 99%."""
    from hscale.harness import DoNothing, Oracle, generate, harness_named, run_episode

    if tasks < 1:
        raise HscaleError(f"--tasks must be at least 1, got {tasks}")
    task_list = generate(tasks, seed=seed)
    space, out_of_space = _space(spec)  # the spec read once
    labels = _all_labels(space, out_of_space)
    rates: dict[str, float] = {}
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("oracle episodes", total=len(labels) * len(task_list))
        for label in labels:
            harness = harness_named(label, space)
            wins = 0
            for task in task_list:
                wins += run_episode(Oracle(task, harness), harness, task).success
                progress.advance(bar)
            rates[label] = wins / len(task_list)
    floor = harness_named(labels[0], space)
    nothing = sum(run_episode(DoNothing(), floor, t).reward for t in task_list)
    width = max(map(len, labels)) + 6
    cells = [f"{label} {rate:4.0%}".ljust(width) for label, rate in rates.items()]
    for start in range(0, len(cells), 5):
        console.print("".join(cells[start:start + 5]), markup=False)
    low = [label for label, rate in rates.items() if rate < threshold]
    overall = sum(rates.values()) / len(rates)
    console.print(f"oracle success overall {overall:.2%} over {len(labels)} harnesses x "
                  f"{len(task_list)} tasks; do-nothing reward {nothing:g}", markup=False)
    if low:
        console.print(f"{len(low)} harnesses below {threshold:.0%}: {', '.join(low[:10])}",
                      style="red", markup=False)
        raise typer.Exit(1)


app.command("evolve")(evolve_cmd)  # hscale.cli.evolve: imports only typer and rich at the top
