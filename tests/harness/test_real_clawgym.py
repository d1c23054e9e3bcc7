"""Real ClawGym tasks (ClawGym-Agents ``RL/data``, Apache-2.0, read from the folder beside the
project): every reward script runs as ClawGym's runner runs it, with no checker error, and
hscale's reward equals a re-statement of that runner, in every containment this machine
gives (the workspace mounted at /root/.openclaw/workspace, or the path mapped). A few tasks
are solved by hand through hscale's tools (``write``, and ``run`` where code must run) and
score 1.0 both ways."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from hscale.harness import Env, ToolCall, open_benchmark
from hscale.harness.tasks import load_tasks

# internal: tests the jail's escape probe
from hscale.harness.tasks._jail import probe

REAL = Path(__file__).resolve().parents[3] / "shared" / "realtasks" / "clawgym"
MOUNT = "/root/.openclaw/workspace"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason=f"no real ClawGym tasks at {REAL}")


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(REAL)


def _runner_reward(task, workspace: Path) -> float:
    """ClawGym's runner, restated: reward/ copied into a copy of the workspace, the script's
    path to the workspace pointing at that copy, ``bash reward.sh`` from / with no argument
    and a 120 s limit; the last non-empty output line as a number, 0 for a non-zero exit or
    no number."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "workspace"
        shutil.copytree(workspace, copy)
        shutil.copytree(Path(task.checker["path"]).parent, copy / "reward", dirs_exist_ok=True)
        script = copy / "reward" / "reward.sh"
        script.write_text(script.read_text().replace(MOUNT, str(copy)))
        done = subprocess.run(["bash", str(script)], cwd="/", capture_output=True, text=True,
                              timeout=120, env={"PATH": os.environ["PATH"]})
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        return 0.0
    try:
        return float(lines[-1])
    except ValueError:
        return 0.0


def test_every_real_task_loads_with_the_runners_layout(tasks):
    assert len(tasks) == len([p for p in REAL.iterdir() if p.name.startswith("task_")]) == 100
    assert {t.checker.get("mount") for t in tasks} == {MOUNT}


@pytest.mark.parametrize("kind, every", [
    pytest.param("bubblewrap", 1, marks=pytest.mark.slow, id="bubblewrap-all"),
    ("bubblewrap", 5), ("namespaces", 5), ("limits", 5)])
def test_every_reward_script_runs_and_scores_as_the_runner(tasks, kind, every, monkeypatch):
    """Each containment on every fifth task; the default one (bubblewrap) on all 100 with
    the slow tests."""
    if probe(kind).kind != kind:
        pytest.skip(f"{kind} containment does not work here")
    monkeypatch.setenv("HSCALE_CONTAINMENT", kind)
    sample = tasks[::every]
    errors, unequal = [], []
    for task in sample:
        with Env(task) as env:
            reward = env.score("")
            if env.checker_error:
                errors.append(f"{task.task_id}: {env.checker_error}")
            untouched = Path(tempfile.mkdtemp())
            try:
                for rel, data in task.input_files.items():
                    (untouched / rel).parent.mkdir(parents=True, exist_ok=True)
                    (untouched / rel).write_bytes(data if isinstance(data, bytes)
                                                  else data.encode())
                if reward != _runner_reward(task, untouched):
                    unequal.append(task.task_id)
            finally:
                shutil.rmtree(untouched)
    assert errors == [] and unequal == []


# ------------------------------------------------------------------ tasks solved by hand

# task_0540: format the transcripts with a script run in the workspace (a heredoc, so that
# output/ holds only the three files the prompt allows).
_FORMAT_TRANSCRIPTS = r"""mkdir -p output && python3 - <<'PY'
import json
import re

records, added = [], 0
with open("input/raw_transcripts.jsonl", encoding="utf-8") as f:
    for line in filter(str.strip, f):
        rec = json.loads(line)
        text = re.sub(r"\\[ntr]", " ", rec["text"])  # escapes the export left as text
        text = re.sub(r"\s+", " ", text).strip()
        text = re.sub(r"(^|\. )([a-z])", lambda m: m.group(1) + m.group(2).upper(), text)
        if text[-1] not in ".!?":
            text, added = text + ".", added + 1
        records.append({"id": rec["id"], "formatted_text": text})
with open("output/formatted_transcripts.jsonl", "w", encoding="utf-8") as f:
    f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
with open("output/combined_formatted.txt", "w", encoding="utf-8") as f:
    f.write("\n\n".join(r["formatted_text"] for r in records))
with open("output/qc_report.md", "w", encoding="utf-8") as f:
    f.write(f'''# QC report

Processed: {len(records)}
Added terminal punctuation: {added}

## Notes and assumptions
- Runs of spaces, tabs and newlines (and literal \\n / \\t escapes) became one space.
- A sentence starts at the beginning and after every ". "; only its first letter was raised.
- Abbreviation and acronym casing (e.g., Mr., St., FAQ, ETA, SSO, Q3) and brand names
  (AcmeCRM, PayFast, DocuSign, Okta) were left as written.
- Every URL was kept intact; where a message ends in a URL, the period follows it directly.
- Contractions and apostrophes (it's, o'reilly) were not changed.
''')
print(f"processed {len(records)}, added terminal punctuation to {added}")
PY"""

# task_0780: the checker runs output/build_report.py itself; the ODT stays in memory.
_BUILD_REPORT = r'''"""Build the ops report as an in-memory ODT; write its text and structure."""
import csv
import io
import json
import re
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent
spec = json.loads((ROOT / "input/report_spec.json").read_text(encoding="utf-8"))
kpi = [row for row in csv.reader((ROOT / "input/kpi.csv").open(encoding="utf-8")) if row]
meta, font = spec["meta"], spec["font"]
plain, rx = spec["replacements"]["plain"], spec["replacements"]["regex"]
blocks = [(1, meta["title"])] + [(s.get("level", 1), s["heading"]) if "heading" in s
                                 else (0, s["text"]) for s in spec["sections"]]
flags = re.I if "i" in rx.get("flags", "") else 0
blocks = [(lvl, re.sub(rx["pattern"], rx["sub"], text.replace(plain["find"], plain["sub"]),
                       flags=flags)) for lvl, text in blocks]  # level 0: a paragraph
NS = " ".join(f'xmlns:{k}="urn:oasis:names:tc:opendocument:xmlns:{v}"' for k, v in (
    ("office", "office:1.0"), ("style", "style:1.0"), ("text", "text:1.0"),
    ("table", "table:1.0"), ("fo", "xsl-fo-compatible:1.0"))) + (
    ' xmlns:dc="http://purl.org/dc/elements/1.1/"')
face = (f'<style:text-properties style:font-name="{font["family"]}" '
        f'fo:font-size="{font["size"]}pt"/>')
# The body font on every style layer; the monospace code style keeps its own.
styles = "".join(f'<style:style style:name="{n}" style:family="paragraph">{face}</style:style>'
                 for n in ("Standard", "Heading", "Text_20_body", "Table_20_Contents"))
styles += ('<style:style style:name="Source_20_Code" style:family="paragraph">'
           '<style:text-properties style:font-name="Liberation Mono"/></style:style>')
outline = "".join(f'<text:outline-level-style text:level="{n}" style:num-format="1" '
                  f'text:display-levels="{n}" style:num-suffix="."/>' for n in (1, 2, 3))
body = "".join(f'<text:h text:outline-level="{lvl}">{escape(t)}</text:h>' if lvl
               else f"<text:p>{escape(t)}</text:p>" for lvl, t in blocks)
rows = "".join("<table:table-row>" + "".join(f"<table:table-cell><text:p>{escape(c)}</text:p>"
                                             "</table:table-cell>" for c in row)
               + "</table:table-row>" for row in kpi)
parts = {
    "content.xml": f"<office:document-content {NS}><office:body><office:text>{body}"
                   f'<table:table table:name="KPI">{rows}</table:table>'
                   "</office:text></office:body></office:document-content>",
    "styles.xml": f"<office:document-styles {NS}><office:styles><style:default-style "
                  f'style:family="paragraph">{face}</style:default-style>{styles}'
                  f'<text:outline-style style:name="Outline">{outline}</text:outline-style>'
                  "</office:styles></office:document-styles>",
    "meta.xml": f"<office:document-meta {NS}><office:meta>" + "".join(
        f"<dc:{k}>{escape(meta[k])}</dc:{k}>" for k in ("title", "subject", "description"))
        + "</office:meta></office:document-meta>",
}
odt = io.BytesIO()  # the ODT never touches the disk
with zipfile.ZipFile(odt, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("mimetype", "application/vnd.oasis.opendocument.text", zipfile.ZIP_STORED)
    for name, xml in parts.items():
        z.writestr(name, xml)
out = ROOT / "output"
(out / "report_text.txt").write_text("\n".join(t for _, t in blocks) + "\n", encoding="utf-8")
structure = {"headings": [{"level": lvl, "text": t} for lvl, t in blocks if lvl],
             "tables": [{"name": "KPI", "rows": len(kpi), "cols": len(kpi[0])}],
             "meta": {k: meta[k] for k in ("title", "subject", "description")},
             "font": {"family": font["family"], "size": font["size"]},
             "outlineNumbering": spec.get("outline", "numbered")}
(out / "structure.json").write_text(json.dumps(structure, indent=2) + "\n", encoding="utf-8")
print(f"built an ODT of {len(odt.getvalue())} bytes in memory")
'''

# task_1060: PostgreSQL queries and indexes, written out.
_QUERIES = """-- 1) Claim the next available job ($1 = worker name)
WITH next AS (
  SELECT id FROM job_queue
  WHERE locked_at IS NULL AND run_at <= now()
  ORDER BY priority ASC, run_at ASC, id ASC
  FOR UPDATE SKIP LOCKED
  LIMIT 1
)
UPDATE job_queue j SET locked_at = now(), locked_by = $1
FROM next WHERE j.id = next.id
RETURNING j.id, j.task_type, j.payload, j.priority, j.run_at;

-- 2) Latest non-deleted message per conversation of user $1
SELECT DISTINCT ON (conversation_id)
       conversation_id, m.id AS message_id, m.sender_user_id, m.body, m.created_at
FROM messages m
JOIN conversation_participants cp USING (conversation_id)
WHERE cp.user_id = $1 AND m.is_deleted = false
ORDER BY conversation_id, m.created_at DESC, m.id DESC;

-- 3) Case-insensitive login lookup ($1 = email)
SELECT id, email, created_at FROM users
WHERE lower(email) = lower($1) AND active = true
LIMIT 1;

-- 4) Tasks by status, NULL-safe on the assignee, with an optional due-date cutoff
SELECT t.id, t.title, t.assignee_id, t.due_date, t.status, t.created_at
FROM tasks t
WHERE t.status = $1
  AND t.assignee_id IS NOT DISTINCT FROM $2
  AND ($3::date IS NULL OR t.due_date <= $3);
"""

_INDEXES = """-- Case-insensitive email lookup (expression index; unique, as the app enforces it)
CREATE UNIQUE INDEX users_lower_email_idx ON users (lower(email));

-- Latest message per conversation: partial (non-deleted rows) and covering
CREATE INDEX messages_conv_latest_idx ON messages (conversation_id, created_at DESC, id DESC)
  INCLUDE (sender_user_id, body) WHERE is_deleted = false;

-- Job claiming: only available jobs, in claim order
CREATE INDEX job_queue_available_idx ON job_queue (priority ASC, run_at ASC, id ASC)
  WHERE locked_at IS NULL;

-- Participant membership checks
CREATE INDEX conversation_participants_user_idx
  ON conversation_participants (user_id, conversation_id);
"""

_NOTES = """# Query and index notes

- users_lower_email_idx: the expression lower(email) matches the login query's
  `lower(email) = lower($1)` exactly, so the planner can use it; unique because the app
  treats emails as case-insensitively unique.
- messages_conv_latest_idx: leads with conversation_id, then created_at DESC, id DESC (the
  DISTINCT ON order); the partial predicate `WHERE is_deleted = false` drops ~25% of rows,
  and INCLUDE (sender_user_id, body) covers the selected columns: index-only scans, fewer
  Heap Fetches.
- job_queue_available_idx: the claim query takes one row with FOR UPDATE SKIP LOCKED and
  LIMIT 1, so workers never block each other; the partial `WHERE locked_at IS NULL` index
  holds only the small available set, in priority, run_at, id order.
- conversation_participants_user_idx: finds a user's conversations, which the primary key
  (conversation_id, user_id) cannot do from its leading column.
- The task list uses IS NOT DISTINCT FROM for NULL-safe assignee equality.
"""

# task_1840: the ontology of the three notes; Bob's note has no email.
_ALICE, _BOB = "person_alice_johnson", "person_bob"
_ACME, _ALPHA = "organization_acme_corp", "project_project_alpha"
_GRAPH = [
    {"op": "upsert", "entity": {"id": _ALICE, "type": "Person", "properties": {
        "name": "Alice Johnson", "email": "alice@company.com", "phone": "+1-415-555-0137",
        "company": "Acme Corp"}}},
    {"op": "upsert", "entity": {"id": _BOB, "type": "Person", "properties": {
        "name": "Bob", "email": None, "company": "Acme Corp"}}},
    {"op": "upsert", "entity": {"id": _ACME, "type": "Organization",
                                "properties": {"name": "Acme Corp"}}},
    {"op": "upsert", "entity": {"id": _ALPHA, "type": "Project", "properties": {
        "name": "Project Alpha", "status": "Discovery", "client": "Acme Corp"}}},
    {"op": "relate", "from": _ALICE, "rel": "works_at", "to": _ACME},
    {"op": "relate", "from": _BOB, "rel": "works_at", "to": _ACME},
    {"op": "relate", "from": _ALICE, "rel": "assigned_to", "to": _ALPHA},
    {"op": "relate", "from": _BOB, "rel": "assigned_to", "to": _ALPHA},
]
_FEEDBACK = """# Ontology sync feedback

Synced 4 entities and 4 relationships from input/obsidian_vault.

## Missing emails
- [ ] `Bob` missing email
"""

# task_id -> (the tool calls, the final answer)
SOLVED: dict[str, tuple[list[ToolCall], str]] = {
    "task_0540": ([ToolCall("run", {"command": _FORMAT_TRANSCRIPTS})],
                  "Formatted the 10 transcripts into output/formatted_transcripts.jsonl and "
                  "output/combined_formatted.txt; the QA notes are in output/qc_report.md."),
    "task_0780": ([ToolCall("write", {"path": "output/build_report.py", "text": _BUILD_REPORT}),
                   ToolCall("run", {"command": "python3 output/build_report.py"})],
                  "output/build_report.py builds the ODT in memory and wrote "
                  "output/report_text.txt and output/structure.json."),
    "task_1060": ([ToolCall("write", {"path": "output/queries.sql.txt", "text": _QUERIES}),
                   ToolCall("write", {"path": "output/indexes.sql.txt", "text": _INDEXES}),
                   ToolCall("write", {"path": "output/notes.md", "text": _NOTES})],
                  "Wrote the four queries, the recommended indexes and the rationale notes."),
    "task_1840": ([ToolCall("write", {"path": "output/ontology/graph.jsonl", "text": "".join(
                       json.dumps(record) + "\n" for record in _GRAPH)}),
                   ToolCall("write", {"path": "output/feedback/sync-feedback.md",
                                      "text": _FEEDBACK})],
                  "Synced 4 entities and 4 relationships; Bob has no email address."),
}
# the prompt asks for code to be run, or the checker runs the agent's code
USES_RUN = {"task_0540", "task_0780"}


@pytest.fixture(scope="module")
def runner_tasks():
    return {task.task_id: task for task in open_benchmark("clawgym", str(REAL)).all_tasks()}


def test_the_hand_solved_tasks_include_shell_ones():
    assert len(SOLVED) >= 4
    assert {task_id for task_id, (steps, _) in SOLVED.items()
            if any(step.name == "run" for step in steps)} == USES_RUN


@pytest.mark.parametrize("kind", ["bubblewrap", "namespaces", "limits"])
@pytest.mark.parametrize("task_id", sorted(SOLVED))
def test_a_hand_solved_task_scores_one_as_the_runner(runner_tasks, task_id, kind, monkeypatch):
    """Solved through hscale's tools only; the commands use relative paths, so they need no
    mount at /root/.openclaw/workspace and work in every containment that contains them
    (under ``limits`` the shell is refused: the agent's code never runs uncontained)."""
    if probe(kind).kind != kind:
        pytest.skip(f"{kind} containment does not work here")
    monkeypatch.setenv("HSCALE_CONTAINMENT", kind)
    if kind == "limits" and task_id in USES_RUN:
        with Env(runner_tasks[task_id]) as env:
            refused = env.execute(next(s for s in SOLVED[task_id][0] if s.name == "run"))
        assert not refused.ok and "contained shell" in refused.error
        return
    task = runner_tasks[task_id]
    steps, final = SOLVED[task_id]
    transcript: list[dict] = [{"role": "user", "content": task.user_query}]
    with Env(task) as env:
        for step in steps:
            result = env.execute(step)
            assert result.ok and not result.truncated, f"{step.name} ({kind}): {result.error}"
            if step.name == "run":
                assert result.output.startswith("exit 0\n"), result.output
            transcript += [
                {"role": "assistant", "content": "",
                 "tool_call": {"name": step.name, "args": dict(step.args)}},
                {"role": "tool", "name": step.name, "ok": True, "content": result.output}]
        transcript.append({"role": "assistant", "content": final})
        reward = env.score(final, transcript)
        assert env.checker_error == ""
        assert reward == 1.0
        assert _runner_reward(task, env.workspace) == reward
