"""Each headline comparison's sentence agrees with its row in comparisons.csv: synthetic
results whose answers are planted (an arm far below the reference, one equal to it, one far
above it where the paper reports it below), read back through the report's own tables; the
papers' numbers are a hypothesis of their own (inside the interval, or above or below it)."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hscale.analysis import all_tables, load_results, synthetic_episodes, write_runs

# internal: tests the verdict rules one by one
from hscale.analysis._verdicts import ALPHA, paper_word, verdicts, word_for

PLANTED = {"structured-18": 0.5, "single-harness": 0.15, "random-18": 0.5,
           "black-box-rl": 0.9}
NUMBER = r"([+-]\d+\.\d)"


@pytest.fixture(scope="module")
def answered(tmp_path_factory):
    root = tmp_path_factory.mktemp("verdicts")
    # the papers' model on one of their benchmarks: their numbers are comparable
    episodes = synthetic_episodes(PLANTED, arms=list(PLANTED), tasks=30, runs=2,
                                  benchmarks=("ClawGym-Bench",))
    write_runs(root, episodes, model="Qwen3-4B-Instruct", steps=11)
    results = load_results(root / "synthetic")
    _, cells, comparisons = all_tables(results)
    return comparisons, verdicts(comparisons, cells.comparable)


def test_each_planted_answer_is_the_sentence_of_its_comparison(answered):
    comparisons, found = answered
    said = {(v.method, v.setting): v for v in found}
    assert said[("single-harness", "in_space")].word == "reproduces"  # below, as reported
    # above; reported below (Table 2, on Claude Code); in-space the papers give no number
    assert said[("black-box-rl", "out_of_space")].word == "opposite"
    assert said[("black-box-rl", "in_space")].word == "higher"
    assert said[("black-box-rl", "out_of_space")].paper[0][1] == pytest.approx(33.38 - 37.22)
    assert said[("random-18", "in_space")].word == "not resolved"
    assert "not resolved (3 seeds a side): compatible with any difference from" in \
        said[("random-18", "in_space")].sentence
    assert len(found) == len(comparisons)
    # the papers' -3.8 pp lies far below a measured +40 pp: the hypothesis is refuted
    opposite = said[("black-box-rl", "out_of_space")]
    assert opposite.paper_word == "below" and "lies below this interval" in opposite.sentence
    assert "the test that this difference is the paper's: p = " in opposite.sentence
    row = comparisons[(comparisons["method"] == "black-box-rl")
                      & (comparisons["setting"] == "out_of_space")].iloc[0]
    assert row["verdict"] == "opposite" and row["paper_check"] == "below"
    assert [m for m, _ in opposite.paper] == ["Qwen3-4B-Instruct"]  # this study's model only
    assert row["paper_pp"] == pytest.approx(opposite.paper[0][1])


def test_a_sentence_says_its_rows_sign_interval_and_adjusted_p(answered):
    comparisons, found = answered
    for row, verdict in zip(comparisons.to_dict("records"), found, strict=True):
        text = verdict.sentence
        diff, lo, hi = (float(x) for x in re.search(
            rf"{NUMBER} pp \[{NUMBER}, {NUMBER}\]", text).groups())
        assert (diff, lo, hi) == tuple(round(row[k], 1) + 0.0 for k in ("diff", "lo", "hi"))
        assert f"simultaneous 95% over {row['m']}" in text
        p = re.search(r"adjusted p (< 0\.001|= \d\.\d{3})", text).group(1)
        assert p == ("< 0.001" if row["p_adj"] < 0.001 else f"= {row['p_adj']:.3f}")
        assert row["method"] in text and row["reference"] in text
        resolved = row["lo"] > 0 or row["hi"] < 0
        assert (verdict.word != "not resolved") == resolved == (row["p_adj"] < ALPHA)
        assert row["verdict"] == verdict.word and row["paper_check"] == verdict.paper_word


@given(diff=st.floats(-50, 50), half=st.floats(0.1, 30),
       paper=st.lists(st.floats(-20, 20).filter(lambda d: abs(d) > 0.01), max_size=2))
def test_the_word_follows_the_interval_and_the_papers_sign(diff, half, paper):
    lo, hi = diff - half, diff + half
    word = word_for(diff, lo, hi, paper)
    if lo <= 0 <= hi:
        assert word == "not resolved"
    elif paper and len({math.copysign(1, d) for d in paper}) == 1:
        same = math.copysign(1, diff) == math.copysign(1, paper[0])
        assert word == ("reproduces" if same else "opposite")
    else:
        assert word == ("higher" if diff > 0 else "lower")
    where = paper_word(lo, hi, paper)
    if not paper:
        assert where == ""
    elif all(lo <= d <= hi for d in paper):
        assert where == "consistent"
    elif all(d > hi for d in paper) or all(d < lo for d in paper):
        assert where == ("above" if paper[0] > hi else "below")
    else:
        assert where == "mixed"


def test_comparisons_of_another_source_are_not_said():
    row = {"source": "reported", "method": "a", "reference": "b", "setting": "in_space",
           "diff": 1.0, "lo": 0.5, "hi": 1.5, "p_adj": 0.01}
    assert verdicts(pd.DataFrame([row])) == []


def test_cells_that_do_not_vary_are_said_without_a_nan():
    """Every paired cell the same (one seed, one harness, equal outcomes): no interval can
    be drawn, and no sentence, table cell or paper check shows a NaN or a broken clause."""
    # internal: tests the renderers' formatting helpers
    from hscale.analysis._render import fmt_interval

    # internal: tests the verdict rules one by one
    from hscale.analysis._verdicts import Verdict

    flat = Verdict("single-harness", "structured-18", "out_of_space", 0.0, math.nan, math.nan,
                   math.nan, math.nan, (("Qwen3-4B", -3.6),), m=16, seeds=1)
    text = flat.sentence
    assert "nan" not in text.lower() and "  " not in text
    assert "no interval can be estimated" in text and "cannot be checked" in text
    assert fmt_interval(math.nan, math.nan) == "(no interval: the cells do not vary)"
    assert fmt_interval(-1.8, 35.1, 1) == "[-1.8, +35.1]"
