"""``hscale model``: the embedded trainer's base models (build, inspect)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Base models of the embedded CPU trainer.", no_args_is_help=True,
                  add_completion=False)


@app.command("build")
def build_cmd(
    name: Annotated[str, typer.Argument(help="Preset, e.g. hscale-tiny.")] = "hscale-tiny",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here instead of "
                                                                 "the cache.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if cached.")] = False,
) -> None:
    """Warm-start a base model on the demonstrations and cache it under its content hash."""
    from rich.progress import Progress

    from train.backends.local import require_training_packages

    require_training_packages()
    from train.embedded.warmstart import available, build, preset

    preset(name)
    found = available(name)
    if found and not force and out is None:
        print(f"{name}: up to date at {found}")
        return
    with Progress(transient=True) as progress:
        bar = progress.add_task(f"warm start {name}", total=None)
        path = build(name, lambda d, t: progress.update(bar, completed=d, total=t), out)
    print(f"{name}: built {path}")


@app.command("info")
def info_cmd(
    name: Annotated[str, typer.Argument(help="Preset, e.g. hscale-tiny.")] = "hscale-tiny",
) -> None:
    """Show a preset's settings, content hash and where its checkpoint is."""
    import json

    from train.backends.local import require_training_packages

    require_training_packages()
    from train.embedded.warmstart import available, base_model_path, content_hash, preset

    print(json.dumps({"name": name, **preset(name), "content_hash": content_hash(name),
                      "checkpoint": str(available(name) or "not built"),
                      "cache": str(base_model_path(name))}, indent=2))
