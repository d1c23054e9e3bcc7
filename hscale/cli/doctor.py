"""``hscale doctor``: one screen on what this machine can run, and the fix for what it cannot."""

from __future__ import annotations

import platform
import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console(highlight=False, soft_wrap=True)
# (import name, distribution) shown in the package table
PACKAGES = (("torch", "torch"), ("verl", "verl"), ("vllm", "vllm"), ("ray", "ray"),
            ("transformers", "transformers"), ("hydra", "hydra-core"), ("gguf", "gguf"),
            ("oapackage", "OApackage"))


def doctor_cmd() -> None:
    """What this machine can run: packages, GPUs, each backend's missing pieces.

    What is installed, and what each backend still needs here, with the fix."""
    from hscale.harness.tasks import containment
    from hscale.train.backends import LocalBackend, ScriptedBackend, cuda_gpus, has_module, version
    from hscale.train.backends.verl import launch_requirements
    from hscale.train.ray_cluster import RayExecutor

    gpus = cuda_gpus()
    torch = version("torch")
    console.print(f"hscale {version('hscale') or '(source)'} on Python "
                  f"{platform.python_version()} ({sys.executable})")
    console.print(f"torch {torch or 'not installed'}"
                  + (f", {gpus} CUDA GPUs" if gpus else ", no CUDA GPU" if torch else ""))
    packages = Table(show_edge=False, box=None, pad_edge=False)
    packages.add_column("package")
    packages.add_column("version")
    for name, dist in PACKAGES:
        packages.add_row(dist, version(dist) if has_module(name) else "[dim]-[/dim]")
    console.print(packages)
    jail = containment()
    console.print(("reward scripts: " if jail.strong else "[yellow]reward scripts:[/yellow] ")
                  + escape(jail.line))
    backends = Table(show_edge=False, box=None, pad_edge=False)
    backends.add_column("backend")
    backends.add_column("status")
    backends.add_column("fix")
    ray = RayExecutor("HEAD:6379").requirements()
    needs = (("scripted", ScriptedBackend().requirements()),
             ("local", LocalBackend().requirements()),
             ("local --ray-address", [*LocalBackend().requirements(), *ray]),
             ("verl --dry-run", launch_requirements(False)[:1]),
             ("verl (this machine)", launch_requirements(False)),
             ("verl --ray-address", launch_requirements(True)))
    for label, requirements in needs:
        missing = [need for need in requirements if not need.ok]
        status = "[green]ready[/green]" if not missing else "[red]" + escape("; ".join(
            need.problem for need in missing)) + "[/red]"
        backends.add_row(label, status,
                         escape("; ".join(dict.fromkeys(n.fix for n in missing))))
    console.print(backends)
    _blackbox()


def _blackbox() -> None:
    """The black-box harnesses: installed (and the version they report), or the command."""
    from hscale.harness import HARNESSES

    table = Table(show_edge=False, box=None, pad_edge=False)
    table.add_column("black-box harness")
    table.add_column("status")
    for name in HARNESSES:
        harness = HARNESSES.get(name)
        status = ("[green]installed[/green] " + escape(f"{harness.package}@{harness.version}")
                  if harness.installed() else
                  f"[dim]not installed: hscale harness install {escape(name)}[/dim]")
        table.add_row(escape(name), status)
    from hscale.harness import isolation

    table.add_row("episodes' network", escape(isolation()))
    console.print(table)
