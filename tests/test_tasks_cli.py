"""``hscale tasks list|show|check`` end to end, as a user runs it (in process, tests.cli): on
the example task set, on broken copies of it, and on each task-list format whose kind it
guesses."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

# internal: tests the runner's limits and hashing
from hscale.harness._task_sources import content_hash
from hscale.harness.tasks import load_tasks, write_tasks
from tests.cli import Result
from tests.cli import hscale as run_cli

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "experiments" / "examples" / "tasks"
JUDGE_VARS = ("HSCALE_JUDGE_URL", "HSCALE_JUDGE_MODEL", "HSCALE_JUDGE_KEY")


def hscale(*args: str) -> Result:
    return run_cli("tasks", *args, env=dict.fromkeys(JUDGE_VARS))


def assert_user_error(result: Result, *words: str) -> None:
    assert result.returncode == 2, result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def problems(result: Result) -> list[str]:
    """The report's problem lines (its last line is the summary)."""
    assert "Traceback" not in result.stderr, result.stderr
    return [line for line in result.stdout.strip().splitlines()[:-1]
            if not line.startswith("note:")]


def test_tasks_is_a_listed_command():
    result = run_cli("--help")
    assert result.returncode == 0 and "tasks" in result.stdout


def test_list_counts_splits_categories_and_hash():
    result = hscale("list", TASKS)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "(clawgym): 30 tasks, 20 train, 10 eval" in " ".join(out.split())
    for category in ("files", "notes", "arithmetic"):
        assert category in out
    assert "grading types: code 30" in out
    assert f"content {content_hash(TASKS)[:12]}" in out


def test_list_json_is_machine_readable():
    result = hscale("list", TASKS, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["kind"] == "clawgym" and data["tasks"] == 30
    assert data["splits"] == {"train": 20, "eval": 10}
    assert set(data["categories"]) == {"files", "notes", "arithmetic"}
    assert sum(c["train"] for c in data["categories"].values()) == 20
    assert sum(c["eval"] for c in data["categories"].values()) == 10
    assert data["grading_types"] == {"code": 30}
    assert data["content_hash"] == content_hash(TASKS)


def test_list_with_a_split_rule():
    everything = json.loads(hscale("list", TASKS, "--json", "--split", "eval").stdout)
    assert everything["splits"] == {"train": 0, "eval": 30}
    share = json.loads(hscale("list", TASKS, "--json", "--split", "0.3").stdout)
    assert sum(share["splits"].values()) == 30 and 0 < share["splits"]["eval"] < 30
    assert_user_error(hscale("list", TASKS, "--split", "1.5"), "split")


def test_show_renders_the_first_model_view():
    task = min(load_tasks(TASKS), key=lambda t: t.task_id)
    result = hscale("show", TASKS)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"task {task.task_id}" in out and f"query: {task.user_query}" in out
    for rel, text in task.input_files.items():
        assert f"{rel} ({len(text.encode())} bytes)" in out
    assert "checker: script" in out and "reward.py" in out
    assert "first model view under S0-T0-O0-C0-W0" in out
    assert "[system]" in out and f"[user] {task.user_query}" in out


def test_show_a_chosen_task_under_another_harness():
    base = hscale("show", TASKS, "--task", "ex-notes-02")
    other = hscale("show", TASKS, "--task", "ex-notes-02", "--harness", "S2-T2-O2-C2-W2")
    assert base.returncode == other.returncode == 0, base.stderr + other.stderr
    assert "task ex-notes-02" in other.stdout and "under S2-T2-O2-C2-W2" in other.stdout
    assert base.stdout.split("[system]")[1] != other.stdout.split("[system]")[1]
    assert_user_error(hscale("show", TASKS, "--task", "nope"), "nope", "hint")
    assert_user_error(hscale("show", TASKS, "--harness", "S9-T9"), "S9-T9", "hint")


def test_check_passes_on_the_examples():
    result = hscale("check", TASKS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().splitlines() == ["0 problems in 30 tasks"]


def test_check_reports_exactly_the_two_broken_tasks(tmp_path):
    tasks = tmp_path / "tasks"
    shutil.copytree(TASKS, tasks)
    entry = tasks / "task_0003" / "data_entry.json"
    entry.write_text(json.dumps({k: v for k, v in json.loads(entry.read_text()).items()
                                 if k != "user_query"}))
    (tasks / "task_0017" / "reward" / "reward.py").write_text("print('all good')\n")
    result = hscale("check", tasks)
    assert result.returncode == 2
    found = problems(result)
    assert len(found) == 2, result.stdout
    assert found[0].startswith("task_0003") and "user_query" in found[0]
    assert found[1].startswith("task_0017") and "not a number" in found[1]
    assert result.stdout.strip().splitlines()[-1] == "2 problems in 30 tasks"
    assert_user_error(hscale("list", tasks, "--strict"), "user_query", "hscale tasks check")
    listed = hscale("list", tasks)  # the task that cannot load is left out, and said so
    assert listed.returncode == 0 and "29 tasks" in listed.stdout
    assert "1 task left out" in listed.stderr and "task_0003" in listed.stderr
    assert "user_query" in listed.stderr and "--strict" in listed.stderr


def test_check_reports_duplicate_ids_and_train_eval_twins(tmp_path):
    tasks = tmp_path / "tasks"
    for name in ("task_0001", "task_0002"):
        shutil.copytree(TASKS / "task_0001", tasks / name)
    result = hscale("check", tasks)
    assert result.returncode == 2
    assert problems(result) == ["task_0002: task id 'ex-files-01' is also task_0001's"]
    twin = tasks / "task_0002" / "data_entry.json"
    twin.write_text(json.dumps({**json.loads(twin.read_text()), "task_id": "b",
                                "split": "eval"}))
    found = problems(hscale("check", tasks))
    assert len(found) == 1 and "has the query and files of train task" in found[0], found


def test_check_one_task_folder(tmp_path):
    result = hscale("check", TASKS / "task_0005")
    assert result.returncode == 0 and result.stdout.strip() == "0 problems in 1 task"


def test_jsonl_bad_rows_are_reported_per_row(tmp_path):
    good = load_tasks(TASKS)[:3]
    path = write_tasks(good, tmp_path / "tasks.jsonl")
    lines = path.read_text().splitlines()
    broken = json.loads(lines[1])
    del broken["user_query"]
    path.write_text("\n".join([lines[0], json.dumps(broken), "{not json", lines[2]]) + "\n")
    listed = hscale("list", path)
    assert_user_error(listed, "tasks.jsonl: line", "hscale tasks check")
    result = hscale("check", path)
    assert result.returncode == 2
    found = problems(result)
    assert len(found) == 2 and found[0].startswith("line 2") and found[1].startswith("line 3")
    assert result.stdout.strip().splitlines()[-1] == "2 problems in 4 tasks"


def test_parquet_task_list_and_jobbench_are_told_apart(tmp_path):
    lst = write_tasks(load_tasks(TASKS)[:4], tmp_path / "tasks.parquet")
    data = json.loads(hscale("list", lst, "--json").stdout)
    assert data["kind"] == "parquet" and data["tasks"] == 4
    assert hscale("check", lst).returncode == 0
    reference = tmp_path / "dataset" / "Chefs" / "task1" / "menu.txt"
    reference.parent.mkdir(parents=True)
    reference.write_text("soup")
    row = {"task_id": "chef-1", "occupation": "Chefs", "task_num": 1, "prompt": "Plan a menu.",
           "reference_files": json.dumps(["dataset/Chefs/task1/menu.txt"]),
           "rubric_json": json.dumps({"rubrics": [{"rubric": "Menu", "weight": 1,
                                                   "criterion": ["Has a starter"]}]}),
           "task_card": ""}
    jobs = tmp_path / "jobs.parquet"
    pq.write_table(pa.Table.from_pylist([row]), jobs)
    data = json.loads(hscale("list", jobs, "--json").stdout)
    assert data["kind"] == "jobbench" and data["categories"] == {"Chefs": {"train": 0,
                                                                           "eval": 1}}
    checked = hscale("check", jobs)
    assert checked.returncode == 0, checked.stdout
    assert "1 rubric checker not run: no LLM judge" in checked.stdout
    bad = [{**row, "task_id": "chef-2", "rubric_json": "{not json"},
           {**row, "task_id": "chef-3", "reference_files": json.dumps(["../../etc/passwd"])}]
    pq.write_table(pa.Table.from_pylist([row, *bad]), jobs)
    checked = hscale("check", jobs)
    lines = checked.stdout.strip().splitlines()
    assert checked.returncode == 2 and lines[-1] == "2 problems in 3 tasks", lines
    assert any("row 1" in line and "rubric_json" in line for line in lines), lines
    assert any("row 2" in line for line in lines), lines


PINCH = """---
id: {id}
category: files
grading_type: automated
workspace_files:
  - path: numbers.txt
    content: "1 2 3"
---

## Prompt

Add the numbers in numbers.txt.

## Grading Criteria

- [ ] the total is right

```python
def grade(transcript, workspace_path):
    {body}
```
"""


@pytest.mark.parametrize("as_folder", [True, False])
def test_pinchbench_files_are_guessed_and_checked_one_by_one(tmp_path, as_folder):
    good = tmp_path / "good.md"
    good.write_text(PINCH.format(id="good", body="return {'total': 0.0}"))
    (tmp_path / "README.md").write_text("# not a task\n")
    if not as_folder:
        assert hscale("check", good).returncode == 0
        return
    (tmp_path / "crash.md").write_text(PINCH.format(id="crash", body="raise ValueError('x')"))
    (tmp_path / "bad.md").write_text("---\nid: bad\ngrading_type: graded\n---\n## Prompt\nhi\n")
    result = hscale("check", tmp_path)
    assert result.returncode == 2
    found = problems(result)
    assert [line.split(":")[0] for line in found] == ["bad.md", "crash.md"], found
    assert result.stdout.strip().splitlines()[-1] == "2 problems in 3 tasks"


def test_paths_that_are_no_task_set_are_one_line_errors(tmp_path):
    assert_user_error(hscale("check", tmp_path / "missing"), "no such file")
    (tmp_path / "notes.txt").write_text("x")
    assert_user_error(hscale("list", tmp_path / "notes.txt"), "--kind")
    assert_user_error(hscale("check", TASKS, "--kind", "csv"), "csv", "--kind")
    assert_user_error(hscale("check", TASKS, "--timeout", "0"), "timeout")
