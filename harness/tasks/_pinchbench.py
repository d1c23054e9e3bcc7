"""PinchBench tasks as hscale Tasks, scored as PinchBench's own runner scores them.

A PinchBench task is one markdown file: YAML front matter (``id``, ``name``, ``category``,
``grading_type``: automated | llm_judge | hybrid, ``timeout_seconds``, ``workspace_files``,
optional ``grading_weights`` and ``split``) and sections ``## Prompt``, ``## Expected
Behavior``, ``## Grading Criteria``, ``## Automated Checks`` (a Python code block defining
``grade(transcript, workspace_path) -> dict`` of criterion name -> score in [0, 1]) and ``## LLM
Judge Rubric`` (``### Criterion N: Name (Weight: X%)`` blocks of score levels). How it maps
(facts from PinchBench's ``scripts/lib_grading.py``, ``lib_tasks.py`` and ``lib_agent.py`` at
commit 1f3d1df):

- ``task_id`` is ``id``; characters outside the safe-name rule of :class:`Task` become ``-``
  (leading ``-``, ``_``, ``.`` dropped, at most 128 kept) and the original id is kept in
  ``metadata["source_id"]``. ``user_query`` is the Prompt section; ``split`` is the front
  matter's, else "eval".
- ``workspace_files`` entries are ``{path, content}``, ``{source, dest}`` or a file name. A
  named file is looked up next to the markdown file, then in a folder named after it, then in
  ``../assets`` (PinchBench's layout); names must be relative and stay inside (``path_problem``).
  Binary files (a PDF, a spreadsheet) are kept exactly: their bytes decoded with
  ``surrogateescape``, which the workspace writes back unchanged. A file may hold up to
  ``max_asset_bytes`` (default :data:`MAX_ASSET_BYTES`).
- automated: a "script" checker, a standalone grader generated into the content-addressed cache
  ``$HSCALE_CACHE/pinchbench/<sha256>.py`` (default ``~/.cache/hscale``). It converts the
  episode's canonical transcript (``TRANSCRIPT_FILE``) into the OpenClaw session events
  PinchBench's graders read (:func:`openclaw_transcript`), calls ``grade(events,
  workspace_path)`` and prints the mean of the numbers in the dict it returns, as PinchBench's
  ``_average_scores`` does (booleans count, other values are skipped, no numbers scores 0;
  hscale also drops non-finite values and clamps to [0, 1]).
- llm_judge: a "rubric" checker with ``scoring: graded`` and ``view: pinchbench``: one request
  holding the task prompt and expected behaviour, the transcript summarised as PinchBench's
  judge sees it (:func:`judge_summary`) and the rubric with each heading's ``(Weight: X%)``;
  the judge scores each criterion and the reward is its total, as PinchBench takes it (see
  :mod:`hscale.harness.tasks._judge`; the parsed weights are recorded in the spec). The
  criteria are the ``### `` blocks of the ``## LLM Judge Rubric`` section (no weights at all:
  equal weights; no ``### `` heading: the section is one criterion). Without that section the
  Grading Criteria bullets are the criteria, equal weights, as PinchBench falls back to them
  (``metadata["judge_rubric"]`` says which).
- hybrid: a "weighted" checker of the two, with the front matter's ``grading_weights``
  (``automated``, ``llm_judge``; 0.5 each when absent, both 0.5 when they sum to 0), as
  PinchBench's ``_combine_grades`` does; ``metadata["grading_weights"]`` records them.

The transcript PinchBench's graders read is the OpenClaw agent's session JSONL: events
``{"type": "message", "message": {"role": "user" | "assistant" | "toolResult", "content":
[items]}}``; an assistant's items are ``{"type": "text", "text"}`` and ``{"type": "toolCall",
"id", "name", "arguments"}``; a tool result carries ``toolCallId``, ``toolName``, ``isError``
and ``[{"type": "text", "text"}]``. hscale's canonical tools become OpenClaw's (``read``,
``write``, ``exec``; OpenClaw has no list, search or calculator tool, so those are shell
commands, as an OpenClaw agent would run them):

====================  ==========================================================
canonical             OpenClaw tool call
====================  ==========================================================
``read {path}``       ``read {"path": path}``
``write {path,text}`` ``write {"path": path, "content": text}``
``list {}``           ``exec {"command": "find . -type f"}``
``search {word}``     ``exec {"command": "grep -rnF -- <word, shell-quoted> ."}``
``calc {expr}``       ``exec {"command": "python3 -c 'print(<expr>)'"}``
``run {command}``     ``exec {"command": command}``
====================  ==========================================================

An assistant turn with empty text gives no text item, and one with neither text nor a tool
call gives no message at all: PinchBench grades the session OpenClaw wrote, and a run with no
reply holds no assistant message (so its sanity task scores 0 on an empty answer). A checker
run with no transcript (outside an episode) sees the final answer as the one assistant message.

PinchBench's graders at that commit look for tools named ``read_file``/``readFile`` with a
``params.files`` list (tasks 08, 10), ``generate_image`` (13), names holding "search"/"fetch"
or ``execute_command`` with ``params.command`` (18): names and keys OpenClaw does not write,
so those criteria score 0 under PinchBench's own runner too, and so they do here.

Every problem is one HscaleError naming the file, and the line where there is one;
``load_pinchbench(..., left_out=[])`` leaves a bad file out instead (see there).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from hscale.errors import HscaleError
from hscale.harness.tasks._clawgym import MAX_INPUT_TOTAL_BYTES
from hscale.harness.tasks._pinchbench_grader import (  # noqa: F401  (transcripts re-exported)
    DEFAULT_GRADING_WEIGHTS,
    HINT,
    Doc,
    automated_spec,
    grading_weights,
    judge_spec,
    judge_summary,
    openclaw_transcript,
)
from hscale.harness.tasks._specs import is_finite_number, path_problem
from hscale.harness.tasks._task import SPLITS, Task
from hscale.harness.tasks._task_lists import gather
from hscale.yamlio import parse_yaml

GRADING_TYPES = ("automated", "llm_judge", "hybrid")
MAX_TASK_BYTES = 1 << 20
MAX_FRONT_MATTER_BYTES = 64 << 10
# The most one workspace file (an asset such as a PDF) may hold; load_pinchbench's
# max_asset_bytes overrides it. All of a task's files together may hold the larger of this
# and clawgym.MAX_INPUT_TOTAL_BYTES.
MAX_ASSET_BYTES = 8 << 20
NOT_TASKS = ("TASK_TEMPLATE.md",)  # PinchBench's template has front matter but is no task
_HEADING = re.compile(r"##\s+(.+?)\s*#*\s*")
_FENCE = re.compile(r"\s{0,3}(```+|~~~+)\s*([\w+-]*)")


def load_pinchbench(path: str | Path, *, max_asset_bytes: int = MAX_ASSET_BYTES,
                    left_out: list | None = None) -> list[Task]:
    """Tasks from a PinchBench task file, or from every task file in a folder (not recursive;
    .md files without front matter, such as READMEs, and TASK_TEMPLATE.md are skipped).

    A workspace file may hold up to ``max_asset_bytes``. With ``left_out`` a list, a task file
    that cannot be loaded (or repeats an earlier task's id) is skipped and appended to it as
    ``(file path, one-line message)`` (the message without the path; ``line N:`` where the
    problem has a line); when every file is bad the first problem is raised all the same.
    With ``left_out=None`` the first problem is raised.
    """
    check_asset_limit(max_asset_bytes)
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.md")
                       if p.is_file() and p.name not in NOT_TASKS and _has_front_matter(p))
        if not files:
            raise HscaleError(f"{path}: no PinchBench task files (.md with front matter)", HINT)
    elif path.is_file():
        files = [path]
    else:
        raise HscaleError(f"{path}: no such file or folder",
                          "give a PinchBench task .md file or a folder of them")
    return gather(((str(md), lambda md=md: _load_file(md, max_asset_bytes)) for md in files),
                  left_out, twin=lambda md, earlier, task_id:
                  f"{md}: task id {task_id!r} is also {earlier}'s", errors=(HscaleError, OSError))


def check_asset_limit(max_asset_bytes: object) -> None:
    """A loader's ``max_asset_bytes``: a positive whole number of bytes."""
    if (isinstance(max_asset_bytes, bool) or not isinstance(max_asset_bytes, int)
            or max_asset_bytes <= 0):
        raise HscaleError(f"max_asset_bytes {max_asset_bytes!r} is not a positive whole number",
                          f"give a size in bytes, e.g. {MAX_ASSET_BYTES}")


def safe_task_id(raw: object) -> str:
    """``raw`` made a safe task id: other characters become '-', leading '-', '_' and '.' are
    dropped, 128 characters kept (empty when nothing is left)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", str(raw).strip()).lstrip("-_.")[:128]


def _has_front_matter(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(8).removeprefix(b"\xef\xbb\xbf").startswith(b"---")


def _load_file(md: Path, max_asset_bytes: int = MAX_ASSET_BYTES) -> Task:
    doc = _parse(md)
    meta = doc.meta
    raw_id = meta.get("id")
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or not str(raw_id).strip():
        doc.error("front matter needs an 'id'", doc.lines.get("id", 1))
    task_id = safe_task_id(raw_id)
    if not task_id:
        doc.error(f"id {raw_id!r} has no letter or digit", doc.lines.get("id"))
    grading = meta.get("grading_type")
    if grading not in GRADING_TYPES:
        doc.error(f"grading_type {grading!r} is not one of {', '.join(GRADING_TYPES)}",
                  doc.lines.get("grading_type", 1))
    for key in ("name", "category", "split"):
        if key in meta and not isinstance(meta[key], str):
            doc.error(f"{key!r} must be text", doc.lines.get(key))
    split = meta.get("split") or "eval"
    if split not in SPLITS:
        doc.error(f"split {split!r} is not one of {', '.join(SPLITS)}", doc.lines.get("split"))
    prompt = doc.sections.get("prompt", ("", 0))[0]
    if not prompt:
        doc.error("no '## Prompt' section, or it is empty", doc.sections.get("prompt", ("", 0))[1])
    metadata: dict[str, Any] = {"source": str(md), "name": meta.get("name", "")}
    if str(raw_id) != task_id:
        metadata["source_id"] = str(raw_id)
    timeout = meta.get("timeout_seconds")
    if timeout is not None:
        if not is_finite_number(timeout) or timeout <= 0:
            doc.error(f"timeout_seconds {timeout!r} is not a positive number",
                      doc.lines.get("timeout_seconds"))
        metadata["timeout_seconds"] = timeout
    if grading == "automated":
        checker = automated_spec(doc, task_id)
    else:
        checker, metadata["judge_rubric"] = judge_spec(doc, prompt)
    if grading == "hybrid":
        weights = grading_weights(doc)
        metadata["grading_weights"] = weights
        checker = {"kind": "weighted", "parts": [
            {"weight": weights["automated"], "checker": automated_spec(doc, task_id)},
            {"weight": weights["llm_judge"], "checker": checker}]}
    files = _workspace_files(doc, max_asset_bytes)
    try:
        return Task(task_id=task_id, user_query=prompt,
                    category=meta.get("category") or "general", grading_type=grading,
                    input_files=files, checker=checker, split=split, metadata=metadata)
    except HscaleError as exc:
        raise HscaleError(f"{md}: {exc.message}", exc.hint or HINT) from None


# --------------------------------------------------------------------------- parsing


def _parse(md: Path) -> Doc:
    size = md.stat().st_size
    if size > MAX_TASK_BYTES:
        raise HscaleError(f"{md}: {size} bytes, more than a task file holds "
                          f"({MAX_TASK_BYTES} at most)", HINT)
    try:
        text = md.read_bytes().decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise HscaleError(f"{md}: not UTF-8 text (byte {exc.start})",
                          "save the file as UTF-8") from None
    lines = text.splitlines()
    if not lines or lines[0].rstrip() != "---":
        raise HscaleError(f"{md}:1: no YAML front matter", HINT)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        raise HscaleError(f"{md}:1: front matter is not closed by a '---' line", HINT)
    meta, key_lines, item_lines = _front_matter("\n".join(lines[1:end]), md, 2)
    body = lines[end + 1:]
    sections, blocks = _sections(body, end + 2)
    return Doc(md, meta, key_lines, item_lines, sections, blocks)


def _front_matter(text: str, md: Path, first: int) -> tuple[dict, dict[str, int], list[int]]:
    """Front matter as data, with the line of each top-level key and workspace_files entry;
    safe YAML only, bounded in size, duplicate keys refused."""
    if len(text.encode("utf-8")) > MAX_FRONT_MATTER_BYTES:
        raise HscaleError(f"{md}: front matter is over {MAX_FRONT_MATTER_BYTES} bytes",
                          "keep file contents out of the front matter")
    data, node = parse_yaml(text, str(md), first)
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise HscaleError(f"{md}:{first}: front matter must be a mapping of keys to values", HINT)
    key_lines: dict[str, int] = {}
    item_lines: list[int] = []
    for key_node, value_node in node.value:
        key, line = str(key_node.value), key_node.start_mark.line + first
        if key in key_lines:
            raise HscaleError(f"{md}:{line}: duplicate key {key!r}", "give each key once")
        key_lines[key] = line
        if key == "workspace_files" and isinstance(value_node, yaml.SequenceNode):
            item_lines = [item.start_mark.line + first for item in value_node.value]
    return data, key_lines, item_lines


def _sections(body: list[str], first: int) -> tuple[dict[str, tuple[str, int]],
                                                   list[tuple[str, str, int]]]:
    """Level-2 sections (heading lower-cased -> text, first line) and fenced code blocks
    (language, code, first code line); headings inside code blocks are code."""
    sections: dict[str, tuple[str, int]] = {}
    blocks: list[tuple[str, str, int]] = []
    name, start, chunk = None, 0, []
    fence, lang, code, code_start = None, "", [], 0

    def close() -> None:
        if name is not None and name not in sections:
            sections[name] = (_strip_rules("\n".join(chunk)), start)

    for number, line in enumerate(body, start=first):
        opened = _FENCE.fullmatch(line.rstrip())
        if fence is None and opened:
            fence, lang, code, code_start = opened.group(1), opened.group(2).lower(), [], number + 1
        elif fence is not None and _closes(line, fence):
            blocks.append((lang, "\n".join(code), code_start))
            fence = None
        elif fence is not None:
            code.append(line)
        heading = _HEADING.fullmatch(line.rstrip()) if fence is None and not opened else None
        if heading:
            close()
            name, start, chunk = heading.group(1).strip().lower(), number + 1, []
            continue
        chunk.append(line)
    close()
    return sections, blocks


def _closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a code block opened by ``fence`` (same character, as long)."""
    stripped = line.strip()
    return bool(stripped) and set(stripped) == {fence[0]} and len(stripped) >= len(fence)


def _strip_rules(text: str) -> str:
    """Section text without the blank lines and ``---`` rules around it."""
    lines = text.strip().splitlines()
    while lines and lines[-1].strip() in ("---", "***", "___", ""):
        lines.pop()
    return "\n".join(lines).strip()


# --------------------------------------------------------------------------- workspace files


def _workspace_files(doc: Doc, limit: int) -> dict[str, str]:
    entries = doc.meta.get("workspace_files")
    if entries is None:
        return {}
    if not isinstance(entries, list):
        doc.error("workspace_files must be a list", doc.lines.get("workspace_files"))
    files: dict[str, str] = {}
    total, total_limit = 0, max(MAX_INPUT_TOTAL_BYTES, limit)
    for i, entry in enumerate(entries):
        line = doc.item_lines[i] if i < len(doc.item_lines) else doc.lines.get("workspace_files")
        if isinstance(entry, dict) and "content" in entry:
            dest, text = entry.get("path"), entry.get("content")
            if not isinstance(text, str):
                doc.error(f"workspace file {dest!r}: content must be text", line)
        elif isinstance(entry, dict) and "source" not in entry:
            doc.error(f"workspace file entry {i} needs 'source' (and 'dest') or 'path' and "
                      "'content'", line)
        elif isinstance(entry, dict | str):
            source = entry if isinstance(entry, str) else entry.get("source")
            dest = entry if isinstance(entry, str) else entry.get("dest", source)
            text = _read_source(doc, source, line, limit)
        else:
            doc.error(f"workspace file entry {i} is neither a file name nor a mapping", line,
                      "write '- data.csv', '- {source: a.csv, dest: b.csv}' or "
                      "'- {path: b.csv, content: ...}'")
        problem = path_problem(dest)
        if problem:
            doc.error(f"workspace file {dest!r}: {problem}", line)
        if dest in files:
            doc.error(f"workspace file {dest!r} is given twice", line)
        size = len(text.encode("utf-8", "surrogateescape"))
        total += size
        if size > limit or total > total_limit:
            doc.error(f"workspace files are too large (limit {limit} bytes a file, "
                      f"{total_limit} in all)", line,
                      "keep task inputs small, or raise max_asset_bytes")
        files[dest] = text
    return files


def _read_source(doc: Doc, source: object, line: int | None, limit: int) -> str:
    """A named workspace file's text (bytes kept via surrogateescape), found next to the task
    file, in a folder named after it, or in ../assets; never outside those folders."""
    problem = path_problem(source)
    if problem:
        doc.error(f"workspace file source {source!r}: {problem}", line,
                  "name files relative to the task file's folder")
    here = doc.path.parent
    for base in (here, here / doc.path.stem, here.parent / "assets"):
        candidate = base / str(source)
        real, root = os.path.realpath(candidate), os.path.realpath(base)
        if real.startswith(root + os.sep) and os.path.isfile(real):
            size = os.path.getsize(real)
            if size > limit:
                doc.error(f"workspace file {source!r} is {size} bytes, over the {limit} "
                          "allowed", line, "raise max_asset_bytes, or keep task inputs small")
            return Path(real).read_bytes().decode("utf-8", "surrogateescape")
    doc.error(f"workspace file {source!r} not found next to the task file, in "
              f"{doc.path.stem}/ or in ../assets", line, "check the name")
