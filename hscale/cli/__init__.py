"""The ``hscale`` command: a root that composes one module per command group, lazily.

``hscale --help`` lists the commands from the table below without importing any of them, so
it needs neither numpy nor torch; a command's module is imported when it runs. Every error
ends the command through :func:`hscale.errors.exit_for`: a user error is one line on stderr
and exit status 2, never a traceback.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

try:  # typer >= 0.25 vendors click; older releases use click itself
    from typer import _click
except ImportError:  # pragma: no cover
    import click as _click

from hscale.errors import USER_ERROR, HscaleWarning, exit_for
from hscale.text import printable

# name -> ("module:attribute", one-line help). The attribute is a Typer app (a command group)
# or a command function.
COMMANDS: dict[str, tuple[str, str]] = {
    "design": ("hscale.cli.design:app",
               "Design harness factor spaces: orthogonal arrays, bounds, neighbourhoods."),
    "harness": ("hscale.cli.harness:app",
                "Harnesses: components, rendering, and an oracle self-check."),
    "validate": ("hscale.cli.experiments:validate_cmd",
                 "Check an experiment spec with every check planning makes; print its arms as "
                 "resolved."),
    "plan": ("hscale.cli.experiments:plan_cmd",
             "Write one manifest.json and schedule.parquet per arm and seed (idempotent)."),
    "run": ("hscale.cli.experiments:run_cmd",
            "Plan and run every arm x seed; finished runs are skipped, partial ones resume."),
    "clean": ("hscale.cli.experiments:clean_cmd",
              "Drop the checkpoints of completed runs; results, logs and runs that may resume "
              "stay."),
    "rerun": ("hscale.cli.rerun:rerun_cmd",
              "Run finished runs again from their manifests into a scratch folder and compare "
              "the rows."),
    "report": ("hscale.cli.report:report_cmd",
               "Tables, figures and a self-contained report.html for a runs folder, the answer "
               "first."),
    "view": ("hscale.cli.view:view_cmd",
             "Browse every evaluated episode in a local page: filter, read, compare."),
    "power": ("hscale.cli.power:power_cmd",
              "Seeds an arm needs to resolve a study's comparisons, from a pilot or stated "
              "parts."),
    "evaluate": ("hscale.cli.evaluate:evaluate_cmd",
                 "Pass@1 of any model across harnesses, no training: its harness map."),
    "model": ("hscale.cli.model:app",
              "Base models of the embedded CPU trainer; chat models as Hugging Face folders."),
    "tasks": ("hscale.cli.tasks:app",
              "Task sets: count, categories, a rendered example, and every problem in one report."),
    "collect": ("hscale.cli.collect:collect_cmd",
                "Trajectories of a teacher through a real black-box harness, for training."),
    "serve": ("hscale.cli.serve:serve_cmd",
              "Serve a model at OpenAI- and Anthropic-compatible endpoints, recording every "
              "request."),
    "doctor": ("hscale.cli.doctor:doctor_cmd",
               "What this machine can run: packages, GPUs, each backend's missing pieces."),
}


def load_command(name: str) -> _click.Command:
    """The click command behind ``hscale NAME`` (imports its module)."""
    target, _ = COMMANDS[name]
    module, _, attribute = target.partition(":")
    obj = getattr(importlib.import_module(module), attribute)
    if not isinstance(obj, typer.Typer):  # a command function: a one-command app
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        single.command(name)(obj)
        obj = single
    command = typer.main.get_command(obj)
    command.name = name
    return _bare_flags(command)


def _bare_flags(command: _click.Command) -> _click.Command:
    """``command`` and its subcommands with their flags shown without a value type (typer
    writes ``--quick <bool>``, as if the flag took a value)."""
    stack = [command]
    while stack:
        each = stack.pop()
        each.help = _reflowed(each.help)
        for param in each.params:
            if getattr(param, "is_flag", False) and param.metavar is None:
                param.metavar = ""
        each.get_help_option = _bare_help(each.get_help_option)
        stack.extend(getattr(each, "commands", {}).values())
    return command


def _reflowed(text: str | None) -> str | None:
    """Each prose paragraph of a command's help as one line, for the terminal to wrap
    (typer keeps a docstring's line breaks after its first paragraph); lists and indented
    blocks as written."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if any(line[:1].isspace() or line.lstrip()[:2] in ("- ", "* ")
                                 for line in p.splitlines()) else " ".join(p.split())
                       for p in paragraphs)


def _bare_help(made: Callable[[_click.Context], Any]) -> Callable[[_click.Context], Any]:
    def get_help_option(ctx: _click.Context) -> Any:
        option = made(ctx)
        if option is not None and option.metavar is None:
            option.metavar = ""
        return option

    return get_help_option


class LazyGroup(TyperGroup):
    """Commands are imported on first use; help lists them from :data:`COMMANDS`."""

    _listing = False

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        if self._listing:
            summary = COMMANDS[cmd_name][1]
            return TyperCommand(name=cmd_name, help=summary, short_help=summary)
        if cmd_name not in self.commands:
            self.commands[cmd_name] = load_command(cmd_name)
        return self.commands[cmd_name]

    def get_help_option(self, ctx: _click.Context) -> Any:
        return _bare_help(super().get_help_option)(ctx)

    def format_help(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(cls=LazyGroup, help="hscale: design, run and analyse harness-diversity "
                                      "ablations for agentic RL.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def _root() -> None:
    """The commands below come from :data:`COMMANDS`."""


def _command_path(argv: list[str]) -> str:
    """``hscale design oa`` for argv ``design oa 3^5 ...``: the words naming the command."""
    words = ["hscale"]
    if argv and argv[0] in COMMANDS:
        words.append(argv[0])
        group = load_command(argv[0])
        if len(argv) > 1 and argv[1] in getattr(group, "commands", {}):
            words.append(argv[1])
    return " ".join(words)


def _fail(status: int, message: str) -> None:
    message = printable(message)  # a CLI's or script's text in it: no escape sequence acts
    print(message if status != USER_ERROR else f"error: {' '.join(message.split())}",
          file=sys.stderr)
    sys.exit(status)


def _warn(message, category, filename, lineno, file=None, line=None) -> None:
    """hscale's warnings as one line each; others as Python prints them."""
    if issubclass(category, HscaleWarning):
        print(f"warning: {' '.join(printable(message).split())}", file=sys.stderr)
    else:
        _show(message, category, filename, lineno, file, line)


_show = warnings.showwarning


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: user errors become one line on stderr and exit status 2, never a traceback."""
    args = sys.argv[1:] if argv is None else list(argv)
    warnings.showwarning = _warn
    try:
        code = app(args=args, prog_name="hscale", standalone_mode=False)
    except _click.exceptions.NoArgsIsHelpError:
        sys.exit(0)  # typer has already printed the help
    except _click.exceptions.UsageError as exc:
        cmd = exc.ctx.command_path if exc.ctx else "hscale"
        said = exc.format_message().replace("Input should be", "it must be")  # typer's words
        _fail(USER_ERROR, f"{said} (hint: run '{cmd} --help')")
    except typer.Abort as exc:
        if isinstance(exc.__cause__, EOFError):  # click turns any EOFError into an Abort
            _fail_for(exc.__cause__, args)
        _fail(130, "interrupted")
    except _click.exceptions.ClickException as exc:
        _fail(USER_ERROR, exc.format_message())
    except BaseException as exc:  # noqa: BLE001 -- mapped below, or re-raised as a bug
        if isinstance(exc, SystemExit):
            raise
        _fail_for(exc, args)
    if code == 130:  # typer returns a Ctrl-C as exit status 130, having said nothing
        _fail(130, "interrupted")
    sys.exit(code if isinstance(code, int) else 0)


def _fail_for(exc: BaseException, args: list[str]) -> None:
    """Exit as ``exit_for`` maps ``exc``; a bug it does not map is raised, traceback and all."""
    mapped = exit_for(exc, _safe_command_path(args))
    if mapped is None:
        raise exc
    _fail(*mapped)


def _safe_command_path(args: list[str]) -> str:
    try:
        return _command_path(args)
    except Exception:  # the hint is a courtesy; never let it mask the real error
        return "hscale"

