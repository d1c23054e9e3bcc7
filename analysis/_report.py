"""``hscale report``: tables, figures, report.md and one self-contained report.html, the answer
first (hscale.analysis._headline: what was run, the forest plot of the headline comparisons,
a sentence each; hscale.analysis._report_html: the order and the folding), and summary.png /
summary.pdf, the same on one page.

Every figure is computed and drawn on its own: one that fails is named in the report and the
others are still written. Files are written atomically, so a report folder is never half old.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from hscale.analysis._behaviour import behaviour_table
from hscale.analysis._effect_tables import (
    distance_table,
    effects_table,
    sensitivity_table,
    tests_table,
)
from hscale.analysis._efficiency import efficiency_table, harness_cost_table
from hscale.analysis._headline import (
    answer,
    forest_frame,
    headline,
    plot_forest,
    run_summary,
    summary_page,
)
from hscale.analysis._hypotheses import answer_hypotheses, outcomes_frame, studies_of
from hscale.analysis._load import Results, load_results
from hscale.analysis._naming import setting_label
from hscale.analysis._plots import FIGURES, NoData, Options, pdf_bytes, png_bytes
from hscale.analysis._pool_report import pool_tables, routing_table
from hscale.analysis._provenance import study_provenance
from hscale.analysis._render import fmt, fmt_interval, to_latex, to_markdown
from hscale.analysis._report_data import Report
from hscale.analysis._report_html import report_html, report_markdown
from hscale.analysis._scaling import scaling_table
from hscale.analysis._stats import GROUP
from hscale.analysis._tables import all_tables, measured_ordering
from hscale.analysis._verdicts import ALPHA
from hscale.analysis._weight_estimates import add_weights
from hscale.contracts import capture_provenance, checker_health_of
from hscale.errors import HscaleError
from hscale.files import atomic_write_bytes, atomic_write_text, refuse_foreign_folder

REPORT_HEAD = "# hscale report"  # report.md's first line: how a report folder is known

def ordering_statements(ordering: pd.DataFrame) -> list[str]:
    """The arm ordering measured by in-space Pass@1 (descriptive: which of its gaps hold is
    the headline's answer, read off the simultaneous intervals)."""
    lines = []
    for key, part in ordering.groupby(list(GROUP), sort=False):
        chain = part.iloc[0]["method"] + f" {part.iloc[0]['mean']:.2f}"
        for prev, row in zip(part.itertuples(), part.iloc[1:].itertuples(), strict=False):
            sign = ">" if round(prev.mean, 2) > round(row.mean, 2) else "="
            chain += f" {sign} {row.method} {row.mean:.2f}"
        runs = int(part["n"].max())
        lines.append(f"Ordering measured ({key[0]} {key[1]}, {key[2]}, {key[3]}; in-space "
                     f"Pass@1 %, mean over {runs} runs): {chain}.")
    return lines


def gain_statements(gains: pd.DataFrame, comparisons: pd.DataFrame) -> list[str]:
    """What RL added over the base model: the reference arm's gain per setting with its
    simultaneous interval, and how many arms' gains are resolved in each setting."""
    lines = []
    for key, part in gains.groupby(list(GROUP), sort=False):
        ref = _of_group(comparisons, key)
        arm = ref["reference"].iloc[0] if len(ref) else part["method"].iloc[0]
        own = part[part["method"] == arm]
        settings = "; ".join(
            f"{setting_label(r.setting)} {fmt(r.diff, signed=True)} pp "
            f"{fmt_interval(r.lo, r.hi)}" for r in own.itertuples())
        counts = "; ".join(
            f"{setting_label(str(s))} {_named(block[block['p_adj'] < ALPHA]['method'])} of "
            f"{len(block)}" for s, block in part.groupby("setting", sort=False))
        lines.append(f"RL gain over the base model (no RL) ({key[1]}): {arm} {settings} "
                     f"(simultaneous 95% over {len(part)}). Arms whose gain is resolved: "
                     f"{counts}.")
    return lines


def _named(methods: pd.Series) -> str:
    """'2 (k1, repeat-2)', or '0'."""
    names = list(dict.fromkeys(str(m) for m in methods))
    return f"{len(names)} ({', '.join(names)})" if names else "0"


def _of_group(frame: pd.DataFrame, key: tuple) -> pd.DataFrame:
    """The rows of one experiment group (hscale.analysis._stats.GROUP: source, experiment, model,
    algorithm)."""
    for col, value in zip(GROUP, key, strict=True):
        frame = frame[frame[col] == value]
    return frame


# library warnings that say something about the data, in the reader's words
EXPLAINED = {
    "PerfectSeparationWarning": "{count} logistic fits of the component tests met perfect "
                                "separation (a level whose every episode succeeded, or every "
                                "one failed): their Wald tests say nothing at this size",
}


def warning_notes(caught: list[warnings.WarningMessage]) -> list[str]:
    """One line a kind of warning, however often it was raised: what it means where hscale
    knows, else its count and first message."""
    counts = Counter(w.category.__name__ for w in caught)
    first: dict[str, str] = {}
    for w in caught:
        first.setdefault(w.category.__name__, str(w.message).strip().splitlines()[0][:160])
    return [EXPLAINED[name].format(count=count) if name in EXPLAINED
            else f"{name} x{count} (first: {first[name]})" for name, count in counts.items()]


def draw_figures(results: Results, options: Options, report: Report) -> None:
    """Each registered figure alone: NoData is skipped, any other error (an entry that fails
    to import included) is recorded, the rest go on."""
    for name in FIGURES.names():
        def draw(name: str = name) -> bytes:
            spec = FIGURES.get(name)
            return png_bytes(spec.draw(spec.data(results, options)))

        png = _attempt(report, name, draw)
        if png is not None:
            report.figures[name] = png


def _attempt(report: Report, name: str, draw):
    """``draw()``, or None with the reason in the report: NoData is skipped, any other error
    failed (a broken figure must not cost the others)."""
    try:
        return draw()
    except NoData as why:
        report.skipped[name] = str(why)
    except Exception as exc:
        report.failed[name] = f"{type(exc).__name__}: {exc}"
    return None


def draw_headline(results: Results, comparisons: pd.DataFrame, gains: pd.DataFrame | None,
                  reported: pd.DataFrame, report: Report) -> None:
    """The first screen: the run summary, the study's confirmatory hypotheses (study.json)
    answered first, then the exploratory verdicts, the forest plot and the one-page
    summary; a figure that fails is named like any other, the rest go on."""
    report.summary = run_summary(results)
    report.verdicts = headline(comparisons, gains, reported)
    confirm, report.hypotheses = answer_hypotheses(results, studies_of(results))
    rest = answer(report.verdicts, report.paper_note)
    if confirm:
        rest = [f"Exploratory (every comparison, outside the confirmatory family): {rest[0]}",
                *rest[1:]]
    report.answer = [*confirm, *rest]
    frame = forest_frame(report.verdicts)
    forest = _attempt(report, "headline", lambda: png_bytes(plot_forest(frame)))
    if forest is not None:
        report.figures["headline"] = forest
    page = _attempt(report, "summary",
                    lambda: summary_page(report.summary, frame, report.verdicts, report.answer))
    if page is not None:
        report.pages = {"summary.png": png_bytes(page, dpi=150), "summary.pdf": pdf_bytes(page)}


def build_report(results: Results, out: Path, reference: str | None = None,
                 n_boot: int = 2000, seed: int = 0) -> Report:
    """Compute every table and figure of ``results`` (nothing written yet). Warnings the
    statistics raise (e.g. statsmodels' perfect separation, once per fit) are counted into
    ``notes``, one line per kind, instead of hundreds of lines on the terminal."""
    if results.episodes.empty:  # a pool evaluated alone (hscale evaluate --harnesses pool.json)
        report = Report(out=out, tables=pool_tables(results), problems=list(results.problems))
        report.summary = run_summary(results)
        ranking = FIGURES.get("pool_ranking")
        png = _attempt(report, "pool_ranking", lambda: png_bytes(
            ranking.draw(ranking.data(results, Options(reference, n_boot, seed)))))
        if png is not None:
            report.figures["pool_ranking"] = png
        return with_provenance(results, report)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tables, cells, comparisons = all_tables(results, reference)
        tables += [effects_table(results, n_boot, seed), tests_table(results),
                   distance_table(results, n_boot, seed),
                   sensitivity_table(results, n_boot, seed),
                   scaling_table(results, n_boot, seed),
                   behaviour_table(results, n_boot, seed),
                   efficiency_table(results, n_boot, seed),
                   harness_cost_table(results, n_boot, seed), *pool_tables(results),
                   *routing_table(results)]
        report = Report(out=out, tables=tables, problems=list(results.problems))
        report.ordering = ordering_statements(measured_ordering(cells))
        gains = next((t.data for t in tables if t.name == "rl_gain"), None)
        if gains is not None:
            report.ordering += gain_statements(gains, comparisons)
        report.paper_note = cells.paper_note
        draw_headline(results, comparisons, gains, cells.comparable, report)
        draw_figures(results, Options(reference, n_boot, seed), report)
    report.notes = warning_notes(caught)
    evaluated = pd.concat([results.episodes, results.greedy], ignore_index=True) \
        if len(results.greedy) else results.episodes  # every evaluated episode, as run says
    report.checker_warning = checker_health_of(evaluated, results.train).line()
    return with_provenance(results, report)


def with_provenance(results: Results, report: Report) -> Report:
    """What produced the runs (a line; a warning naming the runs where they mix code
    revisions or result-shaping packages; damaged provenance lines as problems), and this
    report's own provenance."""
    report.provenance = study_provenance(results.runs, results.root)
    report.problems += report.provenance.problems
    report.made_by = capture_provenance("report")
    return report


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
    for name, page in report.pages.items():
        atomic_write_bytes(out / name, page)
    if report.hypotheses:
        atomic_write_text(out / "hypotheses.csv",
                          outcomes_frame(report.hypotheses).to_csv(index=False))
    atomic_write_text(out / "provenance.json", provenance_json(report))
    atomic_write_text(out / "report.md", report_markdown(results, report, REPORT_HEAD))
    atomic_write_text(out / "report.html", report_html(results, report))


def provenance_json(report: Report) -> str:
    """provenance.json: this report's provenance and every run's records it read."""
    made = report.made_by.model_dump(mode="json") if report.made_by is not None else None
    runs = {name: [r.model_dump(mode="json") for r in records]
            for name, records in report.provenance.runs.items()}
    return json.dumps({"report": made, "line": report.provenance.line,
                       "warnings": report.provenance.warnings, "runs": runs}, indent=1) + "\n"


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
                 n_boot: int = 2000, seed: int = 0, view_port: int = 8777) -> Report:
    """Load ``run_dir``, compute everything, write it under ``out`` (default RUN_DIR/report);
    its episodes links point at ``hscale view`` on ``view_port``."""
    run_dir = Path(run_dir)
    results = load_results(run_dir, external=external, reported=reported)
    if strict and results.problems:
        raise HscaleError(f"{len(results.problems)} problems with the run files: "
                          + "; ".join(results.problems[:5])
                          + (" ..." if len(results.problems) > 5 else ""),
                          "fix or remove those runs, or report without --strict")
    methods = set(results.episodes["method"].astype(str))
    if reference is None:  # the one the spec names (study.json), when the results hold it
        named = {s.reference for s in studies_of(results).values() if s.reference}
        reference = next(iter(named)) if len(named) == 1 and named <= methods else None
    if reference is not None and reference not in methods:
        raise HscaleError(f"reference arm {reference!r} is not among the results",
                          f"choose one of {', '.join(sorted(methods))}")
    target = Path(out) if out is not None else (run_dir if run_dir.is_dir()
                                                else run_dir.parent) / "report"
    check_report_target(target)
    report = build_report(results, target, reference, n_boot, seed)
    report.view_port = view_port
    add_weights(results, report)  # components' weights from main effects, weights.yaml
    save_report(results, report)
    return report
