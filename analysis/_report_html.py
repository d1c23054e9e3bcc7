"""report.html and report.md in the order a results section reads: what was run, the headline
figure, one sentence per comparison; then the other figures; then every table once, folded,
measured rows apart from the papers' numbers, its CSV beside it.

Measured tables hold measured (and external) rows only, without a column that is empty for
every one of them; the papers' rows of each table sit in a table of their own. Diagnostics
that need a minimum sample (Wald tests, scaling fits) say so instead of printing numbers that
mean nothing at the size run.
"""

from __future__ import annotations

import base64
import html
from dataclasses import replace
from datetime import UTC, datetime

import pandas as pd

from hscale.analysis._load import Results
from hscale.analysis._render import MISSING, Table, to_html, to_markdown
from hscale.analysis._report_data import Report
from hscale.analysis._view_app import PORT as VIEW_PORT
from hscale.analysis._view_app import view_link

MIN_TASKS = 20  # distinct evaluated tasks below which the diagnostics below are not shown
DIAGNOSTICS = ("component_tests", "scaling")
FIRST = "headline"  # the forest plot: the first screen's figure
METHODS = ("How these numbers are made: each training run (arm x seed) is one replicate; an "
           "arm's Pass@1 is the mean of its runs, a difference's variance each arm's own run "
           "variance over its runs plus the arms' interactions with the tasks and sampled "
           "harnesses they share (Welch's degrees of freedom); the intervals are simultaneous "
           "95% over each family of comparisons (max-t over its correlated members), and a "
           "comparison is resolved when its interval leaves out 0. The study's confirmatory "
           "hypotheses, where its spec declares them, are tested first and apart "
           "(hypotheses.csv); everything else is exploratory. The model is in "
           "hscale.analysis._stats, its calibration on planted studies of every kind in "
           "benchmarks/calibration.py.")

_CSS = """body{font-family:system-ui,sans-serif;margin:1.2em auto;max-width:1280px;color:#222;
padding:0 2em}h1{margin:.2em 0}
.summary{display:flex;flex-wrap:wrap;gap:.3em 1.6em;font-size:14px;margin:.4em 0 .6em;
padding:0;list-style:none}.summary b{color:#555;font-weight:600}
.answer{font-size:15px;line-height:1.4;margin:.3em 0 .4em;max-width:1180px}
.answer p{margin:.2em 0}.methods{font-size:12px;color:#555;margin:.2em 0 1em}
.headline img{max-height:52vh;border:none}.verdicts{font-size:14px;margin:.3em 0 1em}
.verdicts li{margin:.15em 0}.w-reproduces{color:#1a7f37}.w-opposite{color:#c0392b}
.w-not{color:#666}
.wide{overflow-x:auto}table.results{border-collapse:collapse;font-size:12px;margin:.5em 0}
table.results td,table.results th{padding:2px 8px;border-bottom:1px solid #ddd;
text-align:right;white-space:nowrap}
table.results th{border-bottom:2px solid #333}.note{font-size:12px;color:#555}
details{margin:.3em 0}summary{cursor:pointer;font-weight:600}summary a{font-weight:400;
font-size:12px;margin-left:1em}
.problem{color:#a40000}img{max-width:100%;border:1px solid #eee;margin:.5em 0}"""


def split_rows(table: Table) -> tuple[Table | None, Table | None]:
    """The table's measured rows and its reported rows, each without the columns that are
    empty for every one of its rows (None for a part with no rows)."""
    frame = table.frame
    if frame.empty:
        return None, None
    if "source" not in frame.columns:
        return replace(table, frame=_drop_empty(frame)), None
    reported = frame["source"].astype(str) == "reported"
    mine = frame[~reported]
    theirs = frame[reported]
    about_papers = [n for n in table.notes if n.startswith("reported ")]
    measured = replace(table, frame=_drop_empty(mine),
                       notes=[n for n in table.notes if n not in about_papers]
                       ) if len(mine) else None
    papers = replace(table, name=f"{table.name}-reported", title=f"{table.title}: as reported",
                     frame=_drop_empty(theirs), notes=about_papers) if len(theirs) else None
    return measured, papers


def _drop_empty(frame: pd.DataFrame) -> pd.DataFrame:
    empty = frame.astype(object).fillna(MISSING).astype(str).isin([MISSING, "", "nan"]).all()
    return frame.loc[:, ~empty].reset_index(drop=True)


def too_few_tasks(results: Results) -> int | None:
    """The number of distinct evaluated tasks when it is below :data:`MIN_TASKS`."""
    ep = results.episodes
    n = int(ep["task_id"].nunique()) if len(ep) else 0
    return n if n < MIN_TASKS else None


def shown_tables(results: Results, report: Report) -> list[tuple[Table, Table | None]]:
    """(measured part, reported part) of every non-empty table, diagnostics replaced by a
    note when the sample is too small for them."""
    few = too_few_tasks(results)
    out = []
    for table in report.tables:
        if table.name in DIAGNOSTICS and few is not None and not table.frame.empty:
            note = (f"Too few tasks to test: {few} evaluated tasks (these statistics need at "
                    f"least {MIN_TASKS}); the numbers are in {table.name}.csv.")
            out.append((replace(table, frame=pd.DataFrame({"": [note]}), notes=[]), None))
            continue
        measured, papers = split_rows(table)
        if measured is not None or papers is not None:
            out.append((measured, papers))
    return out


# no script, nothing fetched: the figures are data URIs, the style inline (a run folder's
# values are escaped; this is the second line of defence)
POLICY = ("<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; img-src data:\">")


def _img(name: str, png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f"<img id='fig-{html.escape(name)}' alt='{html.escape(alt)}' " \
           f"src='data:image/png;base64,{data}'>"


def _folded(table: Table, kind: str, link=None) -> str:
    csv = html.escape(table.name.removesuffix("-reported"))
    return (f"<details class='{kind}'><summary>{html.escape(table.title)}"
            f"<a href='{csv}.csv'>{csv}.csv</a></summary>{to_html(table, link)}</details>")


def report_html(results: Results, report: Report) -> str:
    """One self-contained file (PNG as base64): mail it, open it offline."""
    from hscale.analysis._plots import FIGURES

    esc = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'>{POLICY}"
             f"<title>hscale report</title><style>{_CSS}</style></head><body>"
             "<h1>hscale report</h1>",
             "<ul class='summary' id='run-summary'>"]
    if report.summary is not None:
        parts += [f"<li><b>{esc(k)}</b> {esc(v)}</li>" for k, v in report.summary.lines()]
    parts += [f"<li><b>written</b> {datetime.now(UTC).isoformat(timespec='seconds')}</li>",
              "</ul>", *_provenance_html(report)]
    if report.answer:
        parts.append("<div class='answer' id='answer'>"
                     + "".join(f"<p>{esc(s)}</p>" for s in report.answer) + "</div>")
    if FIRST in report.figures:
        parts.append(f"<div class='headline'>{_img(FIRST, report.figures[FIRST], FIRST)}</div>")
    parts.append("<ul class='verdicts' id='verdicts'>")
    parts += [f"<li class='w-{esc(v.word.split()[0])}'>{esc(v.sentence)}</li>"
              for v in report.verdicts] or ["<li>No paired comparison was possible (one arm, "
                                            "or no shared tasks).</li>"]
    parts.append("</ul>")
    if report.verdicts:
        parts.append(f"<p class='methods' id='methods'>{esc(METHODS)}</p>")
    parts += _warnings_html(results, report)
    parts += ["<h2>Figures</h2>"] if any(name != FIRST for name in report.figures) else []
    for name, png in report.figures.items():
        if name != FIRST:
            title = FIGURES.get(name).title if name in FIGURES else name
            parts.append(f"<h3>{esc(title)}</h3>{_img(name, png, name)}")
    parts.append("<h2>Tables</h2><p class='note'>Each table once, folded; its CSV beside "
                 "it. Measured rows first; the papers' numbers after them. A row's "
                 "<i>episodes</i> link opens its episodes in <code>hscale view</code> (start "
                 f"it first: <code>hscale view {esc(str(results.root or 'RUNS'))}"
                 + (f" --port {report.view_port}" if report.view_port != VIEW_PORT else "")
                 + "</code>).</p>")
    shown = shown_tables(results, report)
    link = view_link(results.episodes, report.view_port) if len(results.episodes) else None
    parts += [_folded(m, "measured", link) for m, _ in shown if m is not None]
    reported = [_folded(p, "reported") for _, p in shown if p is not None]
    parts += ["<h2>Reported in the papers</h2>", *reported] if reported else []
    if report.ordering:
        parts += ["<h2>Ordering measured</h2><p class='note'>Descriptive: which of these gaps "
                  "hold is the answer at the top, read off the simultaneous intervals.</p>"]
        parts += [f"<p>{esc(s)}</p>" for s in report.ordering]
    return "\n".join(parts + ["</body></html>"])


def provenance_lines(report: Report) -> tuple[list[str], list[str]]:
    """(what produced the runs and this report, the warnings of runs made under other
    code)."""
    said = [report.provenance.line] if report.provenance.line else []
    if report.made_by is not None:
        said.append(f"This report: {report.made_by.line()}, "
                    f"{report.made_by.time}.")
    return said, list(report.provenance.warnings)


def _provenance_html(report: Report) -> list[str]:
    said, warned = provenance_lines(report)
    out = [f"<p class='note' id='provenance'>{'<br>'.join(html.escape(s) for s in said)}</p>"
           ] if said else []
    return out + [f"<p class='problem provenance-warning'>{html.escape(w)}</p>" for w in warned]


def error_note(episodes: pd.DataFrame) -> str:
    """Episodes that scored 0 because something outside the policy failed (a reward script
    that crashed, hung or printed no reward), counted by kind."""
    if "error" not in episodes.columns:
        return ""
    errors = episodes["error"].fillna("").astype(str).str.extract(r"(checker: [^;(]*)")[0]
    errors = errors.dropna().str.strip()
    if errors.empty:
        return ""
    kinds = errors.value_counts()
    listed = "; ".join(f"{kind} x{count}" for kind, count in kinds.head(5).items())
    return (f"**{len(errors):,} episodes scored 0 because their checker failed** ({listed}); "
            "`hscale tasks check` finds such tasks.")


def greedy_note(results: Results) -> str:
    if not len(results.greedy):
        return ""
    return (f"{len(results.greedy):,} greedy-decoding episodes are kept apart "
            "(`Results.greedy`): tables and tests use the sampled runs.")


def _warnings_html(results: Results, report: Report) -> list[str]:
    esc, out = html.escape, []
    if report.checker_warning:
        out.append(f"<p class='problem'>{esc(report.checker_warning)}</p>")
    errors = error_note(results.episodes).replace("**", "").replace("`", "")
    if errors:
        out.append(f"<p class='problem'>{esc(errors)}</p>")
    if report.problems:
        out += ["<details open><summary class='problem'>Problems with the run files "
                f"({len(report.problems)})</summary><ul>"]
        out += [f"<li class='problem'>{esc(p)}</li>" for p in report.problems] + ["</ul>",
                                                                                  "</details>"]
    if report.failed or report.skipped:
        out += ["<details><summary>Figures not drawn</summary><ul>"]
        out += [f"<li class='problem'>{esc(n)}: failed ({esc(w)})</li>"
                for n, w in report.failed.items()]
        out += [f"<li>{esc(n)}: skipped ({esc(w)})</li>" for n, w in report.skipped.items()]
        out += ["</ul></details>"]
    greedy = greedy_note(results).replace("`", "")
    return out + ([f"<p class='note'>{esc(greedy)}</p>"] if greedy else [])


def report_markdown(results: Results, report: Report, head: str) -> str:
    """report.md in the HTML's order (figures as the PNG files beside it)."""
    lines = [head, ""]
    if report.summary is not None:
        lines += [f"**{k}** {v}  " for k, v in report.summary.lines()] + [""]
    said, warned = provenance_lines(report)
    lines += [f"{s}  " for s in said] + [f"**Warning: {w}**  " for w in warned]
    lines += [""] if said or warned else []
    lines += [" ".join(report.answer), ""] if report.answer else []
    if FIRST in report.figures:
        lines += [f"![{FIRST}]({FIRST}.png)", ""]
    lines += [f"- {v.sentence}" for v in report.verdicts] + [""]
    lines += [METHODS, ""] if report.verdicts else []
    notes = [report.checker_warning and f"**{report.checker_warning}**",
             error_note(results.episodes), greedy_note(results)]
    lines += [f"{n}  " for n in notes if n] + [""]
    if report.problems:
        lines += ["## Problems with the run files", ""] + [f"- {p}" for p in report.problems]
        lines += [""]
    if report.failed or report.skipped:
        lines += ["## Figures not drawn", ""]
        lines += [f"- {n}: failed ({why})" for n, why in report.failed.items()]
        lines += [f"- {n}: skipped ({why})" for n, why in report.skipped.items()] + [""]
    lines += ["## Figures", ""] + [f"![{name}]({name}.png)\n" for name in report.figures
                                   if name != FIRST]
    shown = shown_tables(results, report)
    lines += ["## Tables", ""] + [to_markdown(m) for m, _ in shown if m is not None]
    reported = [to_markdown(p) for _, p in shown if p is not None]
    lines += ["## Reported in the papers", "", *reported] if reported else []
    lines += ["## Ordering measured", ""] + [f"{s}  " for s in report.ordering] \
        if report.ordering else []
    return "\n".join(lines)
