"""PinchBench's grading as its runner does it, for :mod:`hscale.harness.tasks._pinchbench`:
the checker specs of a parsed task file (:func:`automated_spec`, :func:`judge_spec`,
:func:`grading_weights`), hscale's canonical transcript as the OpenClaw session events
PinchBench's graders read (:func:`openclaw_transcript`), the episode as its judge is shown
it (:func:`judge_summary`, the rubric view "pinchbench"), and the standalone grader script
of an automated task (:func:`grader_script`), generated into the content-addressed cache."""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from hscale.errors import HscaleError
from hscale.files import cache_dir
from hscale.harness.tasks._judge import register_view
from hscale.harness.tasks._specs import is_finite_number

_BULLET = re.compile(r"\s{0,3}(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s*)?(.+?)\s*")
_CRITERION = re.compile(r"###\s+(.+?)\s*#*\s*")
_WEIGHT = re.compile(r"\(\s*weight\s*:\s*(\d+(?:\.\d*)?|\.\d+)\s*%?\s*\)", re.I)
_NUMBERED = re.compile(r"criterion\s+\d+\s*[:.)\-]\s*", re.I)
DEFAULT_GRADING_WEIGHTS = {"automated": 0.5, "llm_judge": 0.5}  # PinchBench's _combine_grades
HINT = ("a PinchBench task is a .md file opening with '---' YAML front matter (id, "
        "grading_type, ...) followed by a '## Prompt' section")


@dataclass
class Doc:
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


# --------------------------------------------------------------------------- checkers


def grade_code(doc: Doc) -> tuple[str, int]:
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


def automated_spec(doc: Doc, task_id: str) -> dict[str, Any]:
    return {"kind": "script", "path": str(grader_script(*grade_code(doc), doc.path, task_id))}


def judge_spec(doc: Doc, prompt: str) -> tuple[dict[str, Any], str]:
    """(the judge part's "rubric" spec, which rubric it is): the ``## LLM Judge Rubric``
    section's criteria, else the Grading Criteria bullets, as PinchBench's judge takes them."""
    expected = doc.sections.get("expected behavior", ("", 0))[0]
    context = prompt + (f"\n\n## Expected Behavior\n{expected}" if expected else "")
    section = doc.sections.get("llm judge rubric")
    if section and section[0].strip():
        criteria, preamble = rubric_criteria(doc, *section)
        if preamble:
            context += f"\n\n## Rubric notes\n{preamble}"
        which = f"'## LLM Judge Rubric' section ({len(criteria)} weighted criteria)"
    else:
        criteria = bullets(doc)
        which = ("Grading Criteria bullets, equal weights (the task has no '## LLM Judge "
                 "Rubric' section)")
    return ({"kind": "rubric", "scoring": "graded", "view": "pinchbench", "criteria": criteria,
             "context": context}, which)


def rubric_criteria(doc: Doc, text: str, line: int) -> tuple[list[dict[str, Any]], str]:
    """(criteria, text before the first one) of an LLM Judge Rubric section: one criterion per
    ``### `` heading (its whole block the text, the heading without ``Criterion N:`` and
    ``(Weight: X%)`` its name, X its weight); no heading: the section is one criterion."""
    blocks: list[tuple[str, list[str]]] = []
    preamble: list[str] = []
    for row in text.splitlines():
        heading = _CRITERION.fullmatch(row.rstrip())
        if heading:
            blocks.append((heading.group(1), [row]))
        else:
            (blocks[-1][1] if blocks else preamble).append(row)
    if not blocks:
        return [{"text": text.strip(), "weight": 1.0, "name": "Overall"}], ""
    weights = [_WEIGHT.search(heading) for heading, _ in blocks]
    if any(weights) and not all(weights):
        missing = next(h for (h, _), w in zip(blocks, weights, strict=True) if not w)
        doc.error(f"LLM Judge Rubric criterion {missing!r} gives no '(Weight: N%)' while "
                  "others do", line, "give every criterion heading a weight, or none")
    criteria = []
    for (heading, rows), weight in zip(blocks, weights, strict=True):
        name = _NUMBERED.sub("", _WEIGHT.sub("", heading), count=1).strip(" :-") or heading
        criteria.append({"text": "\n".join(rows).strip(), "name": name[:200],
                         "weight": float(weight.group(1)) if weight else 1.0})
    return criteria, "\n".join(preamble).strip()


def bullets(doc: Doc) -> list[dict[str, Any]]:
    """The Grading Criteria bullets as equal-weight criteria (PinchBench's fallback rubric)."""
    text, line = doc.sections.get("grading criteria", ("", 0))
    criteria, fence = [], False
    for row in text.splitlines():
        if row.lstrip().startswith(("```", "~~~")):
            fence = not fence
        bullet = None if fence else _BULLET.fullmatch(row.rstrip())
        if bullet:
            criteria.append({"text": bullet.group(1), "weight": 1.0})
    if not criteria:
        doc.error("a judged task needs a '## LLM Judge Rubric' section or a '## Grading "
                  "Criteria' bullet list", line or None, "list one criterion per '- ' line")
    return criteria


def grading_weights(doc: Doc) -> dict[str, float]:
    """A hybrid task's ``grading_weights`` (0.5 for a missing key; 0.5 each when they sum to
    0), as PinchBench's ``_combine_grades`` reads them."""
    raw, line = doc.meta.get("grading_weights"), doc.lines.get("grading_weights")
    if raw is None:
        return dict(DEFAULT_GRADING_WEIGHTS)
    if not isinstance(raw, dict):
        doc.error("grading_weights must map 'automated' and 'llm_judge' to numbers", line)
    weights = {}
    for key, default in DEFAULT_GRADING_WEIGHTS.items():
        value = raw.get(key, default)
        if not is_finite_number(value) or value < 0:
            doc.error(f"grading_weights.{key} {value!r} is not a number >= 0", line,
                      "give e.g. 'automated: 0.4' and 'llm_judge: 0.6'")
        weights[key] = float(value)
    return weights if sum(weights.values()) > 0 else dict(DEFAULT_GRADING_WEIGHTS)




def openclaw_transcript(transcript: list, answer: str = "") -> list:
    """hscale's canonical transcript as the OpenClaw session events PinchBench's graders read
    (the tool mapping is in hscale.harness.tasks._pinchbench's docstring). With no transcript,
    the final ``answer`` is the one assistant message; an empty turn gives no message. Stdlib
    only: this source is embedded in the generated graders."""
    import json
    import shlex

    def tool(name: object, args: object) -> tuple[str, dict]:
        args = args if isinstance(args, dict) else {}
        arg = {k: "" if v is None else str(v) for k, v in args.items()}
        if name == "read":
            return "read", {"path": arg.get("path", "")}
        if name == "write":
            return "write", {"path": arg.get("path", ""), "content": arg.get("text", "")}
        if name == "list":
            return "exec", {"command": "find . -type f"}
        if name == "search":
            return "exec", {"command": "grep -rnF -- " + shlex.quote(arg.get("word", "")) + " ."}
        if name == "calc":
            return "exec", {"command": "python3 -c "
                            + shlex.quote("print(" + arg.get("expr", "") + ")")}
        if name == "run":
            return "exec", {"command": arg.get("command", "")}
        return str(name), dict(args)

    def message(role: str, content: list, **extra: object) -> dict:
        return {"type": "message", "message": {"role": role, "content": content, **extra}}

    if not transcript:
        transcript = [{"role": "assistant", "content": answer or ""}]
    events, pending, calls = [], [], 0
    for turn in transcript:
        if not isinstance(turn, dict):
            continue
        role, text = turn.get("role"), turn.get("content")
        if not isinstance(text, str):
            text = "" if text is None else json.dumps(text, ensure_ascii=False)
        if role == "user":
            events.append(message("user", [{"type": "text", "text": text}]))
        elif role == "assistant":
            items = [{"type": "text", "text": text}] if text.strip() else []
            call = turn.get("tool_call")
            if isinstance(call, dict) and call.get("name"):
                calls += 1
                name, args = tool(call["name"], call.get("args"))
                items.append({"type": "toolCall", "id": f"call_{calls}", "name": name,
                              "arguments": args})
                pending.append((f"call_{calls}", name))
            if items:
                events.append(message("assistant", items))
        elif role == "tool":
            call_id, name = (pending.pop() if pending  # the call of the turn just before
                             else (f"call_{calls}", tool(turn.get("name"), {})[0]))
            events.append(message("toolResult", [{"type": "text", "text": text}],
                                  toolCallId=call_id, toolName=name,
                                  isError=turn.get("ok") is False))
    return events


def judge_summary(transcript: list, answer: str = "") -> str:
    """The episode as PinchBench's judge is shown it (``_summarize_transcript``): a line per
    tool call (``Tool: name(<arguments as JSON>)``), per tool result (``Result: `` and the
    first 200 characters of its first content item as Python prints it) and per user message
    (``User: `` and its first content item). The assistant's text is not shown, nor are the
    workspace's files: PinchBench's judge sees neither."""
    lines = []
    for event in openclaw_transcript(transcript, answer):
        role, content = event["message"]["role"], event["message"]["content"]
        if role == "assistant":
            lines += [f"Tool: {item['name']}({json.dumps(item['arguments'])})"
                      for item in content if item["type"] == "toolCall"]
        elif role == "toolResult" and content:
            lines.append(f"Result: {str(content[0])[:200]}")
        elif role == "user" and content:
            lines.append(f"User: {content[0]}")
    return "\n".join(lines)


register_view("pinchbench", judge_summary)  # the rubric view "pinchbench" (see judge)


_GRADER_MAIN = '''

def main():
    workspace = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("WORKSPACE", ".")
    answer = os.environ.get("FINAL_ANSWER", "")
    if os.environ.get("FINAL_ANSWER_FILE"):
        with open(os.environ["FINAL_ANSWER_FILE"], encoding="utf-8", errors="replace") as f:
            answer = f.read()
    canonical = []
    if os.environ.get("TRANSCRIPT_FILE"):
        with open(os.environ["TRANSCRIPT_FILE"], encoding="utf-8",
                  errors="surrogateescape") as f:
            canonical = json.load(f)
    transcript = openclaw_transcript(canonical, answer)
    namespace = {"__name__": "pinchbench_task"}
    try:
        # Blank lines first, so tracebacks give the task file's own line numbers.
        exec(compile("\\n" * (FIRST_LINE - 1) + GRADE_CODE, SOURCE, "exec"), namespace)
        # Positional, as PinchBench calls it: grade(transcript, workspace_path).
        scores = namespace["grade"](transcript, workspace)
    except Exception as exc:  # first line: where in the task file, then the traceback
        lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
                 if f.filename == SOURCE]
        where = f"{SOURCE}:{lines[-1]}" if lines else SOURCE
        print(f"{where}: grade() raised {type(exc).__name__}: {exc}", file=sys.stderr)
        traceback.print_exc()
        sys.exit(1)
    if not isinstance(scores, dict):
        print(f"grade() returned {type(scores).__name__}, not a dict: scored 0",
              file=sys.stderr)
        scores = {}
    # PinchBench's _average_scores: the mean of the int/float values (booleans too).
    values = [float(v) for v in scores.values()
              if isinstance(v, (int, float)) and math.isfinite(float(v))]
    mean = sum(values) / len(values) if values else 0.0
    print(min(1.0, max(0.0, mean)))


if __name__ == "__main__":
    main()
'''


def grader_script(code: str, line: int, source: Path, task_id: str) -> Path:
    """Write the standalone grader of the task file ``source`` (its grade() ``code``, from
    ``line``) into the cache, named by its content's sha256."""
    script = (f'"""PinchBench grader for task {task_id}, generated by hscale. Standalone: '
              "Python stdlib,\nplus what grade() imports.\n\n"
              "Usage: grader.py WORKSPACE (or env WORKSPACE); the final answer is read from "
              "the file named\nby env FINAL_ANSWER_FILE, else taken from env FINAL_ANSWER, "
              "and the canonical transcript\nfrom the JSON file named by env TRANSCRIPT_FILE. "
              "Runs the task's grade() on the transcript\nas OpenClaw session events and "
              "prints the mean of the numbers in the dict it returns,\nclamped to [0, 1] "
              '(0 when there are none).\n"""\n\n'
              "import json\nimport math\nimport os\nimport sys\nimport traceback\n\n"
              f"SOURCE = {str(source.resolve())!r}\nFIRST_LINE = {line}\n"
              f"GRADE_CODE = {code!r}\n\n\n" + inspect.getsource(openclaw_transcript)
              + _GRADER_MAIN)
    digest = hashlib.sha256(script.encode("utf-8")).hexdigest()
    target = cache_dir().expanduser() / "pinchbench" / f"{digest}.py"
    if target.is_file():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".grader-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(script)
        os.replace(tmp, target)
    except OSError as exc:
        raise HscaleError(f"{source}: cannot write its grader to {target.parent} "
                          f"({exc.strerror or exc})",
                          "set HSCALE_CACHE to a writable folder") from None
    return target


__all__ = ["automated_spec", "grader_script", "grading_weights", "judge_spec", "judge_summary",
           "openclaw_transcript"]
