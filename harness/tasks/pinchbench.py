"""PinchBench tasks as hscale Tasks, so the public benchmark runs under our harnesses.

A PinchBench task is one markdown file: YAML front matter (``id``, ``name``, ``category``,
``grading_type``: automated | llm_judge | hybrid, ``timeout_seconds``, ``workspace_files``,
optional ``split``) and sections ``## Prompt``, ``## Expected Behavior``, ``## Grading
Criteria`` and (automated, hybrid) a Python code block defining ``grade(transcript,
workspace_path) -> dict`` of criterion name -> score in [0, 1]. How it maps:

- ``task_id`` is ``id``; characters outside the safe-name rule of :class:`Task` become ``-``
  (leading ``-``, ``_``, ``.`` dropped, at most 128 kept) and the original id is kept in
  ``metadata["source_id"]``. ``user_query`` is the Prompt section; ``split`` is the front
  matter's, else "eval".
- ``workspace_files`` entries are ``{path, content}``, ``{source, dest}`` or a file name. A
  named file is looked up next to the markdown file, then in a folder named after it, then in
  ``../assets`` (PinchBench's layout); names must be relative and stay inside (``path_problem``).
- automated and hybrid tasks get a "script" checker: a standalone grader generated into the
  content-addressed cache ``$HSCALE_CACHE/pinchbench/<sha256>.py`` (default ``~/.cache/hscale``)
  that runs grade() on the workspace and prints the mean of its numbers. The transcript it
  passes holds one assistant message, the final answer. **Hybrid tasks are scored on their
  automated part only**; the LLM-judge part is dropped (``metadata["scored"]`` says so).
- llm_judge tasks get a "rubric" checker from the Grading Criteria bullets, equal weights, with
  the Prompt and Expected Behavior as the judge's context (see :mod:`hscale.harness.tasks.judge`).

Every problem is one HscaleError naming the file, and the line where there is one.
"""

from __future__ import annotations

import ast
import hashlib
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

from hscale.errors import HscaleError
from hscale.harness.tasks.clawgym import MAX_INPUT_FILE_BYTES, MAX_INPUT_TOTAL_BYTES
from hscale.harness.tasks.specs import path_problem
from hscale.harness.tasks.task import SPLITS, Task
from hscale.yamlio import parse_yaml

GRADING_TYPES = ("automated", "llm_judge", "hybrid")
MAX_TASK_BYTES = 1 << 20
MAX_FRONT_MATTER_BYTES = 64 << 10
NOT_TASKS = ("TASK_TEMPLATE.md",)  # PinchBench's template has front matter but is no task
HINT = ("a PinchBench task is a .md file opening with '---' YAML front matter (id, "
        "grading_type, ...) followed by a '## Prompt' section")

_HEADING = re.compile(r"##\s+(.+?)\s*#*\s*")
_FENCE = re.compile(r"\s{0,3}(```+|~~~+)\s*([\w+-]*)")
_BULLET = re.compile(r"\s{0,3}(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?(.+?)\s*")


@dataclass
class _Doc:
    """A parsed task file: front matter, its key lines, sections and code blocks."""

    path: Path
    meta: dict[str, Any]
    lines: dict[str, int]  # front matter key -> line
    item_lines: list[int]  # workspace_files entry -> line
    sections: dict[str, tuple[str, int]]  # lower-cased heading -> (text, first line)
    blocks: list[tuple[str, str, int]]  # (language, code, first line)

    def error(self, message: str, line: int | None = None,
              hint: str | None = HINT) -> NoReturn:
        where = f"{self.path}:{line}" if line else f"{self.path}"
        raise HscaleError(f"{where}: {message}", hint)


def load_pinchbench(path: str | Path) -> list[Task]:
    """Tasks from a PinchBench task file, or from every task file in a folder (not recursive;
    .md files without front matter, such as READMEs, and TASK_TEMPLATE.md are skipped)."""
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
    tasks: list[Task] = []
    seen: dict[str, Path] = {}
    for md in files:
        task = _load_file(md)
        if task.task_id in seen:
            raise HscaleError(f"{md}: task id {task.task_id!r} is also {seen[task.task_id]}'s",
                              "give every task its own id")
        seen[task.task_id] = md
        tasks.append(task)
    return tasks


def safe_task_id(raw: object) -> str:
    """``raw`` made a safe task id: other characters become '-', leading '-', '_' and '.' are
    dropped, 128 characters kept (empty when nothing is left)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", str(raw).strip()).lstrip("-_.")[:128]


def _has_front_matter(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(8).removeprefix(b"\xef\xbb\xbf").startswith(b"---")


def _load_file(md: Path) -> Task:
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
        if (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                or not math.isfinite(timeout) or timeout <= 0):
            doc.error(f"timeout_seconds {timeout!r} is not a positive number",
                      doc.lines.get("timeout_seconds"))
        metadata["timeout_seconds"] = timeout
    if grading == "llm_judge":
        checker = _rubric(doc, prompt)
    else:
        checker = {"kind": "script", "path": str(_grader_script(doc, task_id))}
        if grading == "hybrid":
            metadata["scored"] = "automated part only (the LLM-judge part is not scored)"
    files = _workspace_files(doc)
    try:
        return Task(task_id=task_id, user_query=prompt,
                    category=meta.get("category") or "general", grading_type=grading,
                    input_files=files, checker=checker, split=split, metadata=metadata)
    except HscaleError as exc:
        raise HscaleError(f"{md}: {exc.message}", exc.hint or HINT) from None


# --------------------------------------------------------------------------- parsing


def _parse(md: Path) -> _Doc:
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
    return _Doc(md, meta, key_lines, item_lines, sections, blocks)


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


def _grade_code(doc: _Doc) -> tuple[str, int]:
    """The code defining grade(): the first fenced Python block that does, else an unfenced
    '## Automated Checks' section."""
    candidates = [(code, line) for lang, code, line in doc.blocks
                  if lang in ("python", "py", "python3", "") and "def grade" in code]
    checks = doc.sections.get("automated checks")
    if not candidates and checks and "def grade" in checks[0] and "```" not in checks[0]:
        candidates.append(checks)
    for code, line in candidates:
        try:
            tree = ast.parse(code)
        except SyntaxError as exc:
            doc.error(f"grade code is not valid Python ({exc.msg})",
                      line + (exc.lineno or 1) - 1, "fix the code block")
        if any(isinstance(n, ast.FunctionDef) and n.name == "grade" for n in tree.body):
            return code, line
    doc.error("an automated task needs a ```python block defining grade(transcript, "
              "workspace_path)", doc.lines.get("grading_type"),
              "add the code block, or set grading_type: llm_judge")


# --------------------------------------------------------------------------- checkers


def _rubric(doc: _Doc, prompt: str) -> dict[str, Any]:
    text, line = doc.sections.get("grading criteria", ("", 0))
    criteria, fence = [], False
    for row in text.splitlines():
        if row.lstrip().startswith(("```", "~~~")):
            fence = not fence
        bullet = None if fence else _BULLET.fullmatch(row.rstrip())
        if bullet:
            criteria.append({"text": bullet.group(1), "weight": 1.0})
    if not criteria:
        doc.error("an llm_judge task needs a '## Grading Criteria' bullet list", line or None,
                  "list one criterion per '- ' line")
    expected = doc.sections.get("expected behavior", ("", 0))[0]
    context = prompt + (f"\n\nExpected behavior:\n{expected}" if expected else "")
    return {"kind": "rubric", "criteria": criteria, "context": context}


_GRADER_MAIN = '''

def main():
    workspace = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WORKSPACE", ".")
    answer = os.environ.get("FINAL_ANSWER", "")
    if os.environ.get("FINAL_ANSWER_FILE"):
        with open(os.environ["FINAL_ANSWER_FILE"], encoding="utf-8", errors="replace") as f:
            answer = f.read()
    # One assistant message, in the plain chat form and in the OpenClaw event form
    # ({"type": "message", "message": {...}}) that PinchBench graders read.
    transcript = [{"role": "assistant", "content": answer, "type": "message",
                   "message": {"role": "assistant",
                               "content": [{"type": "text", "text": answer}]}}]
    namespace = {"__name__": "pinchbench_task"}
    # Blank lines first, so tracebacks give the task file's own line numbers.
    exec(compile("\\n" * (FIRST_LINE - 1) + GRADE_CODE, SOURCE, "exec"), namespace)
    # Positional, as PinchBench calls it: grade(transcript, workspace_path).
    scores = namespace["grade"](transcript, workspace)
    if not isinstance(scores, dict):
        print(f"grade() returned {type(scores).__name__}, not a dict: scored 0",
              file=sys.stderr)
        scores = {}
    values = [float(v) for v in scores.values()
              if isinstance(v, (int, float)) and math.isfinite(float(v))]
    mean = sum(values) / len(values) if values else 0.0
    print(min(1.0, max(0.0, mean)))


if __name__ == "__main__":
    main()
'''


def _grader_script(doc: _Doc, task_id: str) -> Path:
    """Write the task's standalone grader into the cache (named by its content's sha256)."""
    code, line = _grade_code(doc)
    script = (f'"""PinchBench grader for task {task_id}, generated by hscale. Standalone: '
              "Python stdlib,\nplus what grade() imports.\n\n"
              "Usage: grader.py WORKSPACE (or env WORKSPACE); the final answer is read from "
              "the file named\nby env FINAL_ANSWER_FILE, else taken from env FINAL_ANSWER. "
              "Runs the task's grade() and prints\nthe mean of the numbers in the dict it "
              'returns, clamped to [0, 1] (0 when there are none).\n"""\n\n'
              "import math\nimport os\nimport sys\n\n"
              f"SOURCE = {str(doc.path.resolve())!r}\nFIRST_LINE = {line}\n"
              f"GRADE_CODE = {code!r}\n" + _GRADER_MAIN)
    digest = hashlib.sha256(script.encode("utf-8")).hexdigest()
    cache = Path(os.environ.get("HSCALE_CACHE") or Path.home() / ".cache" / "hscale")
    target = cache.expanduser() / "pinchbench" / f"{digest}.py"
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".grader-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(script)
        os.replace(tmp, target)
    except OSError as exc:
        raise HscaleError(f"{doc.path}: cannot write its grader to {target.parent} "
                          f"({exc.strerror or exc})",
                          "set HSCALE_CACHE to a writable folder") from None
    return target


# --------------------------------------------------------------------------- workspace files


def _workspace_files(doc: _Doc) -> dict[str, str]:
    entries = doc.meta.get("workspace_files")
    if entries is None:
        return {}
    if not isinstance(entries, list):
        doc.error("workspace_files must be a list", doc.lines.get("workspace_files"))
    files: dict[str, str] = {}
    total = 0
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
            text = _read_source(doc, source, line)
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
        if size > MAX_INPUT_FILE_BYTES or total > MAX_INPUT_TOTAL_BYTES:
            doc.error(f"workspace files are too large (limit {MAX_INPUT_FILE_BYTES} bytes a "
                      f"file, {MAX_INPUT_TOTAL_BYTES} in all)", line, "keep task inputs small")
        files[dest] = text
    return files


def _read_source(doc: _Doc, source: object, line: int | None) -> str:
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
            if os.path.getsize(real) > MAX_INPUT_FILE_BYTES:
                doc.error(f"workspace file {source!r} is over {MAX_INPUT_FILE_BYTES} bytes",
                          line, "keep task inputs small")
            return Path(real).read_bytes().decode("utf-8", "surrogateescape")
    doc.error(f"workspace file {source!r} not found next to the task file, in "
              f"{doc.path.stem}/ or in ../assets", line, "check the name")
