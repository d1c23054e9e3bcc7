"""``hscale report RUN_DIR``: tables, figures and report.html for a runs folder."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from hscale.errors import HscaleError
from hscale.text import printable


def report_cmd(
    run_dir: Annotated[Path, typer.Argument(help="runs/<experiment> (or runs/, or one run "
                                                 "folder) written by `hscale run`.")],
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Report folder "
                                             "(default: RUN_DIR/report).")] = None,
    reference: Annotated[str | None, typer.Option(help="Arm every other arm is compared "
                                                       "with (default: structured-18 when "
                                                       "present).")] = None,
    external: Annotated[list[Path] | None, typer.Option(
        "--external", help="CSV of results measured elsewhere, shown beside yours "
                           "(repeatable; RUN_DIR/external/*.csv is read too).")] = None,
    reported: Annotated[bool, typer.Option("--reported/--no-reported", help="Show the "
                                           "papers' reported numbers beside yours.")] = True,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples for the "
                                                         "descriptive intervals (effects, "
                                                         "behaviour).")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the resampling.")] = 0,
    strict: Annotated[bool, typer.Option("--strict", help="Fail when any run file is "
                                                          "missing or corrupt.")] = False,
    view_port: Annotated[int, typer.Option("--view-port", min=1, max=65535,
                                           help="The port the tables' episodes links open "
                                                "(hscale view --port).")] = 8777,
) -> None:
    """Tables, figures and a self-contained report.html for a runs folder, the answer first.

    Writes tables (Markdown, LaTeX, CSV), figures, report.md and report.html for every run
    under RUN_DIR."""
    from hscale.analysis import write_report

    if n_boot < 100:
        raise HscaleError(f"--n-boot {n_boot} is too few resamples for a 95% interval",
                          "use at least 100 (default 2000)")
    report = write_report(run_dir, out, reference=reference, external=external or (),
                          reported=reported, strict=strict, n_boot=n_boot, seed=seed,
                          view_port=view_port)
    for problem in report.problems:
        print(f"warning: {problem}", file=sys.stderr)
    for name, why in report.failed.items():
        print(f"warning: figure {name} failed: {why}", file=sys.stderr)
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    if report.checker_warning:
        print(report.checker_warning, file=sys.stderr)
    for warning in report.provenance.warnings:  # runs made under other code
        print(printable(f"warning: {warning}"), file=sys.stderr)
    for line in report.answer:
        print(line)
    if report.verdicts:
        words = Counter(v.word for v in report.verdicts)
        print(f"{len(report.verdicts)} headline comparisons: "
              + ", ".join(f"{n} {w}" for w, n in words.most_common()) + " (one sentence "
              "each at the top of report.html)")
    if report.provenance.line:
        print(printable(report.provenance.line))
    print(f"wrote {len(report.tables)} tables and {len(report.figures)} figures to "
          f"{report.out} (open {report.out / 'report.html'})")
