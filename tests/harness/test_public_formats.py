"""Public benchmark formats: PinchBench task files and the LLM-judged
"rubric" checker (against a fake OpenAI-compatible server on localhost)."""

from __future__ import annotations

import json
import os
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from hscale.errors import HscaleError
from hscale.harness import Env
from hscale.harness.tasks import (
    CheckerError,
    Task,
    judge_configured,
    load_pinchbench,
    run_checker,
)

# internal: tests the judge's prompt and parser
from hscale.harness.tasks._judge import parse_verdict
from tests.harness.helpers import judge_server

AUTOMATED = '''---
id: task_sum
name: Sum the numbers
category: files
grading_type: automated
timeout_seconds: 60
workspace_files:
  - path: numbers.txt
    content: "1 2 3"
  - notes.txt
---

## Prompt

Add the numbers in `numbers.txt` and write the total to `total.txt`.

---

## Expected Behavior

The agent writes 6 to total.txt and says so.

## Grading Criteria

- [ ] total.txt holds 6
- [ ] the answer says 6

## Automated Checks

```python
## a comment that looks like a heading
def grade(transcript: list, workspace_path: str) -> dict:
    from pathlib import Path

    total = Path(workspace_path) / "total.txt"
    said = transcript[-1]["message"]["content"][0]["text"]
    return {
        "file": 1.0 if total.exists() and total.read_text().strip() == "6" else 0.0,
        "answer": 1.0 if "6" in said else 0.0,
        "ignored": "not a number",
    }
```
'''

JUDGED = '''---
id: "task 02/judged"
category: writing
grading_type: llm_judge
split: train
---

## Prompt

Write a haiku about the sea into haiku.txt.

## Expected Behavior

Three lines, 5-7-5 syllables.

## Grading Criteria

- [ ] haiku.txt exists
* The poem is about the sea
1. It has three lines
'''

HYBRID = AUTOMATED.replace("id: task_sum", "id: task_hybrid").replace(
    "grading_type: automated", "grading_type: hybrid")


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


def _workspace(task: Task, root: Path, **extra: str) -> Path:
    for rel, text in {**task.input_files, **extra}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


# --------------------------------------------------------------------------- PinchBench


def test_pinchbench_automated_task_is_scored_by_its_grade_function(tmp_path):
    md = _write(tmp_path / "tasks", "task_sum.md", AUTOMATED)
    _write(tmp_path / "tasks", "notes.txt", "remember: integers only\n")
    [task] = load_pinchbench(md)
    assert task.task_id == "task_sum" and task.split == "eval" and task.category == "files"
    assert task.user_query.startswith("Add the numbers") and task.user_query.endswith("`.")
    assert task.input_files == {"numbers.txt": "1 2 3", "notes.txt": "remember: integers only\n"}
    assert task.grading_type == "automated" and task.metadata["timeout_seconds"] == 60
    script = Path(task.checker["path"])
    assert task.checker["kind"] == "script"
    assert script.parent == Path(os.environ["HSCALE_CACHE"]) / "pinchbench"
    assert load_pinchbench(md)[0].checker == task.checker  # content-addressed: same file

    right = _workspace(task, tmp_path / "right", **{"total.txt": "6\n"})
    wrong = _workspace(task, tmp_path / "wrong", **{"total.txt": "7\n"})
    assert run_checker(task.checker, right, "The total is 6.") == 1.0
    assert run_checker(task.checker, wrong, "The total is 7.") == 0.0
    assert run_checker(task.checker, right, "The total is 7.") == 0.5


def test_pinchbench_grade_that_crashes_is_a_named_checker_error(tmp_path):
    md = _write(tmp_path, "t.md", AUTOMATED.replace(
        '    total = Path(workspace_path) / "total.txt"', "    raise KeyError('boom')")
        .replace("  - notes.txt\n", ""))
    [task] = load_pinchbench(md)
    with pytest.raises(CheckerError, match="boom") as info:
        run_checker(task.checker, _workspace(task, tmp_path / "ws"), "6")
    assert f"{md.resolve()}" in str(info.value)  # tracebacks name the task file


def test_pinchbench_folder_loads_tasks_and_skips_readmes(tmp_path):
    folder = tmp_path / "tasks"
    _write(folder, "README.md", "# PinchBench tasks\n")
    _write(folder, "TASK_TEMPLATE.md", AUTOMATED.replace("task_sum", "task_XX_name"))
    _write(folder, "task_02.md", JUDGED)
    _write(folder, "task_03.md", HYBRID)
    _write(tmp_path / "assets", "notes.txt", "from the assets folder")  # PinchBench's layout
    judged, hybrid = load_pinchbench(folder)
    assert judged.task_id == "task-02-judged" and judged.metadata["source_id"] == "task 02/judged"
    assert judged.split == "train" and judged.category == "writing"
    assert judged.checker["kind"] == "rubric"
    assert [c["text"] for c in judged.checker["criteria"]] == [
        "haiku.txt exists", "The poem is about the sea", "It has three lines"]
    assert {c["weight"] for c in judged.checker["criteria"]} == {1.0}
    assert "Write a haiku" in judged.checker["context"]
    assert "5-7-5" in judged.checker["context"]
    assert judged.checker["scoring"] == "graded" and judged.checker["view"] == "pinchbench"
    assert "Grading Criteria bullets" in judged.metadata["judge_rubric"]
    # hybrid: the automated grader and the judge, 0.5 each (no grading_weights given)
    automated, judged_part = hybrid.checker["parts"]
    assert hybrid.checker["kind"] == "weighted" and hybrid.metadata["grading_weights"] == {
        "automated": 0.5, "llm_judge": 0.5}
    assert automated == {"weight": 0.5, "checker": {"kind": "script",
                                                    "path": automated["checker"]["path"]}}
    assert judged_part["weight"] == 0.5 and judged_part["checker"]["kind"] == "rubric"
    assert hybrid.input_files["notes.txt"] == "from the assets folder"


@pytest.mark.parametrize("text, where, match", [
    ("## Prompt\n\nhi\n", ":1", "no YAML front matter"),
    ("---\nid: x\ngrading_type: automated\n\n## Prompt\nhi\n", ":1", "not closed"),
    ("---\nid: x\ngrading_type: [automated\n---\n## Prompt\nhi\n", ":3", "not valid YAML"),
    ("---\nid: x\ngrading_type: llm_judge\nid: y\n---\n## Prompt\nhi\n", ":4", "duplicate key"),
    ("---\nid: x\ngrading_type: graded\n---\n## Prompt\nhi\n", ":3", "grading_type"),
    ("---\nname: x\ngrading_type: llm_judge\n---\n## Prompt\nhi\n", ":1", "needs an 'id'"),
    ("---\nid: x\ngrading_type: llm_judge\n---\n## Prompt\n\n## Grading Criteria\n- ok\n", "",
     "Prompt"),
    ("---\nid: x\ngrading_type: llm_judge\n---\n## Prompt\nhi\n", "", "Grading Criteria"),
    ("---\nid: x\ngrading_type: automated\n---\n## Prompt\nhi\n", ":3", "defining grade"),
    ("---\nid: x\ngrading_type: automated\n---\n## Prompt\nhi\n```python\ndef grade(:\n```\n",
     ":8", "not valid Python"),
    ("---\nid: x\ngrading_type: llm_judge\nworkspace_files:\n  - ok.txt\n  - ../secret.txt\n---\n"
     "## Prompt\nhi\n## Grading Criteria\n- ok\n", ":6", "leaves the workspace"),
    ("---\nid: x\ngrading_type: llm_judge\nworkspace_files:\n  - /etc/passwd\n---\n"
     "## Prompt\nhi\n## Grading Criteria\n- ok\n", ":5", "relative"),
    ("---\nid: x\ngrading_type: llm_judge\nworkspace_files:\n  - {path: /abs, content: x}\n---\n"
     "## Prompt\nhi\n## Grading Criteria\n- ok\n", ":5", "relative"),
    ("---\nid: x\ngrading_type: llm_judge\nworkspace_files:\n  - missing.txt\n---\n"
     "## Prompt\nhi\n## Grading Criteria\n- ok\n", ":5", "not found"),
    ("---\nid: x\ngrading_type: llm_judge\nsplit: test\n---\n"
     "## Prompt\nhi\n## Grading Criteria\n- ok\n", ":4", "split"),
])
def test_pinchbench_bad_files_give_one_line_errors_naming_the_file(tmp_path, text, where, match):
    _write(tmp_path, "ok.txt", "fine")
    _write(tmp_path.parent, "secret.txt", "do not read")
    md = _write(tmp_path, "bad.md", text)
    with pytest.raises(HscaleError, match=match) as info:
        load_pinchbench(md)
    line = info.value.one_line()
    assert line.startswith(f"{md}{where}:") and "\n" not in line and info.value.hint


def test_pinchbench_symlink_out_of_the_folder_is_refused(tmp_path):
    _write(tmp_path, "secret.txt", "do not read")
    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    md = _write(folder, "t.md", "---\nid: x\ngrading_type: llm_judge\nworkspace_files:\n"
                "  - link.txt\n---\n## Prompt\nhi\n## Grading Criteria\n- ok\n")
    with pytest.raises(HscaleError, match="not found"):
        load_pinchbench(md)


# --------------------------------------------------------------------------- JobBench
# (its reader's tests are in test_jobbench.py)


# --------------------------------------------------------------------------- rubric checker

RUBRIC = {"kind": "rubric", "context": "Name the capital of France.",
          "criteria": [{"text": "The answer names the capital", "weight": 3.0},
                       {"text": "The answer cites a source", "weight": 1.0}]}


@pytest.fixture
def no_judge(monkeypatch):
    for var in ("HSCALE_JUDGE_URL", "HSCALE_JUDGE_MODEL", "HSCALE_JUDGE_KEY",
                "HSCALE_JUDGE_TIMEOUT"):
        monkeypatch.delenv(var, raising=False)
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_rubric_without_a_judge_is_a_checker_error_and_scores_zero(tmp_path, no_judge):
    assert not judge_configured()
    with pytest.raises(CheckerError) as info:
        run_checker(RUBRIC, tmp_path, "Paris")
    assert info.value.short == "checker: rubric needs a judge (HSCALE_JUDGE_URL)"
    task = Task(task_id="t", user_query="capital?", checker=RUBRIC)
    with Env(task, root=tmp_path / "ws") as env:
        assert env.score("Paris") == 0.0
        assert env.checker_error == "checker: rubric needs a judge (HSCALE_JUDGE_URL)"


class _FakeJudge(BaseHTTPRequestHandler):
    """Says yes to the "names the capital" criterion and no to every other; records requests."""

    requests: list[dict] = []
    reply: str | None = None

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        question = body["messages"][-1]["content"]
        type(self).requests.append({"path": self.path, "body": body,
                                    "auth": self.headers.get("Authorization")})
        criterion = question.split("## Criterion\n", 1)[1].split("\n", 1)[0]
        verdict = "Yes." if "names the capital" in criterion else "No, it does not."
        data = json.dumps({"choices": [{"message": {"role": "assistant",
                                                    "content": self.reply or verdict}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture
def judge(no_judge):
    _FakeJudge.requests, _FakeJudge.reply = [], None
    with judge_server(_FakeJudge, no_judge, "fake-judge", url_tail="/v1/", key="sk-test"):
        yield _FakeJudge


def test_rubric_reward_is_the_weighted_share_of_yes(tmp_path, judge):
    assert judge_configured()
    (tmp_path / "answer.md").write_text("Paris is the capital.", encoding="utf-8")
    (tmp_path / "image.bin").write_bytes(b"\x00\x01binary")
    assert run_checker(RUBRIC, tmp_path, "Paris") == 0.75
    assert len(judge.requests) == 2
    for request in judge.requests:
        assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
        assert request["body"]["model"] == "fake-judge"
        question = request["body"]["messages"][-1]["content"]
        assert "### File: answer.md\nParis is the capital." in question
        assert "Paris" in question and "Name the capital of France." in question
        assert "image.bin" not in question


def test_rubric_judge_that_gives_no_verdict_is_a_checker_error(tmp_path, judge):
    judge.reply = "I cannot tell."
    with pytest.raises(CheckerError) as info:
        run_checker(RUBRIC, tmp_path, "Paris")
    assert info.value.short == "checker: judge gave no yes/no"


def test_rubric_unreachable_judge_is_a_checker_error(tmp_path, no_judge):
    no_judge.setenv("HSCALE_JUDGE_URL", "http://127.0.0.1:9/v1")
    no_judge.setenv("HSCALE_JUDGE_MODEL", "m")
    with pytest.raises(CheckerError) as info:
        run_checker(RUBRIC, tmp_path, "Paris")
    assert info.value.short == "checker: judge unreachable"


@pytest.mark.parametrize("reply, verdict", [
    ("yes", True), ("No.", False), ("**Yes** - it does", True), ("<think>no?</think> yes", True),
    ("The criterion is met: yes", True), ("maybe", None), ("it depends: yes and no", None),
    ("", None),
])
def test_parse_verdict(reply, verdict):
    assert parse_verdict(reply) is verdict


@pytest.mark.parametrize("spec, match", [
    ({"kind": "rubric", "criteria": []}, "non-empty 'criteria'"),
    ({"kind": "rubric", "criteria": [{"text": " "}]}, "criterion 0"),
    ({"kind": "rubric", "criteria": [{"text": "a", "weight": -1}]}, "weight"),
    ({"kind": "rubric", "criteria": [{"text": "a", "weight": True}]}, "weight"),
    ({"kind": "rubric", "criteria": [{"text": "a"}], "context": 3}, "context"),
])
def test_bad_rubric_specs_are_refused(spec, match):
    with pytest.raises(HscaleError, match=match):
        Task(task_id="t", user_query="q", checker=spec)
