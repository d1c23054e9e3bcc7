"""Table layouts: measured cells equal hand-computed means; reported rows are the papers'."""

from __future__ import annotations

import pandas as pd
import pytest

from hscale.analysis import (
    Table,
    all_tables,
    base_harness_table,
    compute_cells,
    demo_like,
    harness_s_table,
    load_results,
    measured_ordering,
    out_of_space_table,
    settings_table,
    to_html,
    to_latex,
    to_markdown,
)

# internal: tests the renderers' formatting helpers
from hscale.analysis._render import tex_escape

from .helpers import write_hand_runs


@pytest.fixture
def hand(tmp_path):
    return load_results(write_hand_runs(tmp_path))


def row(table: Table, method: str, source: str = "measured", model: str | None = None,
        algorithm: str = "grpo"):
    frame = table.frame
    sel = frame[(frame["method"] == method) & (frame["source"] == source)
                & (frame["algorithm"] == algorithm)]
    if model is not None:
        sel = sel[sel["model"] == model]
    assert len(sel) == 1, sel
    return sel.iloc[0]


def test_settings_table_cells_are_the_hand_computed_means(hand):
    t = settings_table(compute_cells(hand))
    single = row(t, "single-harness")
    assert single["in-space b1"] == "37.50 ± 17.68"
    assert single["in-space b2"] == "87.50 ± 17.68"
    assert single["in-space average"] == "62.50 ± 0.00"
    assert row(t, "structured-18")["in-space average"] == "50.00 ± 17.68"
    delta = row(t, "Δ structured-18 − single-harness")
    assert (delta["in-space b1"], delta["in-space b2"], delta["in-space average"]) == (
        "+0.00", "-25.00", "-12.50")


def test_reported_rows_are_the_papers_numbers_unchanged(hand):
    t = settings_table(compute_cells(hand))
    paper = row(t, "structured-18", "reported", "Qwen3-4B-Instruct")
    assert paper["in-space ClawGym-Bench"] == "52.78"
    assert paper["in-space PinchBench"] == "13.55"
    assert paper["overall"] == "39.04"  # as reported, though not the mean of those shown
    assert any("not the mean" in note for note in t.notes)
    gain = row(t, "Δ structured-18 − single-harness", "reported", "Qwen3-4B-Instruct")
    assert gain["in-space average"] == "+9.80"
    assert row(t, "structured-18", "reported", "Qwen3-4B-Instruct", "ppo")["overall"] == "36.93"
    # measured rows come first, then the reported ones
    sources = list(t.frame["source"])
    assert sources.index("reported") > max(i for i, s in enumerate(sources) if s == "measured")


def test_harness_s_reported_row_keeps_its_spread(hand):
    t = harness_s_table(compute_cells(hand))
    paper = row(t, "harness-s", "reported", "Qwen3.5-4B")
    assert paper["Pass@3 (base harness)"] == "67.56 ± 1.87"
    assert paper["Avg@3 (base harness)"] == "56.87 ± 1.47"
    assert paper["extra rollouts (%)"] == "18.44"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = demo_like(tmp_path_factory.mktemp("runs"), tasks=6, seeds=(0, 1), runs=2, steps=8)
    return load_results(root)


def test_out_of_space_table_has_every_out_of_space_harness(demo):
    t = out_of_space_table(compute_cells(demo))
    assert {"oos/shell", "oos/actions", "all out-of-space", "claude-code"} <= set(t.frame.columns)
    measured = t.data[(t.data["source"] == "measured") & (t.data["harness"] == "oos/shell")]
    ep = demo.episodes
    shell = ep[(ep["harness"] == "oos/shell") & (ep["method"] == "k1")]
    assert measured.set_index("method").loc["k1", "mean"] == pytest.approx(
        shell["success"].mean() * 100)


def test_base_harness_table_shows_single_and_reference_with_their_difference(demo):
    t = base_harness_table(compute_cells(demo))
    measured = set(t.frame.loc[t.frame["source"] == "measured", "method"])
    assert measured == {"single-harness", "structured-18", "Δ structured-18 − single-harness"}
    assert {"base harness builtin", "in-space builtin",
            "out-of-space builtin"} <= set(t.frame.columns)


def test_harness_s_table_measures_groups_and_rollouts(demo):
    t = harness_s_table(compute_cells(demo))
    assert "effective-group rate (%)" in t.frame.columns
    rate = t.data[(t.data["metric"] == "effective_group_rate") & (t.data["source"] == "measured")]
    expected = demo.train.groupby("method", observed=True)["effective_group_rate"].mean() * 100
    got = rate.set_index("method")["mean"]
    assert got.sort_index().to_numpy() == pytest.approx(expected.sort_index().to_numpy())
    extra = t.data[(t.data["metric"] == "extra_rollouts_pct") & (t.data["source"] == "measured")]
    assert extra["mean"].to_numpy() == pytest.approx(0.0)  # 32 episodes a step = 8 x 4


def test_all_tables_and_ordering(demo):
    tables, cells, comparisons = all_tables(demo)
    assert [t.name for t in tables] == ["settings", "out_of_space", "ablation", "base_harness",
                                        "harness_s", "comparisons"]
    assert [t.title.split(":")[0] for t in tables[:4]] == ["Table 1", "Table 2", "Ablation",
                                                           "Table 4"]
    order = measured_ordering(cells)
    assert list(order["mean"]) == sorted(order["mean"], reverse=True)
    assert set(order["method"]) == set(demo.episodes["method"].astype(str))
    ablation = tables[2].frame
    assert "Δ in-space vs structured-18 [simultaneous 95% CI]" in ablation.columns
    assert set(comparisons["method"]) == set(order["method"]) - {"structured-18"}


def test_renderers():
    frame = pd.DataFrame({"method": ["a_b", "c|d"], "x": ["1.00 ± 0.50", "—"]})
    t = Table("t", "Title 50%", frame, frame, ["a note"])
    md = to_markdown(t)
    assert "| method | x |" in md and "c\\|d" in md and "*a note*" in md
    tex = to_latex(t)
    for word in ("\\toprule", "\\midrule", "\\bottomrule", "a\\_b", "Title 50\\%", "$\\pm$",
                 "{lr}"):
        assert word in tex
    assert tex_escape("Δ −1") == "$\\Delta$ $-$1"
    assert "<table" in to_html(t) and "a note" in to_html(t)


def test_untagged_external_summaries_join_the_tables_they_fit(tmp_path):
    runs = write_hand_runs(tmp_path)
    theirs = tmp_path / "theirs.csv"
    pd.DataFrame({"model": ["m", "m"], "algorithm": ["grpo", "grpo"],
                  "method": ["their-method"] * 2, "metric": ["pass@1", "effective_group_rate"],
                  "benchmark": ["b1", ""], "setting": ["in_space", ""],
                  "value": [44.0, 70.0]}).to_csv(theirs, index=False)
    cells = compute_cells(load_results(runs, external=[theirs], reported=False))
    assert row(settings_table(cells), "their-method", "external")["in-space b1"] == "44.00"
    assert "their-method" not in set(out_of_space_table(cells).frame["method"])  # not out-of-space
    hs = harness_s_table(cells)
    assert row(hs, "their-method", "external")["effective-group rate (%)"] == "70.00"
