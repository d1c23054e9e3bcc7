"""The first screen answers: planted studies through `hscale report` (seed luck is not an
effect, an effect on every seed is), the answer's sentences made from the numbers, one seed
said to leave training randomness out, the plot's intervals the verdicts', every comparison
on the one-page summary, wall time beside summed time, and library warnings said once."""

from __future__ import annotations

import math
import warnings
from datetime import datetime, timedelta

import pandas as pd
import pytest

from hscale.analysis import StudySize, planted, write_runs

# internal: tests the headline page's pieces
from hscale.analysis._headline import answer, forest_frame, summary_page, wall_seconds

# internal: tests the report's figure and warning steps
from hscale.analysis._report import warning_notes

# internal: tests the verdict rules one by one
from hscale.analysis._verdicts import Verdict
from hscale.cli import main

LUCK = {"seed": 0.045, "task": 0.002, "harness": 0.0, "seed_task": 0.002, "run": 0.0,
        "residual": 0.36}


def _study(root, components, effect, seeds=5, rng=11):
    """Planted rows as run folders (arms structured-18, the reference, and random-18)."""
    rows = planted(components, StudySize(seeds, 30, 6, 2), effect=effect, rng=rng)
    rows["arm"] = rows["arm"].cat.rename_categories(["structured-18", "random-18"])
    write_runs(root, rows.drop(columns=["method", "source", "model", "algorithm"]))
    return root / "planted"


def _report(runs, out, capsys) -> tuple[pd.Series, str]:
    with pytest.raises(SystemExit) as done:
        main(["report", str(runs), "--out", str(out), "--no-reported", "--n-boot", "100"])
    printed = capsys.readouterr().out
    assert done.value.code == 0, printed
    row = pd.read_csv(out / "comparisons.csv").set_index("setting").loc["in_space"]
    return row, printed


def test_seed_luck_through_hscale_report_is_not_resolved(tmp_path, capsys):
    """Two arms that differ only by seed luck (a seed effect of about 15 pp, five seeds)."""
    runs = _study(tmp_path / "runs", LUCK, effect=0.0)
    row, printed = _report(runs, tmp_path / "report", capsys)
    assert abs(row["diff"]) > 3 and row["lo"] < 0 < row["hi"]
    assert row["verdict"] == "not resolved" and row["seeds"] == 5 and 4 <= row["df"] <= 8
    assert "no comparison is resolved" in printed and "with 5 seeds an arm" in printed
    assert "neither show a difference nor rule one out" in printed  # never "no difference"
    assert "could not be told apart" not in printed  # no MDE read off the same data


def test_an_effect_on_every_seed_through_hscale_report_is_resolved(tmp_path, capsys):
    runs = _study(tmp_path / "runs", {**LUCK, "seed": 0.001}, effect=0.3)
    row, printed = _report(runs, tmp_path / "report", capsys)
    assert row["lo"] > 15 and row["verdict"] == "higher" and row["p_adj"] < 0.001
    assert "1 of 1 comparisons are resolved" in printed
    assert "random-18 is higher in-space" in printed


def _verdict(method="random-18", setting="in_space", diff=1.0, lo=-4.0, hi=6.0, paper=(),
             reference="structured-18", m=16, seeds=3, mde=9.0) -> Verdict:
    return Verdict(method, reference, setting, diff, lo, hi, 1.0 if lo < 0 < hi else 0.001,
                   mde, tuple(paper), m, seeds)


def test_the_answer_is_made_from_the_numbers():
    found = [_verdict("single-harness", diff=-14.0, lo=-25.0, hi=-3.0,
                      paper=[("Qwen3-4B", -9.8)]),
             _verdict("repeat-2", diff=4.3, lo=0.5, hi=8.1, paper=[("Qwen3-4B", -4.5)]),
             _verdict("k1", mde=12.4),
             _verdict("structured-18", reference="base model (no RL)", diff=16.7, lo=2.0,
                      hi=31.0, m=27)]
    said = answer(found)
    assert 2 <= len(said) <= 4
    assert said[0].startswith("Against structured-18, 2 of 3 comparisons are resolved")
    assert "single-harness is lower in-space (-14.0 pp [-25.0, -3.0])" in said[0]
    assert "the other one is not resolved (compatible with differences from -4 to +6 pp)" \
        in said[0] and "with 3 seeds an arm" in said[0]
    assert "12.4" not in said[0]  # no minimum detectable effect read off the same data
    assert said[1].startswith("RL over the base model, structured-18: in-space +16.7 pp")
    assert "(resolved)" in said[1] and "simultaneous over the 27 RL gains" in said[1]
    assert "inside our intervals for 1 of 2" in said[2]
    assert "repeat-2 vs structured-18 in-space: the paper's -4.5 pp lies below [+0.5, +8.1]" \
        in said[2]


def test_the_papers_numbers_of_another_setup_are_not_compared():
    from hscale.analysis import read_reported

    # internal: tests the verdict rules one by one
    from hscale.analysis._verdicts import comparable

    reported = read_reported(True)
    kept, note = comparable(reported, ["hscale-tiny"], ["builtin"])
    assert kept.empty and "are not compared" in note and "hscale-tiny" in note
    kept, note = comparable(reported, ["Qwen/Qwen3-4B-Instruct-2507"], ["clawgym"])
    assert len(kept) and not note
    assert set(kept["model"]) == {"Qwen3-4B-Instruct"}
    assert set(kept["benchmark"]) <= {"ClawGym-Bench", "average"}
    said = answer([_verdict("k1")], "The papers' numbers are not compared.")
    assert said[-1] == "The papers' numbers are not compared."


def test_one_seed_says_training_randomness_is_not_covered():
    said = answer([_verdict(seeds=1)])
    assert any("One seed per arm" in s and "not training randomness" in s for s in said)
    assert not any("One seed" in s for s in answer([_verdict(seeds=2)]))


def test_the_plot_draws_the_verdicts_intervals_and_names_the_adjustment():
    found = [_verdict(paper=[("Qwen3-4B", 9.0)]), _verdict("k1", diff=7.0, lo=2.0, hi=12.0)]
    frame = forest_frame(found)
    assert frame[["lo", "hi"]].to_numpy().tolist() == [[-4.0, 6.0], [2.0, 12.0]]
    assert frame["word"].tolist() == ["not resolved", "higher"]
    assert frame["paper_word"].tolist() == ["above", ""]
    # internal: tests the headline page's pieces
    from hscale.analysis._headline import plot_forest

    title = plot_forest(frame)._suptitle.get_text()
    assert "simultaneous 95%" in title and "max-t" in title and "16 arm" in title


def test_the_summary_page_holds_every_comparison():
    found = [_verdict(f"arm{i}") for i in range(25)]
    # internal: tests the headline page's pieces
    from hscale.analysis._headline import RunSummary

    summary = RunSummary(["a"], [0, 1, 2], 10, 18, ["m"], ["local"], 600.0, 100)
    fig = summary_page(summary, forest_frame(found), found)
    tables = [child for sub in fig.subfigs for ax in sub.axes for child in ax.tables]
    assert len(tables) == 1
    rows = {row for row, _ in tables[0].get_celld()}
    assert len(rows) == len(found) + 1  # a header and a row each: nothing cut
    assert fig.get_figheight() > 8.27  # the page grew to hold them


def test_wall_time_is_the_union_of_the_runs_spans():
    t0 = datetime(2026, 1, 1, 12, 0, 0)
    runs = pd.DataFrame({"started": [t0, t0 + timedelta(minutes=1), t0 + timedelta(hours=2)],
                         "ended": [t0 + timedelta(minutes=10), t0 + timedelta(minutes=12),
                                   t0 + timedelta(hours=2, minutes=5)]})
    # 0-12 min overlapping, then 5 min after a two-hour pause (a resumed run)
    assert wall_seconds(runs) == pytest.approx(17 * 60)
    assert math.isnan(wall_seconds(pd.DataFrame({"seconds": [1.0]})))
    # internal: tests the headline page's pieces
    from hscale.analysis._headline import RunSummary

    summary = RunSummary(["a"], [0], 1, 1, ["m"], ["local"], 1320.0, 10, wall=17 * 60)
    assert summary.took() == "17.0 min wall (22.0 min summed over runs)"


def test_library_warnings_are_said_once_each():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from statsmodels.tools.sm_exceptions import PerfectSeparationWarning

        for _ in range(485):
            warnings.warn("Perfect separation detected", PerfectSeparationWarning,
                          stacklevel=1)
        for _ in range(3):
            warnings.warn("something else", UserWarning, stacklevel=1)
    notes = warning_notes(caught)
    assert len(notes) == 2
    assert notes[0].startswith("485 logistic fits of the component tests met perfect")
    assert notes[1] == "UserWarning x3 (first: something else)"
