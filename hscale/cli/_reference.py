"""The command reference, written from the commands themselves (their click objects, as
``--help`` shows them), so the docs list exactly the commands, arguments and options hscale
has; the docs site builds its page from :func:`cli_reference`."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from enum import Enum
from pathlib import Path

from hscale.cli import COMMANDS, _click, load_command


def cli_reference() -> str:
    """The reference page (Markdown): one section a command and subcommand."""
    out = ["# Command reference", "",
           "Every `hscale` command with its arguments and options, generated from the "
           "command-line code (`hscale.cli`), as `hscale COMMAND --help` prints them. A user "
           "error is one line on stderr with a hint, and exit status 2.", ""]
    for name in COMMANDS:
        for path, command in _walk(load_command(name), ["hscale", name]):
            out += _section(path, command)
    return "\n".join(out)


def cli_commands() -> list[str]:
    """Every command path (``hscale design oa``), in the reference's order."""
    return [" ".join(path) for name in COMMANDS
            for path, _ in _walk(load_command(name), ["hscale", name])]


def _walk(command: _click.Command, path: list[str]
          ) -> Iterator[tuple[list[str], _click.Command]]:
    if hasattr(command, "list_commands"):  # a group (typer's click has no Group class)
        for sub in command.list_commands(_click.Context(command)):
            yield from _walk(command.get_command(_click.Context(command), sub), [*path, sub])
    else:
        yield path, command


def _section(path: list[str], command: _click.Command) -> list[str]:
    args = [p for p in command.params if _argument(p)]
    usage = " ".join([*path, *(f"{a.name.upper()}{'...' if a.nargs == -1 else ''}"
                               for a in args), "[OPTIONS]"])
    out = [f"## `{' '.join(path)}`", "", f"```\n{usage}\n```", "",
           (command.help or "").strip(), ""]
    rows = []
    for p in command.params:
        if p.name == "help":
            continue
        if _argument(p):
            name = f"`{p.name.upper()}`"
        else:
            name = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
        kind = "flag" if getattr(p, "is_flag", False) else _kind(p)
        default = p.default if p.default not in (None, (), [], False) else ""
        if callable(default):
            default = ""
        rows.append(f"| {name} | {kind} | {_cell(str(default))} | "
                    f"{_cell(getattr(p, 'help', None) or '')} |")
    if rows:
        out += ["| argument or option | takes | default | what it does |", "|---|---|---|---|",
                *rows, ""]
    return out


def _argument(param: _click.Parameter) -> bool:
    return param.param_type_name == "argument"


def _kind(param: _click.Parameter) -> str:
    """What the parameter takes, from its annotation (typer's type descriptor), with its
    bounds."""
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", str)
    many = typing.get_origin(annotation) is list
    base = typing.get_args(annotation)[0] if many else annotation
    if isinstance(base, type) and issubclass(base, Enum):
        text = " or ".join(f"`{m.value}`" for m in base)
    else:
        text = {int: "integer", float: "number", str: "text", Path: "path"}.get(base, "value")
    bounds = [f"{w} {v:,}" for w, v in ((">=", getattr(param, "min", None)),
                                         ("<=", getattr(param, "max", None))) if v is not None]
    return (f"{text} (repeatable)" if many else text) + (f", {', '.join(bounds)}"
                                                          if bounds else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
