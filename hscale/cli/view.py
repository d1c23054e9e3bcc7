"""``hscale view RUNS``: browse every evaluated episode of a runs folder in a local web page
(the table with filters, one episode turn by turn, two side by side), or ``--export`` a
selection as one self-contained HTML file."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer


def view_cmd(
    runs: Annotated[Path, typer.Argument(help="A runs folder (runs/demo), an experiment's or "
                                              "one run's, as `hscale run` wrote it.")],
    # 8777: hscale.analysis._view_app.PORT, where the report's "episodes" links point
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port on the loopback (0 picks "
                                      "a free one).", min=0, max=65535)] = 8777,
    export: Annotated[Path | None, typer.Option(
        "--export", help="Write the selection (see --where) as one self-contained HTML file "
                         "instead of serving.")] = None,
    where: Annotated[list[str] | None, typer.Option(
        "--where", help="A filter KEY=VALUE for --export (repeatable): experiment, arm, "
                        "seed, step, setting, harness, decoding, level (T1), task, outcome "
                        "(solved|failed), behaviour (error-not-recovered, ...), source "
                        "(eval|rollout), role (zero-signal|rescue|sampled).")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=100_000,
                                       help="Episodes an export includes in full.")] = 200,
) -> None:
    """Serve the episodes under RUNS at http://127.0.0.1:PORT until Ctrl-C (read in place,
    nothing copied or written), or write --export FILE."""
    from hscale.analysis import Study
    from hscale.errors import HscaleError
    from hscale.files import atomic_write_text

    query = {}
    for item in where or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise HscaleError(f"--where {item}: not KEY=VALUE", "e.g. --where arm=k1")
        query[key.strip()] = value.strip()
    began = time.perf_counter()
    study = Study(runs)
    print(f"{len(study):,} episodes from {len(study.folders)} run folders under {runs} "
          f"({time.perf_counter() - began:.1f} s)", flush=True)
    if export is not None:
        from hscale.analysis import export_html

        if export.is_dir():
            raise HscaleError(f"--export {export}: is a folder", "give a file name (view.html)")
        atomic_write_text(export, export_html(study, query, limit))
        print(f"wrote {export} ({len(study.select(query)):,} episodes match)")
        return
    if query:
        raise HscaleError("--where filters an --export", "in the page, pick the filters above "
                                                         "the table")
    import socket

    import uvicorn

    from hscale.analysis import build_view_app

    if port == 0:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
    print(f"open http://127.0.0.1:{port}/ (Ctrl-C stops)", flush=True)
    uvicorn.run(build_view_app(study), host="127.0.0.1", port=port, log_level="warning")
