"""The scaling fits: a slope built into synthetic runs is recovered with an interval that
holds it, arms are placed by their manifests, and the report shows the table and figure
when N or K vary (skips them with a reason otherwise)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from hscale.analysis import (
    FIGURES,
    NoData,
    load_results,
    synthetic_episodes,
    write_report,
    write_runs,
)

# internal: tests the figure registry and rendering
from hscale.analysis._plots import png_bytes

# internal: tests the scaling fit's internals
from hscale.analysis._scaling import OA, OTHER, _wls, scaling, scaling_data, scaling_table
from tests.cli import Result
from tests.cli import hscale as run_cli

ROOT = Path(__file__).resolve().parents[2]
SIZES = (9, 18, 36, 72, 144)
SLOPE = 8.0  # pp per doubling of N


def p_of(n: int) -> float:
    return 0.2 + SLOPE / 100 * np.log2(n / 9)


@pytest.fixture(scope="module")
def sized(tmp_path_factory):
    """Runs of arms over N (random training sets of N configurations), Pass@1 linear in
    log2 N with a known slope; every other difference left out."""
    from hscale.design import random_n
    from hscale.harness import factor_space

    space = factor_space()
    arms = [f"random-n{n}" for n in SIZES]
    episodes = synthetic_episodes({a: p_of(n) for a, n in zip(arms, SIZES, strict=True)},
                                  arms=arms, seeds=(0, 1), runs=2, tasks=60,
                                  experiment="sizes", rng=1)
    sets = {a: random_n(space, n, seed=n).labels for a, n in zip(arms, SIZES, strict=True)}
    root = tmp_path_factory.mktemp("runs")
    write_runs(root, episodes, sets)
    return load_results(root / "sizes", reported=False)


def test_a_known_slope_in_log2_n_is_recovered(sized):
    fits = scaling(sized, n_boot=400).fits
    assert set(fits["varies"]) == {"N"} and set(fits["series"]) == {f"{OTHER}, locality K=2"}
    assert set(fits["setting"]) == {"in_space", "out_of_space", "base"}
    row = fits[fits["setting"] == "in_space"].iloc[0]
    assert row["arms"] == len(SIZES) and row["values"] == "9, 18, 36, 72, 144"
    assert abs(row["slope"] - SLOPE) < 1.5
    assert row["lo"] < SLOPE < row["hi"] and row["hi"] - row["lo"] < 4
    assert abs(row["at_min"] - 100 * p_of(9)) < 3 and abs(row["at_max"] - 100 * p_of(144)) < 3


def test_k_is_read_from_the_manifests_assignment(sized):
    """Same training-set size, K from the assignment: a K series, flat by construction."""
    runs = sized.runs.copy()
    shared = list(runs["train_harnesses"].iloc[0])
    runs["train_harnesses"] = [shared] * len(runs)
    runs["assignment"] = [{"mode": "locality", "k": int(m.rsplit("n", 1)[1]) // 9}
                          for m in runs["method"]]
    sized_k = type(sized)(sized.episodes, sized.train, runs, sized.reported)
    fits = scaling(sized_k, n_boot=200).fits
    assert set(fits["varies"]) == {"K"} and fits["series"].iloc[0] == \
        f"{OTHER} N={len(shared)}, locality"
    row = fits[fits["setting"] == "in_space"].iloc[0]
    assert row["values"] == "1, 2, 4, 8, 16" and row["slope"] > 0


def test_weighted_least_squares_matches_numpy():
    rng = np.random.default_rng(0)
    x, y, w = rng.normal(size=7), rng.normal(size=7), rng.uniform(0.5, 3, size=7)
    intercept, slope = _wls(x, y, w)
    assert np.allclose([slope, intercept], np.polyfit(x, y, 1, w=np.sqrt(w)))
    many = _wls(x, np.vstack([y, 2 * y]), w)[1]
    assert np.allclose(many, [slope, 2 * slope])


def test_structured_and_random_sets_are_separate_lines(tmp_path):
    from hscale.design import orthogonal_array
    from hscale.harness import factor_space

    space = factor_space()
    arms = {"oa-18": 18, "oa-27": 27, "rand-18": 18, "rand-27": 27}
    episodes = synthetic_episodes(0.5, arms=list(arms), seeds=(0,), runs=1, tasks=8,
                                  experiment="kinds")
    sets = {a: space.labels(orthogonal_array(space.levels, 2, runs=n).array)
            for a, n in arms.items() if a.startswith("oa")}
    sets |= {"rand-18": sets["oa-27"][:18], "rand-27": sets["oa-18"] + sets["oa-27"][:9]}
    write_runs(tmp_path, episodes, sets)
    fits = scaling(load_results(tmp_path / "kinds", reported=False), n_boot=50).fits
    assert set(fits["series"]) == {f"{OA}, locality K=2", f"{OTHER}, locality K=2"}


def test_no_variation_is_an_empty_table_and_a_skipped_figure(tmp_path):
    episodes = synthetic_episodes(0.4, arms=("a", "b"), seeds=(0,), runs=1, tasks=6)
    write_runs(tmp_path, episodes)
    results = load_results(tmp_path / "synthetic", reported=False)
    table = scaling_table(results, n_boot=50)
    assert table.frame.empty and "vary neither N" in table.notes[0]
    with pytest.raises(NoData, match="vary neither N"):
        scaling_data(results)
    done = write_report(tmp_path / "synthetic", tmp_path / "report", reported=False, n_boot=50)
    assert "vary neither N" in done.skipped["scaling"]
    assert "scaling: skipped" in (tmp_path / "report" / "report.md").read_text()


def test_the_report_writes_the_scaling_table_and_figure(sized, tmp_path):
    assert "scaling" in FIGURES
    done = write_report(sized.root, tmp_path, reported=False, n_boot=100)
    assert "scaling" in done.figures and not done.failed
    csv = pd.read_csv(tmp_path / "scaling.csv")
    assert set(csv["varies"]) == {"N"} and len(csv) == 3
    assert "Scaling: Pass@1 vs training-set size N and K" in (tmp_path / "tables.md").read_text()
    assert png_bytes(FIGURES.get("scaling").draw(scaling_data(sized)), dpi=40)[:4] == b"\x89PNG"


def hscale(*args: str) -> Result:
    return run_cli(*args, cwd=ROOT)


@pytest.mark.slow
def test_sweep_quick_runs_and_reports_the_scaling_law(tmp_path):
    """experiments/sweep.yaml trimmed to four arms (two sizes, two more K), run at smoke-test
    scale by the embedded trainer, then reported: one N fit and one K fit."""
    pytest.importorskip("torch")
    spec = yaml.safe_load((ROOT / "experiments" / "sweep.yaml").read_text())
    spec["sweeps"] = {"size": {"recipes": ["structured"], "n": [18, 27]}, "k": {"k": [1, 4]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = tmp_path / "runs"
    run = hscale("run", str(path), "--quick", "--out", str(out), "--workers", "2")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "5 of 5 runs completed" in run.stdout  # 4 swept arms and the base model
    report = hscale("report", str(out / "sweep-quick"), "--n-boot", "200")
    assert report.returncode == 0, report.stderr[-2000:]
    folder = out / "sweep-quick" / "report"
    fits = pd.read_csv(folder / "scaling.csv")
    assert set(fits["varies"]) == {"N", "K"}
    assert set(fits.loc[fits["varies"] == "N", "values"]) == {"18, 27"}
    assert set(fits.loc[fits["varies"] == "K", "values"]) == {"1, 2, 4"}
    assert (folder / "scaling.png").read_bytes()[:4] == b"\x89PNG"
    assert "Scaling: Pass@1 vs training-set size N and K" in (folder / "report.md").read_text()
