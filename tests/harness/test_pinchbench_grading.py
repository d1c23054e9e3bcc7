"""PinchBench tasks score under hscale as PinchBench's own runner scores them.

Over the real task files (``shared/realtasks/pinchbench`` beside the checkout, read in
place, never copied): each task's checker, given hscale's canonical transcript, is compared
with a restatement of PinchBench's grading (``scripts/lib_grading.py`` and ``lib_tasks.py``
at commit 1f3d1df: the task's grade() on OpenClaw's session events, the mean of its dict,
``grading_weights`` 0.5/0.5 by default, the judge's total) on the OpenClaw events such a run
writes, built here by hand.
Judge parts go to a scripted OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import yaml

from hscale.errors import HscaleError
from hscale.harness import Env
from hscale.harness.tasks import (
    CheckerError,
    Task,
    check_spec,
    load_pinchbench,
    parse_scores,
    run_checker,
    uses_judge,
)

# internal: tests the judge's prompt and parser
from hscale.harness.tasks._judge import GRADED_PROMPT

# internal: tests PinchBench's grading helpers
from hscale.harness.tasks._pinchbench import MAX_ASSET_BYTES, judge_summary, openclaw_transcript
from tests.harness.helpers import judge_server

REAL = Path(__file__).resolve().parents[3] / "shared" / "realtasks" / "pinchbench"
TRANSCRIPT_GRADERS = ("task_08", "task_10", "task_13", "task_18")  # grade() reads the transcript


# --------------------------------------------------------------------------- scripted judge


class _JudgeHandler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        system, question = body["messages"][0]["content"], body["messages"][-1]["content"]
        self.server.requests.append({"system": system, "question": question})
        data = json.dumps({"choices": [{"message": {
            "role": "assistant", "content": self.server.script(system, question)}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture
def scripted_judge(monkeypatch):
    """A chat-completions server answering with ``server.script(system, question)`` (default:
    "no"); ``server.requests`` records what it was asked."""
    with judge_server(_JudgeHandler, monkeypatch, "scripted") as server:
        server.requests, server.script = [], lambda system, question: "no"
        yield server


# --------------------------------------------------------------------------- PinchBench, restated


def _pb_sections(body: str) -> dict[str, str]:
    """lib_tasks._parse_sections: '## ' lines split the body (inside code blocks too)."""
    sections, name, chunk = {}, None, []
    for line in body.split("\n"):
        heading = re.match(r"^##\s+(.+)$", line)
        if heading:
            if name:
                sections[name] = "\n".join(chunk).strip()
            name, chunk = heading.group(1), []
        elif name:
            chunk.append(line)
    if name:
        sections[name] = "\n".join(chunk).strip()
    return sections


def _pb_task(md: Path) -> tuple[dict, dict[str, str]]:
    match = re.match(r"^---\s*\n(.*?)\n---\s*\n(.*)$", md.read_text(encoding="utf-8"), re.S)
    return yaml.safe_load(match.group(1)), _pb_sections(match.group(2))


def _pb_judge_weights(sections: dict[str, str]) -> dict[str, float]:
    """Criterion name -> weight, as the LLM Judge Rubric section's headings state them."""
    return {name.strip(): float(weight) for name, weight in re.findall(
        r"^### Criterion \d+: (.+?) \(Weight: (\d+)%\)$", sections["LLM Judge Rubric"], re.M)}


def _pb_scores(sections: dict[str, str]) -> dict[str, float]:
    """The scores the scripted judge gives a rubric's criteria (varied, deterministic)."""
    return {name: (0.9, 0.7, 0.4, 0.8, 0.6)[i % 5]
            for i, name in enumerate(_pb_judge_weights(sections))}


def _pb_judge_total(sections: dict[str, str]) -> float:
    """The total a judge following the rubric gives: the scores weighted as the headings say."""
    weights, scores = _pb_judge_weights(sections), _pb_scores(sections)
    return sum(weights[n] * scores[n] for n in weights) / sum(weights.values())


def _pb_grade(md: Path, events: list, workspace: Path) -> float:
    """lib_grading.grade_task: automated = the mean of grade()'s numbers; llm_judge = the
    judge's total; hybrid = both combined with grading_weights (0.5 each by default)."""
    meta, sections = _pb_task(md)

    def automated() -> float:
        code = re.search(r"```python\s*(.*?)\s*```", sections["Automated Checks"], re.S).group(1)
        namespace: dict = {}
        exec(code, namespace)  # noqa: S102 (PinchBench execs the task's own code so)
        scores = namespace["grade"](events, str(workspace))
        values = [float(v) for v in (scores if isinstance(scores, dict) else {}).values()
                  if isinstance(v, (int, float))]
        return sum(values) / len(values) if values else 0.0

    kind = meta.get("grading_type", "automated")
    if kind == "automated":
        return automated()
    if kind == "llm_judge":
        return _pb_judge_total(sections)
    weights = meta.get("grading_weights") or {"automated": 0.5, "llm_judge": 0.5}
    auto, judge = float(weights.get("automated", 0.5)), float(weights.get("llm_judge", 0.5))
    return (automated() * auto + _pb_judge_total(sections) * judge) / (auto + judge)


def _pb_summary(events: list) -> str:
    """lib_grading._summarize_transcript: what PinchBench's judge is shown."""
    lines = []
    for event in events:
        msg = event["message"]
        if msg["role"] == "assistant":
            lines += [f"Tool: {i['name']}({json.dumps(i.get('arguments', {}))})"
                      for i in msg["content"] if i.get("type") == "toolCall"]
        elif msg["role"] == "toolResult" and msg["content"]:
            lines.append(f"Result: {str(msg['content'][0])[:200]}")
        elif msg["role"] == "user" and msg["content"]:
            lines.append(f"User: {msg['content'][0]}")
    return "\n".join(lines)


def _graded_reply(system: str, question: str, sections: dict[str, str]) -> str:
    """A judge's reply to a graded rubric request: a score per criterion, keyed by the
    heading's name as a judge writes it, and the total the rubric's weights give."""
    assert system == GRADED_PROMPT and "## Grading Rubric" in question
    return json.dumps({"scores": {f"Criterion {i + 1}: {name}": score for i, (name, score)
                                  in enumerate(_pb_scores(sections).items())},
                       "total": round(_pb_judge_total(sections), 6), "notes": "scripted"})


# --------------------------------------------------------------------------- runs

# A run: its steps as (turn text, canonical tool call, the OpenClaw tool call PinchBench's
# agent makes for it, the tool's output), the files the run leaves and the final answer.
RUNS: dict[str, dict] = {
    "task_00": {"steps": [], "final": "Hello, I'm ready!"},
    "task_08": {
        "steps": [("Let me read the notes.", ("read", {"path": "notes.md"}),
                   ("read", {"path": "notes.md"}), "# Project Phoenix ... Beta Release: June 1"),
                  ("", ("write", {"path": "answer.txt",
                                  "text": "The beta release deadline is June 1, 2024.\n"}),
                   ("write", {"path": "answer.txt",
                              "content": "The beta release deadline is June 1, 2024.\n"}),
                   "wrote answer.txt")],
        "files": {"answer.txt": "The beta release deadline is June 1, 2024.\n"},
        "final": "The beta release deadline is June 1, 2024 (saved to answer.txt)."},
    "task_09": {
        "steps": [("", ("write", {"path": "src/main.py", "text": 'print("Hello, world!")\n'}),
                   ("write", {"path": "src/main.py", "content": 'print("Hello, world!")\n'}),
                   "ok"),
                  ("", ("run", {"command": "printf '# My Project\\n' > README.md && printf "
                                           "'__pycache__/\\n' > .gitignore"}),
                   ("exec", {"command": "printf '# My Project\\n' > README.md && printf "
                                        "'__pycache__/\\n' > .gitignore"}), "")],
        "files": {"src/main.py": 'print("Hello, world!")\n', "README.md": "# My Project\n",
                  ".gitignore": "__pycache__/\n"},
        "final": "Created src/main.py, README.md and .gitignore."},
    "task_10": {
        "steps": [("I'll read the config first.", ("read", {"path": "config.json"}),
                   ("read", {"path": "config.json"}), '{"api": {"endpoint": "https://api..."}}'),
                  ("", ("write", {"path": "fetch_data.py", "text": "SCRIPT"}),
                   ("write", {"path": "fetch_data.py", "content": "SCRIPT"}), "ok"),
                  ("", ("write", {"path": "NOTES.md", "text": "NOTES"}),
                   ("write", {"path": "NOTES.md", "content": "NOTES"}), "ok")],
        "files": {"fetch_data.py": "SCRIPT", "NOTES.md": "NOTES"},
        "final": "Done: fetch_data.py calls the endpoint from config.json; see NOTES.md."},
    "task_12": {"steps": "EDIT_CONFIG", "final": "settings.json: localhost -> prod-db..."},
    "task_13": {
        "steps": [("I have no image tool; I'll draw one.",
                   ("run", {"command": "python3 draw.py robot_cafe.png"}),
                   ("exec", {"command": "python3 draw.py robot_cafe.png"}), "saved")],
        "files": {"robot_cafe.png": "\x89PNG\r\n\x1a\n\udcff\udcfe"},
        "final": "I generated the image of a robot reading in a cafe and saved the image to "
                 "robot_cafe.png."},
    "task_18": {
        "steps": [("", ("search", {"word": "observability"}),
                   ("exec", {"command": "grep -rnF -- observability ."}), "no matches"),
                  ("", ("write", {"path": "market_research.md", "text": "REPORT"}),
                   ("write", {"path": "market_research.md", "content": "REPORT"}), "ok")],
        "files": {"market_research.md": "REPORT"},
        "final": "The analysis is in market_research.md."},
    "task_21": {
        "steps": [("", ("run", {"command": "pdftotext openclaw_report.pdf -"}),
                   ("exec", {"command": "pdftotext openclaw_report.pdf -"}), "OpenClaw ..."),
                  ("", ("write", {"path": "answer.txt", "text": "ANSWERS"}),
                   ("write", {"path": "answer.txt", "content": "ANSWERS"}), "ok")],
        "files": {"answer.txt": "ANSWERS"},
        "final": "The answers are in answer.txt."},
    "task_22": {
        "steps": [("Saving it.", ("write", {"path": "memory/MEMORY.md", "text": "MEMORY"}),
                   ("write", {"path": "memory/MEMORY.md", "content": "MEMORY"}), "ok")],
        "files": {"memory/MEMORY.md": "MEMORY"},
        "final": "You are learning Rust, and your project is NeonDB."},
}
TEXTS = {
    "SCRIPT": "import json\nimport requests\n\nwith open('config.json') as f:\n"
              "    url = json.load(f)['api']['endpoint']\ntry:\n"
              "    print(requests.get(url, timeout=30).text)\n"
              "except requests.RequestException as exc:\n    print('failed:', exc)\n",
    "NOTES": "# Notes\n\nfetch_data.py reads config.json and GETs api.endpoint.\n",
    "REPORT": "# APM Market: Competitive Landscape\n\n## Executive Summary\nDatadog, New Relic, "
              "Dynatrace, Splunk and Grafana lead.\n\n## Datadog\nPer-host pricing.\n\n"
              "## New Relic\nPer-GB pricing, free tier.\n\n## Dynatrace\nSubscription cost.\n\n"
              "## Comparison\n| Vendor | Pricing |\n|---|---|\n| Datadog | $15 per host |\n\n"
              "## Market Trends\nOpenTelemetry, AI/ML and consolidation; cloud-native.\n",
    "ANSWERS": "5,705\n2,999\nAI & LLMs: 287\nSearch & Research: 253\nSKILL.md\n"
               "typed WebSocket API\nFebruary 7, 2026\n6\n",
    "MEMORY": "# Memory\n- Favorite language: Rust\n- Started: January 15, 2024\n"
              "- Mentor: Dr. Elena Vasquez (Stanford)\n- Project: NeonDB, a distributed "
              "key-value store\n- Secret phrase: purple elephant sunrise\n",
}


def _real_tasks() -> dict[str, tuple[Path, Task]]:
    """file stem prefix (``task_08``) -> (file, Task); task 18's and 19's ids differ from
    their file names, so tasks are keyed by file."""
    if not (REAL / "tasks").is_dir():
        pytest.skip(f"the real PinchBench sample is not at {REAL} (see SOURCES.md)")
    tasks = {}
    for md in sorted((REAL / "tasks").glob("task_*.md")):
        [task] = load_pinchbench(md)
        tasks[md.name[:7]] = (md, task)
    return tasks


@pytest.fixture(scope="module")
def real_tasks():
    return _real_tasks()


def _run(key: str, task: Task) -> tuple[list, list, dict[str, str], str]:
    """(canonical transcript, OpenClaw events, files left, final answer) of a good run."""
    run = RUNS[key]
    steps, files = run["steps"], {k: TEXTS.get(v, v) for k, v in run.get("files", {}).items()}
    if steps == "EDIT_CONFIG":  # task 12: read each config file, write it back edited
        steps = []
        for rel, text in task.input_files.items():
            new = (text.replace("http://localhost:3000", "https://api.example.com")
                   .replace("localhost", "prod-db.example.com").replace("myapp_dev", "myapp_prod")
                   .replace("myapp_test", "myapp_prod").replace('"debug"', '"warn"'))
            steps += [("", ("read", {"path": rel}), ("read", {"path": rel}), text),
                      ("", ("write", {"path": rel, "text": new}),
                       ("write", {"path": rel, "content": new}), "ok")]
            files[rel] = new
    canonical = [{"role": "user", "content": task.user_query}]
    events = [{"type": "message", "message": {"role": "user", "content": [
        {"type": "text", "text": task.user_query}]}}]
    for n, (text, (name, args), (oc_name, oc_args), output) in enumerate(steps, start=1):
        args = {k: TEXTS.get(v, v) for k, v in args.items()}
        oc_args = {k: TEXTS.get(v, v) for k, v in oc_args.items()}
        canonical += [{"role": "assistant", "content": text,
                       "tool_call": {"name": name, "args": args}},
                      {"role": "tool", "name": name, "ok": True, "content": output}]
        items = [{"type": "text", "text": text}] if text else []
        events += [{"type": "message", "message": {"role": "assistant", "content": [
                       *items, {"type": "toolCall", "id": f"call_{n}", "name": oc_name,
                                "arguments": oc_args}]}},
                   {"type": "message", "message": {
                       "role": "toolResult", "content": [{"type": "text", "text": output}],
                       "toolCallId": f"call_{n}", "toolName": oc_name, "isError": False}}]
    canonical.append({"role": "assistant", "content": run["final"]})
    events.append({"type": "message", "message": {"role": "assistant", "content": [
        {"type": "text", "text": run["final"]}]}})
    return canonical, events, files, run["final"]


def _score(task: Task, workspace: Path, answer: str, transcript: list) -> float:
    context = {"task_id": task.task_id, "user_query": task.user_query,
               "metadata": task.metadata, "transcript": transcript}
    return run_checker(task.checker, workspace, answer, timeout=30, context=context)


def _write_files(workspace: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_bytes(text.encode("utf-8", "surrogateescape"))


# --------------------------------------------------------------------------- the real sample


def test_every_real_task_loads_with_pinchbench_s_weights(real_tasks):
    assert len(real_tasks) == 22
    kinds = {"automated": 0, "llm_judge": 0, "hybrid": 0}
    for key, (md, task) in real_tasks.items():
        meta, sections = _pb_task(md)
        kinds[meta["grading_type"]] += 1
        assert task.grading_type == meta["grading_type"]
        assert task.user_query == sections["Prompt"].removesuffix("---").strip(), key
        judge = task.checker
        if meta["grading_type"] == "hybrid":
            weights = meta.get("grading_weights") or {"automated": 0.5, "llm_judge": 0.5}
            auto, judge_part = task.checker["parts"]
            assert (auto["weight"], judge_part["weight"]) == (
                weights["automated"], weights["llm_judge"]), key
            assert auto["checker"]["kind"] == "script" and uses_judge(task.checker)
            assert task.metadata["grading_weights"] == weights
            judge = judge_part["checker"]
        if meta["grading_type"] == "automated":
            assert task.checker["kind"] == "script" and not uses_judge(task.checker)
            continue
        assert judge["kind"] == "rubric" and judge["scoring"] == "graded"
        assert judge["view"] == "pinchbench"
        assert {c["name"]: c["weight"] for c in judge["criteria"]} == _pb_judge_weights(
            sections), key
        # each criterion is its whole block of the section, heading and score levels
        assert "\n\n".join(c["text"] for c in judge["criteria"]) == sections[
            "LLM Judge Rubric"].removesuffix("---").strip(), key
        assert sections["Expected Behavior"].removesuffix("---").strip() in judge["context"]
        assert "LLM Judge Rubric" in task.metadata["judge_rubric"]
    assert kinds == {"automated": 9, "llm_judge": 6, "hybrid": 7}


def test_binary_assets_reach_the_workspace_byte_for_byte(real_tasks, tmp_path):
    for key, dest, source in [
            ("task_19", "company_expenses.xlsx", "company_expenses.xlsx"),
            ("task_21", "openclaw_report.pdf",
             "OpenClaw Agent Use Cases and Gap Analysis for PinchBench.pdf")]:
        task = real_tasks[key][1]
        assert isinstance(task.input_files[dest], str)
        with Env(task, root=tmp_path / key) as env:
            assert (env.workspace / dest).read_bytes() == (REAL / "assets" / source).read_bytes()


def test_untouched_workspace_and_empty_answer_score_as_pinchbench(real_tasks, tmp_path,
                                                                  scripted_judge):
    """The agent said nothing: OpenClaw's session holds the user message only."""
    checked = 0
    for key, (md, task) in real_tasks.items():
        sections = _pb_task(md)[1]
        scripted_judge.script = lambda s, q, sections=sections: _graded_reply(s, q, sections)
        transcript = [{"role": "user", "content": task.user_query},
                      {"role": "assistant", "content": ""}]
        events = [{"type": "message", "message": {"role": "user", "content": [
            {"type": "text", "text": task.user_query}]}}]
        assert openclaw_transcript(transcript, "") == events
        with Env(task, root=tmp_path / key) as env:
            ours = _score(task, env.workspace, "", transcript)
            theirs = _pb_grade(md, events, env.workspace)
        assert ours == pytest.approx(theirs, abs=1e-9), key
        checked += 1
    assert checked == 22
    assert real_tasks["task_00"][1].checker["kind"] == "script"  # the sanity task: 0, as theirs
    with Env(real_tasks["task_00"][1], root=tmp_path / "sanity") as env:
        assert _score(real_tasks["task_00"][1], env.workspace, "", []) == 0.0


@pytest.mark.parametrize("key", sorted(RUNS))
def test_good_runs_score_as_pinchbench(real_tasks, tmp_path, scripted_judge, key):
    md, task = real_tasks[key]
    sections = _pb_task(md)[1]
    scripted_judge.script = lambda s, q: _graded_reply(s, q, sections)
    canonical, events, files, final = _run(key, task)
    assert openclaw_transcript(canonical, final) == events  # the shape PinchBench's graders read
    with Env(task, root=tmp_path) as env:
        _write_files(env.workspace, files)
        ours = _score(task, env.workspace, final, canonical)
        theirs = _pb_grade(md, events, env.workspace)
    assert ours == pytest.approx(theirs, abs=1e-9)
    if task.grading_type == "hybrid":  # the judge saw the transcript as PinchBench's does
        [request] = scripted_judge.requests
        assert _pb_summary(events) in request["question"]
        assert final not in request["question"]  # PinchBench's judge never sees the reply


def test_transcript_criteria_score_as_under_openclaw(real_tasks, tmp_path):
    """Task 08's read_notes looks for read_file/readFile with params.files, which OpenClaw's
    read tool never writes: 0 under PinchBench's runner, so 0 here (4 of 5 criteria)."""
    md, task = real_tasks["task_08"]
    canonical, events, files, final = _run("task_08", task)
    with Env(task, root=tmp_path) as env:
        _write_files(env.workspace, files)
        assert _score(task, env.workspace, final, canonical) == pytest.approx(0.8)
        namespace: dict = {}
        exec(re.search(r"```python\s*(.*?)\s*```", _pb_task(md)[1]["Automated Checks"],  # noqa: S102
                       re.S).group(1), namespace)
        assert namespace["grade"](events, str(env.workspace))["read_notes"] == 0.0
        renamed = json.loads(json.dumps(events).replace(
            '"name": "read", "arguments": {"path"', '"name": "read_file", "params": {"files"'))
        renamed = json.loads(json.dumps(renamed).replace('"files": "notes.md"',
                                                          '"files": ["notes.md"]'))
        assert namespace["grade"](renamed, str(env.workspace))["read_notes"] == 1.0


def test_sanity_task_needs_an_assistant_message(real_tasks, tmp_path):
    task = real_tasks["task_00"][1]
    with Env(task, root=tmp_path) as env:
        user = {"role": "user", "content": task.user_query}
        assert _score(task, env.workspace, "Hello, I'm ready!", []) == 1.0
        assert _score(task, env.workspace, "", [user, {"role": "assistant", "content": " \n"}]) == 0
        # a turn that only calls a tool still is an assistant message, as in OpenClaw's session
        assert _score(task, env.workspace, "", [
            user, {"role": "assistant", "content": "", "tool_call": {"name": "list", "args": {}}},
            {"role": "tool", "name": "list", "ok": True, "content": ""},
            {"role": "assistant", "content": ""}]) == 1.0


def test_asset_limit_and_bad_tasks_left_out(real_tasks, tmp_path):
    left: list = []
    tasks = load_pinchbench(REAL / "tasks", max_asset_bytes=20_000, left_out=left)
    assert len(tasks) == 21 and [w for w, _ in left] == [
        str(REAL / "tasks" / "task_21_openclaw_comprehension.md")]
    assert left[0][1].startswith("line 8: workspace file ") and "75902 bytes" in left[0][1]
    assert "\n" not in left[0][1]
    with pytest.raises(HscaleError, match="75902 bytes, over the 20000 allowed"):
        load_pinchbench(REAL / "tasks", max_asset_bytes=20_000)
    assert MAX_ASSET_BYTES == 8 << 20 and len(load_pinchbench(REAL / "tasks")) == 22


# --------------------------------------------------------------------------- synthetic files

TASK = """---
id: {id}
grading_type: {kind}
{extra}---

## Prompt

Write the total of numbers.txt to total.txt.

## Expected Behavior

total.txt holds 6.

## Grading Criteria

- [ ] total.txt holds 6
- [ ] the reply says so

## Automated Checks

```python
def grade(transcript, workspace_path):
    from pathlib import Path
    total = Path(workspace_path) / "total.txt"
    return {{"file": total.exists() and total.read_text().strip() == "6", "no": "x"}}
```
{rubric}"""
RUBRIC = """
## LLM Judge Rubric

Judge the arithmetic.

### Criterion 1: Correct total (Weight: 75%)
**Score 1.0**: 6.

### Criterion 2: Clear reply (Weight: 25%)
**Score 1.0**: says 6.
"""


def _md(folder: Path, name: str, kind: str = "hybrid", extra: str = "",
        rubric: str = RUBRIC) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(TASK.format(id=name, kind=kind, extra=extra, rubric=rubric),
                    encoding="utf-8")
    return path


def test_hybrid_combines_with_grading_weights(tmp_path, scripted_judge):
    md = _md(tmp_path, "t", extra="grading_weights:\n  automated: 0.25\n  llm_judge: 0.75\n")
    [task] = load_pinchbench(md)
    assert [p["weight"] for p in task.checker["parts"]] == [0.25, 0.75]
    judge = task.checker["parts"][1]["checker"]
    assert [(c["name"], c["weight"]) for c in judge["criteria"]] == [
        ("Correct total", 75.0), ("Clear reply", 25.0)]
    assert "## Rubric notes\nJudge the arithmetic." in judge["context"]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "total.txt").write_text("6\n")
    scripted_judge.script = lambda s, q: '```json\n{"scores": {"correct_total": 1.0, ' \
                                         '"Clear reply": {"score": 0.2}}, "total": 0.9}\n```'
    # automated: mean of {True, "x" skipped} = 1.0; judge: its total, as PinchBench takes it
    assert _score(task, workspace, "6", []) == pytest.approx(0.25 * 1.0 + 0.75 * 0.9)
    question = scripted_judge.requests[0]["question"]
    assert "### Criterion 1: Correct total (Weight: 75%)" in question
    assert '"Correct total", "Clear reply"' in question
    scripted_judge.script = lambda s, q: "Overall score: 0.5"  # prose: its total counts
    assert _score(task, workspace, "6", []) == pytest.approx(0.25 + 0.75 * 0.5)
    scripted_judge.script = lambda s, q: "I cannot grade this."
    scripted_judge.script = lambda s, q: '{"scores": {"a": 1.0, "b": {"score": 0.5}}}'
    assert _score(task, workspace, "6", []) == pytest.approx(0.25 + 0.75 * 0.75)  # plain mean
    scripted_judge.script = lambda s, q: "I cannot grade this."
    with pytest.raises(CheckerError, match="no total") as info:
        _score(task, workspace, "6", [])
    assert info.value.short == "checker: judge gave no scores"


def test_default_weights_and_bullet_fallback(tmp_path, scripted_judge):
    [task] = load_pinchbench(_md(tmp_path, "t", rubric=""))
    assert [p["weight"] for p in task.checker["parts"]] == [0.5, 0.5]
    assert "no '## LLM Judge Rubric' section" in task.metadata["judge_rubric"]
    judge = task.checker["parts"][1]["checker"]
    assert [(c["text"], c["weight"]) for c in judge["criteria"]] == [
        ("total.txt holds 6", 1.0), ("the reply says so", 1.0)]
    scripted_judge.script = lambda s, q: json.dumps({"scores": {"Criterion 1": 1, "2": 0.5}})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert _score(task, workspace, "", []) == pytest.approx(0.5 * 0.0 + 0.5 * 0.75)
    [zero] = load_pinchbench(_md(tmp_path / "z", "z", extra="grading_weights:\n  automated: 0\n"
                                 "  llm_judge: 0\n"))
    assert [p["weight"] for p in zero.checker["parts"]] == [0.5, 0.5]  # PinchBench's rule


@pytest.mark.parametrize("extra, rubric, match", [
    ("grading_weights: 0.5\n", RUBRIC, "grading_weights must map"),
    ("grading_weights:\n  automated: -1\n", RUBRIC, "grading_weights.automated -1"),
    ("", RUBRIC.replace(" (Weight: 25%)", ""), "Clear reply' gives no"),
    ("", RUBRIC.replace("(Weight: 25%)", "(Weight: 0%)"), "weight 0.0"),
])
def test_bad_hybrid_files_are_one_line_errors(tmp_path, extra, rubric, match):
    md = _md(tmp_path, "t", extra=extra, rubric=rubric)
    with pytest.raises(HscaleError, match=match) as info:
        load_pinchbench(md)
    assert info.value.one_line().startswith(str(md)) and "\n" not in info.value.one_line()


def test_one_bad_file_is_left_out_not_the_set(tmp_path):
    folder = tmp_path / "tasks"
    _md(folder, "good")
    _md(folder, "missing", extra="workspace_files:\n  - nowhere.csv\n")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "big.bin").write_bytes(b"\x00\xff" * 600)
    _md(folder, "big", extra="workspace_files:\n  - big.bin\n")
    _md(folder, "zz_again").write_text(_md(folder, "good").read_text())  # the same id twice
    with pytest.raises(HscaleError, match="big.bin"):
        load_pinchbench(folder, max_asset_bytes=1000)
    left: list = []
    tasks = load_pinchbench(folder, max_asset_bytes=1000, left_out=left)
    assert [t.task_id for t in tasks] == ["good"]
    assert [Path(w).name for w, _ in left] == ["big.md", "missing.md", "zz_again.md"]
    big, missing, again = (message for _, message in left)
    assert again.startswith("task id 'good' is also ")
    assert big.startswith("line 5: workspace file 'big.bin' is 1200 bytes, over the 1000")
    assert missing.startswith("line 5: workspace file 'nowhere.csv' not found")
    [task] = load_pinchbench(folder / "big.md", max_asset_bytes=2000)
    assert task.input_files["big.bin"].encode("utf-8", "surrogateescape") == b"\x00\xff" * 600
    with pytest.raises(HscaleError, match="nowhere.csv"):  # every file bad: the first problem
        load_pinchbench(folder / "missing.md", left_out=[])
    with pytest.raises(HscaleError, match="max_asset_bytes"):
        load_pinchbench(folder, max_asset_bytes=0)


def test_canonical_tools_become_openclaw_s(tmp_path):
    canonical = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_call": {"name": "list", "args": {}}},
        {"role": "tool", "name": "list", "ok": True, "content": "a.txt"},
        {"role": "assistant", "content": "x", "tool_call": {"name": "search",
                                                            "args": {"word": "it's"}}},
        {"role": "tool", "name": "search", "ok": False, "content": "no such word"},
        {"role": "assistant", "content": "", "tool_call": {"name": "calc",
                                                           "args": {"expr": "2 * 3"}}},
        {"role": "tool", "name": "calc", "ok": True, "content": "6"},
        {"role": "assistant", "content": "", "tool_call": {"name": "run",
                                                           "args": {"command": "ls -la"}}},
        {"role": "tool", "name": "run", "ok": True, "content": "total 0"},
        {"role": "assistant", "content": ""},
    ]
    events = openclaw_transcript(canonical, "ignored: the transcript is given")
    calls = [item for e in events if e["message"]["role"] == "assistant"
             for item in e["message"]["content"] if item["type"] == "toolCall"]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("exec", {"command": "find . -type f"}),
        ("exec", {"command": "grep -rnF -- 'it'\"'\"'s' ."}),
        ("exec", {"command": "python3 -c 'print(2 * 3)'"}),
        ("exec", {"command": "ls -la"})]
    results = [e["message"] for e in events if e["message"]["role"] == "toolResult"]
    assert [(r["toolCallId"], r["toolName"], r["isError"]) for r in results] == [
        ("call_1", "exec", False), ("call_2", "exec", True), ("call_3", "exec", False),
        ("call_4", "exec", False)]
    assert events[-1]["message"]["role"] == "toolResult"  # the empty last turn: no message
    assert judge_summary(canonical).splitlines()[:3] == [
        "User: {'type': 'text', 'text': 'go'}", 'Tool: exec({"command": "find . -type f"})',
        "Result: {'type': 'text', 'text': 'a.txt'}"]
    assert openclaw_transcript([], "hi") == [{"type": "message", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "hi"}]}}]
    assert openclaw_transcript([], "") == []


@pytest.mark.parametrize("reply, found", [
    ('{"scores": {"a": 1}, "total": 1}', {"scores": {"a": 1}, "total": 1}),
    ('Here: ```json\n{"total": 0.4}\n``` done', {"total": 0.4}),
    ('<think>{"scores": {}}</think> {"x": 1} then {"scores": {"a": 0.5}}',
     {"scores": {"a": 0.5}}),
    ("Total: 0.72 overall", {"total": 0.72}),
    ("no json here", {}),
])
def test_parse_scores(reply, found):
    assert parse_scores(reply) == found


@pytest.mark.parametrize("spec, match", [
    ({"kind": "weighted"}, "non-empty 'parts'"),
    ({"kind": "weighted", "parts": [{"weight": 1}]}, "part 0 needs"),
    ({"kind": "weighted", "parts": [{"weight": -1, "checker": {"kind": "answer",
                                                               "expected": "x"}}]},
     "part 0 has weight -1"),
    ({"kind": "weighted", "parts": [{"weight": True, "checker": {"kind": "answer",
                                                                 "expected": "x"}}]},
     "part 0 has weight True"),
    ({"kind": "weighted", "parts": [{"weight": 0, "checker": {"kind": "answer",
                                                              "expected": "x"}}]},
     "sum to 0"),
    ({"kind": "weighted", "parts": [{"weight": 1, "checker": {"kind": "weighted",
                                                              "parts": []}}]},
     "itself weighted"),
    ({"kind": "weighted", "parts": [{"weight": 1, "checker": {"kind": "nope"}}]},
     "weighted part 0: unknown checker kind"),
    ({"kind": "rubric", "criteria": [{"text": "a"}], "scoring": "most"}, "'scoring' 'most'"),
    ({"kind": "rubric", "criteria": [{"text": "a"}], "view": "eyes"}, "'view' 'eyes'"),
    ({"kind": "rubric", "criteria": [{"text": "a", "name": ""}]}, "'name'"),
])
def test_bad_weighted_and_rubric_specs_are_one_line_errors(spec, match):
    with pytest.raises(HscaleError, match=match) as info:
        check_spec(spec)
    assert "\n" not in info.value.one_line()


def test_weighted_checker_is_the_weighted_mean_of_its_parts(tmp_path):
    (tmp_path / "out.txt").write_text("plum")
    spec = {"kind": "weighted", "parts": [
        {"weight": 3, "checker": {"kind": "answer", "expected": "plum", "target": "file"}},
        {"weight": 1, "checker": {"kind": "answer", "expected": "plum"}}]}
    assert check_spec(spec)["parts"][0] == {"weight": 3.0, "checker": {
        "kind": "answer", "expected": "plum", "target": "file", "file": "out.txt"}}
    assert run_checker(spec, tmp_path, "pear") == 0.75
    assert run_checker(spec, tmp_path, "plum") == 1.0
