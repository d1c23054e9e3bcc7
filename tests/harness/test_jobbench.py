"""JobBench rows in their published shape: a parquet file whose rows name their files in
``dataset/<occupation>/taskN/`` beside it and hold ``{"rubrics": [...]}``; each rubric scores
its weight only when the judge finds all of its criteria met (a scripted judge here)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hscale.errors import HscaleError
from hscale.harness import Env
from hscale.harness.tasks import load_jobbench, run_checker, uses_judge
from tests.harness.test_pinchbench_grading import scripted_judge  # noqa: F401 (a fixture)

BINARY = bytes(range(256)) + b"\xff\xfe\x00PK\x03\x04"
RUBRICS = {"rubrics": [
    {"rubric": "The reconciliation is right", "weight": 3,
     "criterion": ["Totals match the ledger", "Differences are explained"]},
    {"rubric": "The memo is usable", "weight": 1, "criterion": ["States the balance"]}]}


def _row(**change: object) -> dict:
    row = {"task_id": "acct-1", "occupation": "Accountants", "task_num": 1,
           "prompt": "Reconcile ledger.csv against scan.xlsx and write memo.md.",
           "reference_files": json.dumps(["dataset/Accountants/task1/ledger.csv",
                                          "dataset/Accountants/task1/scans/scan.xlsx"]),
           "rubric_json": json.dumps(RUBRICS), "task_card": json.dumps({"hours": 2})}
    return {**row, **change}


def _dataset(root: Path) -> Path:
    folder = root / "dataset" / "Accountants" / "task1"
    (folder / "scans").mkdir(parents=True)
    (folder / "ledger.csv").write_text("date,amount\n2024-01-02,10.50\n", encoding="utf-8")
    (folder / "scans" / "scan.xlsx").write_bytes(BINARY)
    return folder


def _parquet(root: Path, rows: list[dict], schema: pa.Schema | None = None) -> Path:
    path = root / "jobbench.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def test_rows_load_with_their_files_exact(tmp_path):
    _dataset(tmp_path)
    path = _parquet(tmp_path, [_row(), _row(task_id="acct 2", reference_files=None,
                                            occupation=None)])
    first, second = load_jobbench(path)
    assert first.task_id == "acct-1" and first.category == "Accountants"
    assert first.split == "eval" and first.grading_type == "llm_judge"
    assert sorted(first.input_files) == ["ledger.csv", "scans/scan.xlsx"]
    assert all(isinstance(text, str) for text in first.input_files.values())
    assert first.metadata == {"occupation": "Accountants", "task_num": 1,
                              "task_card": json.dumps({"hours": 2})}
    with Env(first, root=tmp_path / "ws") as env:
        assert (env.workspace / "scans" / "scan.xlsx").read_bytes() == BINARY
        assert (env.workspace / "ledger.csv").read_text() == "date,amount\n2024-01-02,10.50\n"
    assert first.checker["kind"] == "weighted" and uses_judge(first.checker)
    parts = first.checker["parts"]
    assert [p["weight"] for p in parts] == [3.0, 1.0]
    assert [p["checker"]["scoring"] for p in parts] == ["all", "all"]
    assert [c["text"] for c in parts[0]["checker"]["criteria"]] == [
        "Totals match the ledger", "Differences are explained"]
    assert parts[0]["checker"]["context"].startswith(first.user_query)
    assert "The reconciliation is right" in parts[0]["checker"]["context"]
    assert second.task_id == "acct-2" and second.metadata["source_id"] == "acct 2"
    assert second.input_files == {} and second.category == "general"


def test_native_parquet_types_load_too(tmp_path):
    _dataset(tmp_path)
    rubric = pa.struct([("rubric", pa.string()), ("weight", pa.float64()),
                        ("criterion", pa.list_(pa.string()))])
    schema = pa.schema([("task_id", pa.string()), ("occupation", pa.string()),
                        ("task_num", pa.int64()), ("prompt", pa.string()),
                        ("reference_files", pa.list_(pa.string())),
                        ("rubric_json", pa.struct([("rubrics", pa.list_(rubric))])),
                        ("task_card", pa.string())])
    row = _row(reference_files=["dataset/Accountants/task1/ledger.csv"], rubric_json=RUBRICS)
    [task] = load_jobbench(_parquet(tmp_path, [row], schema))
    assert list(task.input_files) == ["ledger.csv"]
    assert [p["weight"] for p in task.checker["parts"]] == [3.0, 1.0]


def test_a_rubric_scores_its_weight_only_when_every_criterion_is_met(tmp_path,
                                                                    scripted_judge):  # noqa: F811
    _dataset(tmp_path)
    [task] = load_jobbench(_parquet(tmp_path, [_row()]))
    unmet: set[str] = {"Differences are explained"}

    def verdict(system: str, question: str) -> str:
        criterion = question.split("## Criterion\n", 1)[1].split("\n", 1)[0]
        return "no" if criterion in unmet else "yes"

    scripted_judge.script = verdict
    with Env(task, root=tmp_path / "ws") as env:
        (env.workspace / "memo.md").write_text("Balance: 10.50\n")
        assert run_checker(task.checker, env.workspace, "Done.") == 0.25  # (0*3 + 1*1) / 4
        assert len(scripted_judge.requests) == 3
        assert all("### File: memo.md\nBalance: 10.50" in r["question"]
                   for r in scripted_judge.requests)
        unmet.clear()
        assert run_checker(task.checker, env.workspace, "Done.") == 1.0
        unmet.add("States the balance")
        assert run_checker(task.checker, env.workspace, "Done.") == 0.75
        unmet.add("Totals match the ledger")
        assert run_checker(task.checker, env.workspace, "Done.") == 0.0


@pytest.mark.parametrize("change, match", [
    ({"prompt": None}, "field 'prompt' is missing"),
    ({"task_id": ""}, "field 'task_id'"),
    ({"rubric_json": "{not json"}, "field 'rubric_json' is not valid JSON"),
    ({"rubric_json": json.dumps([{"criterion": "x", "weight": 1}])}, "no 'rubrics' list"),
    ({"rubric_json": json.dumps({"rubrics": [{"rubric": "r", "weight": 1}]})},
     "rubric 0 needs a 'criterion' list"),
    ({"rubric_json": json.dumps({"rubrics": [{"rubric": "r", "weight": -2,
                                              "criterion": ["c"]}]})}, "weight -2"),
    ({"rubric_json": json.dumps({"rubrics": [{"rubric": "r", "weight": 0,
                                              "criterion": ["c"]}]})}, "sum to 0"),
    ({"reference_files": json.dumps(["../outside.txt"])}, "leaves the workspace"),
    ({"reference_files": json.dumps(["/etc/passwd"])}, "must be relative"),
    ({"reference_files": json.dumps(["dataset/Accountants/task1/gone.csv"])}, "not found"),
    ({"reference_files": json.dumps(["dataset/Accountants/task1/link.csv"])},
     "is a symbolic link"),
    ({"reference_files": json.dumps(["dataset/Accountants/task1/fifo"])},
     "not a regular file"),
    ({"reference_files": json.dumps(["dataset/Accountants/task1"])}, "not a regular file"),
    ({"reference_files": json.dumps({"a": "b"})}, "must be a list of paths"),
])
def test_bad_rows_are_one_line_errors_naming_the_row(tmp_path, change, match):
    folder = _dataset(tmp_path)
    (tmp_path / "outside.txt").write_text("secret")
    (folder / "link.csv").symlink_to(tmp_path / "outside.txt")
    os.mkfifo(folder / "fifo")
    path = _parquet(tmp_path, [_row(task_id="ok"), _row(**change)])
    with pytest.raises(HscaleError, match=match) as info:
        load_jobbench(path)
    line = info.value.one_line()
    assert line.startswith(f"{path}: row 1") and "\n" not in line and info.value.hint
    left: list = []
    [task] = load_jobbench(path, left_out=left)
    assert task.task_id == "ok"
    [(where, message)] = left
    assert where == f"{path}: row 1" and re.search(match, message) and "\n" not in message


def test_left_out_rows_and_limits(tmp_path):
    _dataset(tmp_path)
    path = _parquet(tmp_path, [_row(), _row(), _row(task_id="x", prompt=" ")])
    left: list = []
    [task] = load_jobbench(path, left_out=left)
    assert [w.rsplit(": ", 1)[1] for w, _ in left] == ["row 1", "row 2"]
    assert left[0][1].startswith("task id 'acct-1' is also row 0's")
    assert left[1][1].startswith("(x): field 'prompt' is missing")
    with pytest.raises(HscaleError, match="row 1"):
        load_jobbench(path)
    with pytest.raises(HscaleError, match="is 263 bytes, over the 100 allowed"):
        load_jobbench(_parquet(tmp_path, [_row()]), max_asset_bytes=100)
    only_bad = _parquet(tmp_path, [_row(prompt="")])
    with pytest.raises(HscaleError, match="row 0"):  # every row bad: the first problem
        load_jobbench(only_bad, left_out=[])
    with pytest.raises(HscaleError, match="no column rubric_json"):
        pq.write_table(pa.Table.from_pylist([{"task_id": "a", "prompt": "p"}]), only_bad)
        load_jobbench(only_bad)
