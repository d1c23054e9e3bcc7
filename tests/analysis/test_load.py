"""The loader: one tidy table, schema checked, every bad file named, external rows beside."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from hscale.analysis import find_run_dirs, load_results, read_reported

# internal: tests the reported-results reader's helpers
from hscale.analysis._external import reported_csv
from hscale.contracts import EVAL_COLUMNS
from hscale.errors import HscaleError

from .helpers import hand_episodes, write_hand_runs


@pytest.fixture
def runs(tmp_path):
    return write_hand_runs(tmp_path)


def test_loads_every_run_into_one_tidy_table(runs):
    res = load_results(runs)
    assert res.problems == []
    assert len(res.runs) == 4 and len(res.episodes) == len(hand_episodes())
    assert set(EVAL_COLUMNS) <= set(res.episodes.columns)
    assert isinstance(res.episodes["method"].dtype, pd.CategoricalDtype)
    assert set(res.episodes["model"]) == {"m"} and set(res.episodes["source"]) == {"measured"}
    assert res.train_sets()[("hand", "single-harness")][0] == "S0-T0-O0-C0-W0"
    assert {"step", "effective_group_rate", "method", "seed"} <= set(res.train.columns)


def test_finds_runs_from_the_runs_folder_or_one_run(runs):
    assert len(find_run_dirs(runs.parent)) == 4
    one = runs / "structured-18" / "0"
    assert find_run_dirs(one) == [one]
    assert set(load_results(one).episodes["seed"]) == {0}


def test_missing_and_corrupt_files_are_named_and_the_rest_loads(runs):
    (runs / "single-harness" / "0" / "eval.parquet").unlink()
    (runs / "single-harness" / "1" / "eval.parquet").write_bytes(b"not a parquet file")
    (runs / "structured-18" / "0" / "manifest.json").write_text("{broken")
    res = load_results(runs)
    text = "\n".join(res.problems)
    assert "single-harness/0/eval.parquet: missing" in text
    assert "single-harness/1/eval.parquet: corrupt" in text
    assert "structured-18/0/manifest.json: corrupt" in text
    assert set(res.episodes["method"]) == {"structured-18"}  # the readable runs still count
    assert len(res.episodes) == 16
    # without its manifest a run is named from its rows; what only the manifest knows is unknown
    no_manifest = res.episodes[res.episodes["seed"] == 0]
    assert set(no_manifest["model"]) == {"unknown"} and len(no_manifest) == 8


def test_schema_problems_are_named(runs):
    path = runs / "structured-18" / "1" / "eval.parquet"
    pd.read_parquet(path).drop(columns=["task_id", "success"]).to_parquet(path)
    bad = runs / "single-harness" / "1" / "eval.parquet"
    pd.read_parquet(bad).assign(reward=2.0, setting="elsewhere").to_parquet(bad)
    text = "\n".join(load_results(runs).problems)
    assert "structured-18/1/eval.parquet: missing columns task_id, success" in text
    assert "single-harness/1/eval.parquet: rewards outside [0, 1]" in text
    assert "unknown settings elsewhere" in text


def test_unfinished_and_stale_runs_are_reported(runs):
    folder = runs / "single-harness" / "0"
    status = json.loads((folder / "status.json").read_text())
    (folder / "status.json").write_text(json.dumps({**status, "state": "FAILED",
                                                    "error": "RuntimeError: boom"}))
    other = runs / "single-harness" / "1"
    (other / "status.json").write_text(json.dumps({"state": "COMPLETED",
                                                   "manifest_hash": "0" * 64}))
    text = "\n".join(load_results(runs).problems)
    assert "single-harness/0: run is FAILED: RuntimeError: boom" in text
    assert "single-harness/1/status.json: manifest hash differs" in text


def test_nothing_usable_raises_a_user_error(tmp_path):
    with pytest.raises(HscaleError, match="does not exist"):
        load_results(tmp_path / "nowhere")
    with pytest.raises(HscaleError, match="no run folders"):
        load_results(tmp_path)
    (tmp_path / "e" / "a" / "0").mkdir(parents=True)
    (tmp_path / "e" / "a" / "0" / "manifest.json").write_text("{}")
    with pytest.raises(HscaleError, match="eval.parquet: missing") as info:
        load_results(tmp_path)
    assert info.value.hint


def test_external_episode_rows_join_beside_ours(runs):
    (runs / "external").mkdir()
    theirs = hand_episodes().head(8).drop(columns=["turns", "reward", "experiment"])
    theirs.to_csv(runs / "external" / "theirs.csv", index=False)
    res = load_results(runs)
    ext = res.episodes[res.episodes["source"] == "external"]
    assert len(ext) == 8 and set(ext["method"]) == {"single-harness [theirs]"}
    assert ext["reward"].tolist() == ext["success"].astype(float).tolist()


def test_external_summary_rows_and_bad_csvs(runs, tmp_path):
    summary = tmp_path / "summary.csv"
    pd.DataFrame({"method": ["mine"], "metric": ["pass@1"], "value": [12.5],
                  "benchmark": ["b1"], "setting": ["in_space"]}).to_csv(summary, index=False)
    junk = tmp_path / "junk.csv"
    junk.write_text("a,b\n1,2\n")
    res = load_results(runs, external=[summary, junk])
    ext = res.reported[res.reported["source"] == "external"]
    assert ext["value"].tolist() == [12.5]
    assert any(str(junk) in p and "neither episode rows" in p for p in res.problems)


def test_reported_csv_holds_the_papers_figures():
    table = read_reported()
    assert reported_csv().is_file() and set(table["source"]) == {"reported"}

    def value(**where):
        sel = table
        for col, want in where.items():
            sel = sel[sel[col] == want]
        assert len(sel) == 1, where
        return sel.iloc[0]

    assert value(table="table1", model="Qwen3-4B-Instruct", algorithm="grpo",
                 method="single-harness", benchmark="PinchBench")["value"] == 10.24
    assert value(table="table2", model="Qwen3-30B-A3B-Instruct",
                 method="black-box-sft")["value"] == 38.08
    got = value(table="harness-s", model="Qwen3.5-9B", method="harness-s", metric="avg@3")
    assert (got["value"], got["std"]) == (62.34, 1.28)
    assert value(table="table4", method="structured-18", baseline="single-harness",
                 setting="base")["value"] == -0.19
    assert len(table[table["table"] == "ablation"]) == 13


def test_train_metrics_may_differ_between_runs(runs):
    folder = runs / "structured-18" / "0"
    train = pd.read_parquet(folder / "train.parquet")
    train.drop(columns=["effective_group_rate"]).assign(entropy=1.5, clip_frac=0.1).to_parquet(
        folder / "train.parquet")
    res = load_results(runs)
    assert res.problems == []
    assert res.train["entropy"].dtype == float and res.train["entropy"].notna().sum() == len(train)
    assert res.train["effective_group_rate"].isna().sum() == len(train)


def test_greedy_decoding_rows_are_kept_apart(runs):
    folder = runs / "structured-18" / "0"
    sampled = pd.read_parquet(folder / "eval.parquet").assign(decoding="sampled",
                                                               category="files")
    greedy = sampled.assign(decoding="greedy", success=True, reward=1.0)
    pd.concat([greedy, sampled], ignore_index=True).to_parquet(folder / "eval.parquet")
    res = load_results(runs)
    assert len(res.episodes) == len(hand_episodes()) and len(res.greedy) == len(sampled)
    assert set(res.episodes["decoding"]) == {"sampled"}  # runs without the column: sampled
    assert set(res.episodes["category"]) == {"files", "unknown"}
