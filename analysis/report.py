"""``hscale report``: tables, figures, report.md and one self-contained report.html.

Every figure is computed and drawn on its own: one that fails is named in the report and the
others are still written. Files are written atomically, so a report folder is never half old.
"""

from __future__ import annotations

import base64
import html
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from hscale.analysis.effect_tables import (
    distance_table,
    effects_table,
    sensitivity_table,
    tests_table,
)
from hscale.analysis.load import Results, load_results
from hscale.analysis.naming import setting_label
from hscale.analysis.plots import FIGURES, NoData, Options, png_bytes
from hscale.analysis.render import Table, fmt, fmt_p, to_html, to_latex, to_markdown
from hscale.analysis.scaling import scaling_table
from hscale.analysis.stats import GROUP
from hscale.analysis.tables import all_tables, measured_ordering
from hscale.analysis.weight_estimates import add_weights
from hscale.errors import HscaleError
from hscale.files import atomic_write_bytes, atomic_write_text, refuse_foreign_folder
from hscale.train.checker_health import checker_health_of


@dataclass
class Report:
    """What was written, and what could not be."""

    out: Path
    tables: list[Table]
    figures: dict[str, bytes] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # nothing to draw
    failed: dict[str, str] = field(default_factory=dict)  # an error while drawing
    problems: list[str] = field(default_factory=list)
    ordering: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings the statistics raised, counted
    checker_warning: str | None = None  # how often the runs' checkers failed (None: never)


REPORT_HEAD = "# hscale report"  # report.md's first line: how a report folder is known

def ordering_statements(ordering: pd.DataFrame, comparisons: pd.DataFrame) -> list[str]:
    """The arm ordering measured by in-space Pass@1, and which gaps the paired tests support."""
    lines = []
    for key, part in ordering.groupby(list(GROUP), sort=False):
        chain = part.iloc[0]["method"] + f" {part.iloc[0]['mean']:.2f}"
        for prev, row in zip(part.itertuples(), part.iloc[1:].itertuples(), strict=False):
            sign = ">" if round(prev.mean, 2) > round(row.mean, 2) else "="
            chain += f" {sign} {row.method} {row.mean:.2f}"
        runs = int(part["n"].max())
        lines.append(f"Ordering measured ({key[0]} {key[1]}, {key[2]}, {key[3]}; in-space "
                     f"Pass@1 %, mean over {runs} runs): {chain}.")
        lines.append(_tested(comparisons, key))
    return lines


def gain_statements(gains: pd.DataFrame, comparisons: pd.DataFrame) -> list[str]:
    """What RL added over the base model: the reference arm's gain per setting with its
    interval, and how many arms gain significantly in each setting."""
    lines = []
    for key, part in gains.groupby(list(GROUP), sort=False):
        ref = _of_group(comparisons, key)
        arm = ref["reference"].iloc[0] if len(ref) else part["method"].iloc[0]
        own = part[part["method"] == arm]
        settings = "; ".join(
            f"{setting_label(r.setting)} {fmt(r.diff, signed=True)} pp [{r.lo:+.2f}, "
            f"{r.hi:+.2f}]" for r in own.itertuples())
        counts = "; ".join(
            f"{setting_label(str(s))} {int((block['p_holm'] < 0.05).sum())} of {len(block)}"
            for s, block in part.groupby("setting", sort=False))
        lines.append(f"RL gain over the base model (no RL) ({key[1]}): {arm} {settings}. "
                     f"Arms whose gain is significant after Holm adjustment: {counts}.")
    return lines


def _of_group(frame: pd.DataFrame, key: tuple) -> pd.DataFrame:
    """The rows of one experiment group (hscale.analysis.stats.GROUP: source, experiment, model,
    algorithm)."""
    for col, value in zip(GROUP, key, strict=True):
        frame = frame[frame[col] == value]
    return frame


def _tested(comparisons: pd.DataFrame, key: tuple) -> str:
    sel = _of_group(comparisons, key)
    sel = sel[sel["setting"] == "in_space"]
    if sel.empty:
        return "No paired comparison was possible (one arm, or no shared tasks)."
    ref = sel["reference"].iloc[0]
    sig = sel[sel["p_holm"] < 0.05]
    if sig.empty:
        return (f"Against {ref}, no arm differs at the 5% level after Holm adjustment "
                f"({len(sel)} paired in-space comparisons over {int(sel['tasks'].max())} tasks).")
    parts = [f"{r.method} {fmt(r.diff, signed=True)} pp (Holm p {fmt_p(r.p_holm)})"
             for r in sig.itertuples()]
    return (f"Against {ref}, differences significant after Holm adjustment: "
            + "; ".join(parts) + ".")


def draw_figures(results: Results, options: Options, report: Report) -> None:
    """Each registered figure alone: NoData is skipped, any other error (an entry that fails
    to import included) is recorded, the rest go on."""
    for name in FIGURES.names():
        try:
            spec = FIGURES.get(name)
            report.figures[name] = png_bytes(spec.draw(spec.data(results, options)))
        except NoData as why:
            report.skipped[name] = str(why)
        except Exception as exc:  # a broken figure must not cost the others
            report.failed[name] = f"{type(exc).__name__}: {exc}"


def build_report(results: Results, out: Path, reference: str | None = None,
                 test: str = "permutation", n_boot: int = 2000, seed: int = 0) -> Report:
    """Compute every table and figure of ``results`` (nothing written yet). Warnings the
    statistics raise (e.g. statsmodels' perfect separation, once per fit) are counted into
    ``notes``, one line per kind, instead of hundreds of lines on the terminal."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables, cells, comparisons = all_tables(results, reference, test, n_boot, seed)
        tables += [effects_table(results, n_boot, seed), tests_table(results),
                   distance_table(results, n_boot, seed),
                   sensitivity_table(results, n_boot, seed),
                   scaling_table(results, n_boot, seed)]
        report = Report(out=out, tables=tables, problems=list(results.problems))
        report.ordering = ordering_statements(measured_ordering(cells), comparisons)
        gains = next((t.data for t in tables if t.name == "rl_gain"), None)
        if gains is not None:
            report.ordering += gain_statements(gains, comparisons)
        draw_figures(results, Options(reference, n_boot, seed), report)
    counts = Counter(w.category.__name__ for w in caught)
    first = {}
    for w in caught:
        first.setdefault(w.category.__name__, str(w.message).strip().splitlines()[0][:160])
    report.notes = [f"{name} x{count} (first: {first[name]})" for name, count in counts.items()]
    report.checker_warning = checker_health_of(results.episodes, results.train).line()
    return report


def _summary_md(results: Results, report: Report) -> list[str]:
    ep = results.episodes
    lines = [f"Runs folder: `{results.root}`  ", f"Runs: {len(results.runs)}; evaluated "
             f"episodes: {len(ep):,}; arms: {ep['method'].nunique()}; benchmarks: "
             f"{', '.join(map(str, ep['benchmark'].unique()))}  ", _greedy_note(results),
             _error_note(ep), ""]
    lines += ["## Ordering measured", ""] + [f"{s}  " for s in report.ordering] + [""]
    if report.problems:
        lines += ["## Problems with the run files", ""] + [f"- {p}" for p in report.problems]
        lines += [""]
    if report.failed or report.skipped:
        lines += ["## Figures not drawn", ""]
        lines += [f"- {n}: failed ({why})" for n, why in report.failed.items()]
        lines += [f"- {n}: skipped ({why})" for n, why in report.skipped.items()] + [""]
    return lines


def _error_note(episodes: pd.DataFrame) -> str:
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
            "`hscale tasks check` finds such tasks.  ")


def _greedy_note(results: Results) -> str:
    if not len(results.greedy):
        return ""
    return (f"{len(results.greedy):,} greedy-decoding episodes are kept apart "
            "(`Results.greedy`): tables and tests use the sampled runs.  ")


def report_markdown(results: Results, report: Report) -> str:
    lines = [REPORT_HEAD, ""] + _summary_md(results, report) + ["## Tables", ""]
    lines += [to_markdown(t) for t in report.tables if not t.frame.empty]
    lines += ["## Figures", ""]
    lines += [f"![{name}]({name}.png)\n" for name in report.figures]
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1280px;color:#222;
padding:0 2em}
.wide{overflow-x:auto}table.results{border-collapse:collapse;font-size:12px;margin:.5em 0}
table.results td,table.results th{padding:2px 8px;border-bottom:1px solid #ddd;
text-align:right;white-space:nowrap}
table.results th{border-bottom:2px solid #333}.note{font-size:12px;color:#555}
.problem{color:#a40000}img{max-width:100%;border:1px solid #eee;margin:.5em 0}"""


def report_html(results: Results, report: Report) -> str:
    """One file with every table and figure (PNG as base64): mail it, open it offline."""
    esc = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>hscale report</title>"
             f"<style>{_CSS}</style></head><body><h1>hscale report</h1>",
             f"<p>Runs folder: <code>{esc(str(results.root))}</code>; {len(results.runs)} runs, "
             f"{len(results.episodes):,} evaluated episodes; written "
             f"{datetime.now(UTC).isoformat(timespec='seconds')}</p>",
             f"<p>{esc(_greedy_note(results).replace('`', ''))}</p>",
             "<h2>Ordering measured</h2>"] + [f"<p>{esc(s)}</p>" for s in report.ordering]
    if report.problems:
        parts += ["<h2>Problems with the run files</h2><ul>"]
        parts += [f"<li class='problem'>{esc(p)}</li>" for p in report.problems] + ["</ul>"]
    if report.failed or report.skipped:
        parts += ["<h2>Figures not drawn</h2><ul>"]
        parts += [f"<li class='problem'>{esc(n)}: failed ({esc(w)})</li>"
                  for n, w in report.failed.items()]
        parts += [f"<li>{esc(n)}: skipped ({esc(w)})</li>" for n, w in report.skipped.items()]
        parts += ["</ul>"]
    parts += ["<h2>Tables</h2>"] + [to_html(t) for t in report.tables if not t.frame.empty]
    parts += ["<h2>Figures</h2>"]
    for name, png in report.figures.items():
        data = base64.b64encode(png).decode("ascii")
        title = FIGURES.get(name).title if name in FIGURES else name
        parts.append(f"<h3>{esc(title)}</h3>"
                     f"<img alt='{esc(name)}' src='data:image/png;base64,{data}'>")
    return "\n".join(parts + ["</body></html>"])


def save_report(results: Results, report: Report) -> None:
    out = report.out
    out.mkdir(parents=True, exist_ok=True)
    shown = [t for t in report.tables if not t.frame.empty]
    atomic_write_text(out / "tables.md", "\n".join(to_markdown(t) for t in shown))
    atomic_write_text(out / "tables.tex", "% needs \\usepackage{booktabs,graphicx}\n\n"
                      + "\n".join(to_latex(t) for t in shown))
    for table in report.tables:
        atomic_write_text(out / f"{table.name}.csv", table.data.to_csv(index=False))
    for name, png in report.figures.items():
        atomic_write_bytes(out / f"{name}.png", png)
    atomic_write_text(out / "report.md", report_markdown(results, report))
    atomic_write_text(out / "report.html", report_html(results, report))


def check_report_target(target: Path) -> None:
    """Refuse a report folder that would overwrite what is not a report's: a file, or a
    folder that is neither empty nor an earlier hscale report (its report.md)."""
    refuse_foreign_folder(target, _is_report, "an hscale report",
                          "give --out a new or empty folder, or an earlier report's (nothing "
                          "was changed)", name=f"--out {target}")


def _is_report(folder: Path) -> bool:
    if not (folder / "report.md").is_file():  # never open a FIFO there
        return False
    try:
        with open(folder / "report.md", encoding="utf-8", errors="replace") as handle:
            return handle.readline().startswith(REPORT_HEAD)
    except OSError:
        return False


def write_report(run_dir: str | Path, out: str | Path | None = None,
                 reference: str | None = None, external: Sequence[str | Path] = (),
                 reported: bool | str | Path = True, strict: bool = False,
                 test: str = "permutation", n_boot: int = 2000, seed: int = 0) -> Report:
    """Load ``run_dir``, compute everything, write it under ``out`` (default RUN_DIR/report)."""
    run_dir = Path(run_dir)
    results = load_results(run_dir, external=external, reported=reported)
    if strict and results.problems:
        raise HscaleError(f"{len(results.problems)} problems with the run files: "
                          + "; ".join(results.problems[:5])
                          + (" ..." if len(results.problems) > 5 else ""),
                          "fix or remove those runs, or report without --strict")
    methods = set(results.episodes["method"].astype(str))
    if reference is not None and reference not in methods:
        raise HscaleError(f"reference arm {reference!r} is not among the results",
                          f"choose one of {', '.join(sorted(methods))}")
    target = Path(out) if out is not None else (run_dir if run_dir.is_dir()
                                                else run_dir.parent) / "report"
    check_report_target(target)
    report = build_report(results, target, reference, test, n_boot, seed)
    add_weights(results, report)  # components' weights from main effects, weights.yaml
    save_report(results, report)
    return report
