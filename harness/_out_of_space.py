"""Harnesses outside the 3^5 space, for out-of-space evaluation.

Each brings a protocol family none of the 243 uses (shell commands; ``action:`` lines), plus
its own prompt style and observation style, so it differs from every in-space harness in tool
syntax, prompt and observations. Build them with ``Harness.from_name("oos/shell")``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from hscale.errors import HscaleError
from hscale.harness._harness import Harness
from hscale.harness._types import ParseError, ToolCall, ToolResult
from hscale.harness.components import (
    MSG_LONG,
    MSG_ONE,
    Observation,
    Parsed,
    PromptParts,
    SystemPrompt,
    ToolInterface,
    ToolSpec,
    bounded,
    no_call_or_error,
    register,
)

WORDS = (
    # manual prompt + shell
    "NAME TOOLS NOTES TASK",
    "agent - does file tasks, one tool call per turn",
    "shell commands, one per turn, after $:",
    "$ ls cat echo grep bc some text > | ' 2 + 3",
    "command not found: usage: file word sum",
    "unbalanced quotes",
    "output ends with [exit 0] on success, [exit 1] on failure.",
    "[exit 0, cut]",
    # qa prompt + action lines
    "q: who are you? a: a helper for file tasks, one tool call per turn.",
    "q: how do tools work? q: what else?",
    "to use a tool, write lines:",
    "action: dir show put lookup math file body key input",
    "results start with observation: or failure:.",
    "observation: (cut) failure:",
)


# --- prompt styles ----------------------------------------------------------------------------
def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.split("\n"))


@register("system_prompt", "manual")
@dataclass(frozen=True)
class Manual(SystemPrompt):
    """A man page: upper-case section names, indented bodies."""

    def render(self, parts: PromptParts) -> str:
        notes = " ".join(x for x in (parts.observation, parts.context, parts.workflow,
                                     parts.extra) if x)
        return "\n".join([
            "NAME", _indent("agent - does file tasks, one tool call per turn"),
            "TOOLS", _indent(parts.tools),
            "NOTES", _indent(notes),
        ])

    def render_task(self, query: str) -> str:
        return f"TASK\n{_indent(query)}"


@register("system_prompt", "qa")
@dataclass(frozen=True)
class QandA(SystemPrompt):
    """Questions and answers, as in a help page."""

    def render(self, parts: PromptParts) -> str:
        notes = " ".join(x for x in (parts.observation, parts.context, parts.workflow,
                                     parts.extra) if x)
        return "\n".join([
            "q: who are you?", "a: a helper for file tasks, one tool call per turn.",
            "q: how do tools work?", f"a: {parts.tools}",
            "q: what else?", f"a: {notes}",
        ])

    def render_task(self, query: str) -> str:
        return f"q: {query}"


# --- observation styles -----------------------------------------------------------------------
@register("observation", "exit_code")
@dataclass(frozen=True)
class ExitCode(Observation):
    """Terminal style: the output, then ``[exit 0]`` (``[exit 1]`` after an error message)."""

    OK, ERR, CUT = "[exit 0]", "[exit 1]", "[exit 0, cut]"

    def describe(self) -> str:
        return "output ends with [exit 0] on success, [exit 1] on failure."

    def render(self, result: ToolResult) -> str:
        body = result.output if result.ok else result.error
        mark = self.ERR if not result.ok else self.CUT if result.truncated else self.OK
        return f"{body}\n{mark}" if body else mark

    def parse(self, text: str) -> ToolResult:
        for mark in (self.OK, self.ERR, self.CUT):
            if text == mark or text.endswith("\n" + mark):
                body = text[: -len(mark)][:-1] if text != mark else ""
                if mark == self.ERR:
                    return ToolResult(ok=False, error=body)
                return ToolResult(ok=True, output=body, truncated=mark == self.CUT)
        return ToolResult(ok=True, output=text)


@register("observation", "labelled")
@dataclass(frozen=True)
class Labelled(Observation):
    """``observation: <output>`` or ``failure: <message>``; a cut output says ``(cut)``."""

    OK, CUT, ERR = "observation: ", "observation (cut): ", "failure: "

    def describe(self) -> str:
        return "results start with observation: or failure:."

    def render(self, result: ToolResult) -> str:
        if not result.ok:
            return self.ERR + result.error
        return (self.CUT if result.truncated else self.OK) + result.output

    def parse(self, text: str) -> ToolResult:
        if text.startswith(self.ERR):
            return ToolResult(ok=False, error=text[len(self.ERR):])
        if text.startswith(self.CUT):
            return ToolResult(ok=True, output=text[len(self.CUT):], truncated=True)
        return ToolResult(ok=True, output=text.removeprefix(self.OK))


# --- shell protocol ---------------------------------------------------------------------------
_PROMPT = re.compile(r"^[ \t]*\$[ \t]", re.MULTILINE)


def _command_end(text: str, i: int) -> int | None:
    """Index of the first newline outside quotes from ``i`` (len if none; None if unclosed)."""
    quote = ""
    while i < len(text):
        ch = text[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif quote == '"':
            if ch == "\\":
                i += 1
            elif ch == '"':
                quote = ""
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "\n":
            return i
        i += 1
    return None if quote else len(text)


@register("tool_interface", "shell")
@dataclass(frozen=True)
class Shell(ToolInterface):
    """One shell command after ``$ ``, POSIX quoting: ``$ cat a.txt``, ``$ echo 'x' > a.txt``."""

    TOOLS = (
        ToolSpec("list", "ls"),
        ToolSpec("read", "cat", (("path", "file"),), (("offset", "start"),)),
        ToolSpec("write", "echo", (("text", "text"), ("path", "file"))),
        ToolSpec("search", "grep", (("word", "word"),)),
        ToolSpec("calc", "bc", (("expr", "sum"),)),
        ToolSpec("run", "sh", (("command", "command"),)),
    )
    USAGE = {"ls": "ls", "cat": "cat file", "echo": "echo text > file", "grep": "grep word",
             "bc": "echo sum | bc", "sh": "sh -c 'command'"}

    def describe(self) -> str:
        samples = [ToolCall("list"), ToolCall("read", {"path": "a.txt"}),
                   ToolCall("write", {"path": "a.txt", "text": "some text"}),
                   ToolCall("search", {"word": "word"}), ToolCall("calc", {"expr": "2 + 3"}),
                   ToolCall("run", {"command": "ls -l"})]
        if self.optional_on and "read" in self.enabled:  # a window further into a long file
            samples.insert(2, ToolCall("read", {"path": "a.txt", "offset": "4000"}))
        return "shell commands, one per turn, after $:\n" + "\n".join(
            self.format_call(c) for c in samples if c.name in self.enabled)

    def format_call(self, call: ToolCall) -> str:
        self.checked(call)
        a = {k: shlex.quote(v) for k, v in call.args.items()}
        if call.name == "read" and "offset" in call.args:  # tail -c +N starts at byte N (from 1)
            start = call.args["offset"]
            start = str(int(start) + 1) if re.fullmatch(r"[0-9]{1,12}", start) else start
            return f"$ tail -c +{shlex.quote(start)} {a['path']}"
        return "$ " + {
            "list": "ls",
            "read": f"cat {a.get('path')}",
            "write": f"echo {a.get('text')} > {a.get('path')}",
            "search": f"grep {a.get('word')}",
            "calc": f"echo {a.get('expr')} | bc",
            "run": f"sh -c {a.get('command')}",
        }[call.name]

    def parse(self, text: str) -> Parsed:
        parsed = self._parse(text)
        if isinstance(parsed, ToolCall) and parsed.name not in self.enabled:
            own = next(s.name for s in type(self).TOOLS if s.canonical == parsed.name)
            return ParseError(f"command not found: {own}")
        return parsed

    def _parse(self, text: str) -> Parsed:
        text, cut = bounded(text)
        found = _PROMPT.search(text)
        if found is None:
            return no_call_or_error(text)
        end = _command_end(text, found.end())
        if cut and end in (None, len(text)):  # the command may go on past what is read
            return ParseError(MSG_LONG)
        if end is None:
            return ParseError("unbalanced quotes")
        if _PROMPT.search(text, end):
            return ParseError(MSG_ONE)
        try:
            words = shlex.split(text[found.end():end])
        except ValueError:
            return ParseError("unbalanced quotes")
        if not words:
            return ParseError("usage: ls")
        tail = self.optional_on and "read" in self.enabled
        if words[0] not in {s.name for s in self.TOOLS} | ({"tail"} if tail else set()):
            return ParseError(f"command not found: {words[0]}")
        match words:
            case ["tail", "-c", start, path] if re.fullmatch(r"\+[0-9]{1,12}", start):
                return ToolCall("read", {"path": path,
                                         "offset": str(max(int(start[1:]) - 1, 0))})
            case ["tail", *_]:
                return ParseError("usage: tail -c +start file")
            case ["sh", "-c", command]:
                return ToolCall("run", {"command": command})
            case ["ls"]:
                return ToolCall("list")
            case ["cat", path]:
                return ToolCall("read", {"path": path})
            case ["echo", expr, "|", "bc"]:
                return ToolCall("calc", {"expr": expr})
            case ["echo", body, ">", path]:
                return ToolCall("write", {"path": path, "text": body})
            case ["grep", word]:
                return ToolCall("search", {"word": word})
            case [cmd, *_] if cmd in self.USAGE:
                return ParseError(f"usage: {self.USAGE[cmd]}")
        return ParseError(f"command not found: {words[0]}")


# --- action-line protocol ---------------------------------------------------------------------
_ACTION = re.compile(r"^action:[ ]?(.*)$", re.MULTILINE)


@register("tool_interface", "action_lines")
@dataclass(frozen=True)
class ActionLines(ToolInterface):
    """``action: <tool>`` then one ``<arg>: <value>`` line per argument; the last value runs
    to the end of the message, so file text needs no quoting or escaping."""

    TOOLS = (
        ToolSpec("list", "dir"),
        ToolSpec("read", "show", (("path", "file"),), (("offset", "from"),)),
        ToolSpec("write", "put", (("path", "file"), ("text", "body"))),
        ToolSpec("search", "lookup", (("word", "key"),)),
        ToolSpec("calc", "math", (("expr", "input"),)),
        ToolSpec("run", "execute", (("command", "cmd"),)),
    )

    def describe(self) -> str:
        sigs = "; ".join(" ".join((s.name, ", ".join(s.own_args))).strip() for s in self.TOOLS)
        return (f"to use a tool, write lines:\n{self.example()}\ntools: {sigs}"
                + self.optional_note())

    def format_call(self, call: ToolCall) -> str:
        spec = self.checked(call)
        # optional arguments first: the last required one runs to the end of the message
        pairs = [*(p for p in spec.optional if p[0] in call.args), *spec.args]
        if any("\n" in call.args[c] for c, _ in pairs[:-1]):
            raise HscaleError(f"{spec.name}: only its last argument may span lines")
        return "\n".join([f"action: {spec.name}"] +
                         [f"{own}: {call.args[c]}" for c, own in pairs])

    def parse(self, text: str) -> Parsed:
        text, cut = bounded(text)
        found = _ACTION.search(text)
        if found is None:
            return no_call_or_error(text)
        name, rest = found.group(1).strip(), text[found.end():]
        spec = self.own(name)
        if spec is None:
            return ParseError(f"unknown tool {name}")
        args: dict[str, object] = {}
        for _, own in self.optional(spec):  # optional lines come first
            label = f"\n{own}:"
            if rest.startswith(label):
                line_end = rest.find("\n", len(label))
                line_end = len(rest) if line_end < 0 else line_end
                args[own] = rest[len(label):line_end].removeprefix(" ")
                rest = rest[line_end:]
        for i, own in enumerate(spec.own_args):
            label = f"\n{own}:"
            if not rest.startswith(label):
                return ParseError(f"{name} needs {', '.join(spec.own_args)}")
            rest = rest[len(label):].removeprefix(" ")
            if i == len(spec.args) - 1:
                if cut:  # the last value runs to the end of the turn, past what is read
                    return ParseError(MSG_LONG)
                args[own], rest = rest, ""
            else:
                line_end = rest.find("\n")
                line_end = len(rest) if line_end < 0 else line_end
                args[own], rest = rest[:line_end], rest[line_end:]
        if rest.strip():
            return ParseError(MSG_ONE if _ACTION.search(rest) else f"{name} takes no args")
        return self.to_canonical(name, args)


# --- the harnesses (registered as presets in hscale.harness._space) ----------------------------
def shell_harness() -> Harness:
    """Man-page prompt, shell commands, terminal observations."""
    return Harness.from_names({"system_prompt": "manual", "tool_interface": "shell",
                               "observation": "exit_code", "context": "full",
                               "workflow": "react"}, name="oos/shell")


def actions_harness() -> Harness:
    """Question-and-answer prompt, ``action:`` lines, labelled observations, a 3-turn window."""
    return Harness.from_names({"system_prompt": "qa", "tool_interface": "action_lines",
                               "observation": "labelled",
                               "context": {"name": "window", "params": {"k": 3}},
                               "workflow": "react"}, name="oos/actions")
