"""O: how a tool result is shown to the model (plain text, JSON with status, markdown).

``render`` writes the tool message; ``parse`` reads one back (scripted policies use it), so
the two are inverse on ok/output/error; the truncation flag survives only where it is shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hscale.errors import HscaleError
from hscale.harness._types import ToolResult
from hscale.harness.components._registry import register

WORDS = (
    "results are plain text.",
    "results are json with a status.",
    "results are markdown, cut output is marked.",
    "error :",
    "status ok error output message truncated true false",
    "### result error",
    "```",
    "[output cut]",
)


class Observation:
    """Base class: ``describe`` is one sentence for the system prompt."""

    def describe(self) -> str:
        raise NotImplementedError

    def render(self, result: ToolResult) -> str:
        raise NotImplementedError

    def parse(self, text: str) -> ToolResult:
        raise NotImplementedError


@register("observation", "plain")
@dataclass(frozen=True)
class Plain(Observation):
    """The raw output, or ``error: <message>``; a cut output is not marked."""

    def describe(self) -> str:
        return "results are plain text."

    def render(self, result: ToolResult) -> str:
        return result.output if result.ok else f"error: {result.error}"

    def parse(self, text: str) -> ToolResult:
        if text.startswith("error: "):
            return ToolResult(ok=False, error=text[len("error: "):])
        return ToolResult(ok=True, output=text)


@register("observation", "json")
@dataclass(frozen=True)
class Json(Observation):
    """A JSON object with a status; multi-line output as a list of lines (no escaped newlines)."""

    def describe(self) -> str:
        return "results are json with a status."

    def render(self, result: ToolResult) -> str:
        if not result.ok:
            obj: dict[str, object] = {"status": "error", "message": result.error}
        else:
            lines = result.output.split("\n")
            obj = {"status": "ok", "output": lines if len(lines) > 1 else result.output}
            if result.truncated:
                obj["truncated"] = True
        return json.dumps(obj, ensure_ascii=False)

    def parse(self, text: str) -> ToolResult:
        try:
            obj = json.loads(text)
        except ValueError:
            raise HscaleError(f"not a json observation: {text[:40]!r}") from None
        if not isinstance(obj, dict) or obj.get("status") not in ("ok", "error"):
            raise HscaleError(f"not a json observation: {text[:40]!r}")
        if obj["status"] == "error":
            return ToolResult(ok=False, error=str(obj.get("message", "")))
        out = obj.get("output", "")
        out = "\n".join(out) if isinstance(out, list) else str(out)
        return ToolResult(ok=True, output=out, truncated=bool(obj.get("truncated", False)))


@register("observation", "markdown")
@dataclass(frozen=True)
class Markdown(Observation):
    """A ``### result`` header and a fenced block; a cut output ends with ``[output cut]``."""

    OK = "### result\n```\n"
    END = "\n```"
    CUT = "\n[output cut]"
    ERROR = "### error\n"

    def describe(self) -> str:
        return "results are markdown, cut output is marked."

    def render(self, result: ToolResult) -> str:
        if not result.ok:
            return self.ERROR + result.error
        return self.OK + result.output + self.END + (self.CUT if result.truncated else "")

    def parse(self, text: str) -> ToolResult:
        if text.startswith(self.ERROR):
            return ToolResult(ok=False, error=text[len(self.ERROR):])
        if not text.startswith(self.OK):
            raise HscaleError(f"not a markdown observation: {text[:40]!r}")
        body, cut = text[len(self.OK):], text.endswith(self.CUT)
        if cut:
            body = body[: -len(self.CUT)]
        if not body.endswith(self.END):
            raise HscaleError(f"markdown observation without a closing fence: {text[:40]!r}")
        return ToolResult(ok=True, output=body[: -len(self.END)], truncated=cut)
