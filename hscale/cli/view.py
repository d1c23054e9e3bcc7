"""``hscale view RUNS``: browse every evaluated episode of a runs folder in a local web page
(the table with filters, one episode turn by turn, two side by side), or ``--export`` a
selection as one self-contained HTML file."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from hscale.errors import HscaleError
from hscale.files import refuse_foreign_file


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
    """Browse every evaluated episode in a local page: filter, read, compare.

    Serve the episodes under RUNS at http://127.0.0.1:PORT until Ctrl-C (read in place,
    nothing copied or written), or write --export FILE (a new file, or an earlier export:
    nothing else is replaced)."""
    from hscale.analysis import Study

    query = {}
    for item in where or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise HscaleError(f"--where {item}: not KEY=VALUE", "e.g. --where arm=k1")
        query[key.strip()] = value.strip()
    if export is None and query:
        raise HscaleError("--where filters an --export", "in the page, pick the filters above "
                                                         "the table")
    if export is not None:
        _refuse_foreign(export)
    sock = None if export is not None else _listen(port)
    began = time.perf_counter()
    study = Study(runs)
    for problem in study.problems:
        print(f"warning: skipped {problem}", file=sys.stderr)
    print(f"{len(study):,} episodes from {len(study.folders)} run folders under {runs} "
          f"({time.perf_counter() - began:.1f} s)", flush=True)
    if export is not None:
        from hscale.analysis import export_html
        from hscale.files import atomic_write_text

        page = export_html(study, query, limit)  # every transcript read before a byte is written
        atomic_write_text(export, page)
        print(f"wrote {export} ({len(study.select(query)):,} episodes match)")
        return
    import uvicorn

    from hscale.analysis import build_view_app

    port = sock.getsockname()[1]
    print(f"open http://127.0.0.1:{port}/ (Ctrl-C stops)", flush=True)
    config = uvicorn.Config(build_view_app(study), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


def _listen(port: int):
    """A socket bound to the loopback at ``port`` (0: a free one) before the study is read:
    a port in use is one line, before any work."""
    import socket

    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        sock.close()
        raise HscaleError(f"--port {port}: cannot listen on 127.0.0.1:{port} "
                          f"({exc.strerror or exc})", "pick another --port (0 picks a free "
                          "one), or stop what holds it") from None
    sock.listen(128)
    return sock


def _refuse_foreign(path: Path) -> None:
    """An --export path must be new, or a file an earlier export wrote."""
    from hscale.analysis import is_export

    refuse_foreign_file(path, is_export, "an hscale view export",
                        "give the name of a new file (nothing was written)",
                        name=f"--export {path}")
