"""The report: every file written, one failing figure spares the others, bad runs named."""

from __future__ import annotations

import base64
import html
import re

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from hscale.analysis import (
    FIGURES,
    NoData,
    Options,
    Report,
    Results,
    compute_cells,
    demo_like,
    load_results,
    measured_ordering,
    synthetic_episodes,
    write_report,
)

# internal: tests the figure registry and rendering
from hscale.analysis import _plots as plots

# internal: tests the report's figure and warning steps
from hscale.analysis import _report as report

# internal: tests the reported-results reader's helpers
from hscale.analysis._external import empty_summary

# internal: tests the loader's tidy step
from hscale.analysis._load import tidy

# internal: tests the figure registry and rendering
from hscale.analysis._plots import FigureSpec, png_bytes

# internal: tests the report's figure and warning steps
from hscale.analysis._report import draw_figures
from hscale.cli.report import report_cmd
from hscale.errors import HscaleError
from hscale.registry import Registry


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    return demo_like(tmp_path_factory.mktemp("runs"), tasks=6, seeds=(0, 1), runs=2, steps=8)


@pytest.fixture(scope="module")
def written(demo_runs, tmp_path_factory):
    return write_report(demo_runs, tmp_path_factory.mktemp("report"), n_boot=200)


def test_writes_tables_figures_markdown_and_html(written):
    out = written.out
    names = {p.name for p in out.iterdir()}
    for table in ("settings", "out_of_space", "ablation", "base_harness", "harness_s",
                  "comparisons", "effects", "component_tests", "distance"):
        assert f"{table}.csv" in names
    for name in FIGURES.names():
        assert f"{name}.png" in names
        assert (out / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {"tables.md", "tables.tex", "report.md", "report.html"} <= names
    assert "\\toprule" in (out / "tables.tex").read_text()
    assert not written.failed and not written.skipped


def test_html_is_self_contained(written):
    page = (written.out / "report.html").read_text()
    images = re.findall(r"src='data:image/png;base64,([^']+)'", page)
    assert len(images) == len(FIGURES) + 1  # and the headline forest plot
    assert all(base64.b64decode(i)[:4] == b"\x89PNG" for i in images)
    # nothing fetched from elsewhere; the rows' links go to hscale view on the loopback
    assert not re.search(r"(src|href)=['\"]?(https?:(?!//127\.0\.0\.1:8777/\?)|//|"
                         r"[a-z_]+\.png)", page)
    assert "Table 1" in page and "Ordering measured" in page
    assert page.count("class='view' href='http://127.0.0.1:8777/?") > 10


def test_the_answer_comes_first_in_both_the_page_and_the_markdown(written):
    """What was run, the headline figure, a sentence a comparison, the figures, the measured
    tables folded, the papers' numbers apart: in that order in report.html and report.md;
    summary.png and summary.pdf hold the same on one page."""
    out = written.out
    assert (out / "summary.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "summary.pdf").read_bytes()[:5] == b"%PDF-"
    page = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    sentence = written.verdicts[0].sentence
    marks = [("id='run-summary'", "**arms**"), ("fig-headline", "](headline.png)"),
             (sentence.replace("'", "&#x27;"), sentence), ("<h2>Figures", "## Figures"),
             ("<h2>Tables", "## Tables"), ("<h2>Reported in the papers",
                                            "## Reported in the papers")]
    for text, marks_of in ((page, [m[0] for m in marks]), (md, [m[1] for m in marks])):
        at = [text.index(m) for m in marks_of]
        assert at == sorted(at), marks_of
    tables = page.split("<h2>Tables", 1)[1]
    measured = tables.split("<h2>Reported in the papers", 1)[0]
    assert "<details class='measured'>" in measured and ">reported<" not in measured
    assert "settings.csv" in measured  # each table's CSV beside it
    # 6 tasks: the Wald tests and the scaling fits are not shown as numbers
    assert measured.count("Too few tasks to test: 6 evaluated tasks") == 2


def test_report_states_the_ordering_it_measured(demo_runs, written):
    cells = compute_cells(load_results(demo_runs))
    order = measured_ordering(cells)
    chain = " ".join(f"{m} {v:.2f}" for m, v in zip(order["method"], order["mean"], strict=True))
    statement = written.ordering[0]
    assert statement.startswith("Ordering measured")
    assert [w for w in statement.split(": ", 1)[1].rstrip(".").split() if w not in "=>"] == \
        chain.split()
    md = (written.out / "report.md").read_text()
    assert statement in md


def test_one_failing_figure_does_not_stop_the_others(demo_runs, tmp_path, monkeypatch):
    def broken(data):
        raise RuntimeError("the pen ran dry")

    def nothing(results, options):
        raise NoData("no such metric")

    specs: Registry[FigureSpec] = Registry("figure")
    specs.register("broken", FigureSpec("broken", "A figure that fails", plots.heatmap_data,
                                        broken))
    specs.register("empty", FigureSpec("empty", "A figure with no data", nothing,
                                       plots.plot_heatmap))
    specs.register("gone", "hscale.analysis._plots:no_such_figure")  # fails on first lookup
    specs.register("heatmap", FIGURES.get("heatmap"))
    monkeypatch.setattr(report, "FIGURES", specs)
    done = write_report(demo_runs, tmp_path / "r", n_boot=100)
    assert set(done.failed) == {"broken", "gone"}
    assert done.failed["broken"] == "RuntimeError: the pen ran dry"
    assert done.failed["gone"].startswith("AttributeError")
    assert done.skipped == {"empty": "no such metric"}
    assert set(done.figures) == {"headline", "heatmap"}
    assert (tmp_path / "r" / "heatmap.png").is_file()
    md = (tmp_path / "r" / "report.md").read_text()
    assert "broken: failed (RuntimeError: the pen ran dry)" in md
    assert "the pen ran dry" in (tmp_path / "r" / "report.html").read_text()


def test_a_failing_headline_is_named_and_the_rest_is_written(demo_runs, tmp_path,
                                                            monkeypatch):
    # internal: tests the report's figure and warning steps
    import hscale.analysis._report as module

    def broken(frame, fig=None):
        raise RuntimeError("no ink")

    monkeypatch.setattr(module, "plot_forest", broken)
    done = write_report(demo_runs, tmp_path / "r", n_boot=100)
    assert done.failed["headline"] == "RuntimeError: no ink" and "headline" not in done.figures
    assert "heatmap" in done.figures and done.verdicts  # the sentences do not need the figure
    page = (tmp_path / "r" / "report.html").read_text()
    assert "headline: failed (RuntimeError: no ink)" in page
    assert html.escape(done.verdicts[0].sentence) in page


@pytest.fixture
def mine():
    """A user's figure in the real registry, removed afterwards so other tests see the seven."""
    spec = FigureSpec("mine", "My figure", plots.heatmap_data, plots.plot_heatmap)
    FIGURES.register("mine", spec)
    yield spec
    FIGURES.unregister("mine")


def test_a_registered_figure_is_drawn_by_the_report(demo_runs, mine, tmp_path):
    assert FIGURES.names()[-1] == "mine" and report.FIGURES is FIGURES
    results, done = load_results(demo_runs), Report(out=tmp_path, tables=[])
    draw_figures(results, Options(n_boot=50), done)
    assert list(done.figures) == FIGURES.names() and done.figures["mine"][:4] == b"\x89PNG"
    assert "<h3>My figure</h3>" in report.report_html(results, done)


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_damaged_runs_are_named_in_the_report_or_fail_strict(demo_runs, tmp_path):
    import shutil

    root = tmp_path / "demo"
    shutil.copytree(demo_runs, root)
    (root / "k1" / "1" / "eval.parquet").write_bytes(b"garbage")
    (root / "k4" / "0" / "train.parquet").unlink()
    done = write_report(root, n_boot=100)
    assert done.out == root / "report"
    md = (root / "report" / "report.md").read_text()
    assert "k1/1/eval.parquet: corrupt" in md and "k4/0/train.parquet: missing" in md
    with pytest.raises(HscaleError, match="k1/1/eval.parquet: corrupt"):
        write_report(root, tmp_path / "strict", strict=True)
    with pytest.raises(HscaleError, match="reference arm 'nope'"):
        write_report(root, tmp_path / "x", reference="nope")


def test_plot_functions_draw_from_their_data(demo_runs):
    results = load_results(demo_runs)
    options = Options(n_boot=100)
    for name, spec in FIGURES.items():
        data = spec.data(results, options)
        assert len(data), name
        fig = spec.draw(data)
        assert fig.axes and png_bytes(fig, dpi=40)[:4] == b"\x89PNG"
    results.train = results.train.drop(columns=["effective_group_rate"])
    with pytest.raises(NoData, match="effective_group_rate"):
        plots.egr_data(results, options)


def test_cli_command_writes_the_report_and_maps_user_errors(demo_runs, tmp_path):
    app = typer.Typer()
    app.command("report")(report_cmd)
    app.command("other")(lambda: None)  # two commands: typer keeps the "report" name
    result = CliRunner().invoke(app, ["report", str(demo_runs), "--out", str(tmp_path / "o"),
                                      "--n-boot", "100", "--no-reported"])
    assert result.exit_code == 0, result.output
    assert "report.html" in result.output and "Against structured-18" in result.output
    assert (tmp_path / "o" / "report.html").is_file()
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "none")])
    assert isinstance(missing.exception, HscaleError)
    assert "does not exist" in missing.exception.one_line()
    bad = CliRunner().invoke(app, ["report", str(demo_runs), "--n-boot", "5"])
    assert isinstance(bad.exception, HscaleError)


def test_curves_follow_evaluations_over_steps_and_tables_use_the_last():
    early = synthetic_episodes({"a": 0.2, "b": 0.3}, arms=["a", "b"], seeds=(0,), runs=2,
                               tasks=5, step=10, rng=1)
    late = synthetic_episodes({"a": 0.6, "b": 0.9}, arms=["a", "b"], seeds=(0,), runs=2,
                              tasks=5, step=20, rng=2)
    ep = tidy(pd.concat([early, late], ignore_index=True).assign(
        model="m", algorithm="g", method=lambda d: d["arm"], source="measured"))
    results = Results(ep, pd.DataFrame(columns=["step"]), pd.DataFrame(), empty_summary())
    curves = plots.curve_data(results)
    assert set(curves["step"]) == {10, 20} and curves["kind"].iloc[0] == "Pass@1 (%)"
    overall = compute_cells(results).measured
    overall = overall[(overall["method"] == "b") & (overall["setting"] == "overall")]
    final = late[late["arm"] == "b"]
    per_setting = final.groupby("setting", observed=True)["success"].mean().mean() * 100
    assert overall["mean"].iloc[0] == pytest.approx(per_setting)  # step 10 is left out
