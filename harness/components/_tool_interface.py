"""T: the tool interface: tool names, argument names and call syntax differ per realization.

Each realization maps the canonical tools of ``hscale.harness._types`` to its own names, describes
them for the system prompt, writes a correct call (``format_call``) and reads a model turn
(``parse``): a canonical ``ToolCall``, ``None`` when the turn holds no call (a final answer),
or a ``ParseError`` with a short in-vocabulary message. Parsing never raises: model output is
untrusted input. It is also linear: a parser reads at most the first ``MAX_PARSE_CHARS``
characters of a turn (a call must end within them; text after them is not looked at), and no
pattern has overlapping quantifiers that could backtrack, since the compact context re-parses
old turns at every model call.
"""

from __future__ import annotations

import ast
import copy as copy_module
import json
import re
from dataclasses import dataclass

from hscale.errors import HscaleError
from hscale.harness._types import BUILTIN_TOOLS, CANONICAL_TOOLS, ParseError, ToolCall
from hscale.harness.components._registry import register

Parsed = ToolCall | ParseError | None

WORDS = (
    # shared
    "tools: call: a.txt also",
    "wrong call syntax",
    "one call per turn",
    "unknown tool",
    "needs takes no args must be text use and",
    "bad json unbalanced tags tag body missing python keyword parens",
    "call too long",
    # json_call
    "tool_call name arguments",
    "list_files read_file write_file search_files calculator path content query expression",
    # xml_call
    "ls open save find eval file term quot lt gt amp",
    # python_call
    "listdir fetch store grep compute data pattern formula",
)

MSG_SYNTAX = "wrong call syntax"
MSG_ONE = "one call per turn"
MSG_TAGS = "unbalanced tags"
MSG_LONG = "call too long"

# What an example call writes for each canonical argument.
SAMPLE_ARGS = {"path": "a.txt", "text": "text", "word": "word", "expr": "2 + 3",
               "command": "ls -l"}

# Characters of a turn a parser reads (16 KiB; a write's text is at most 4 KiB): a bound on
# the work per turn, whatever the model wrote.
MAX_PARSE_CHARS = 16 * 1024


def bounded(text: str) -> tuple[str, bool]:
    """The part of a turn a parser reads, and whether the turn was longer."""
    return text[:MAX_PARSE_CHARS], len(text) > MAX_PARSE_CHARS


@dataclass(frozen=True)
class ToolSpec:
    """One canonical tool under an interface's own name and argument names."""

    canonical: str
    name: str
    args: tuple[tuple[str, str], ...] = ()  # (canonical argument, own argument), in order
    optional: tuple[tuple[str, str], ...] = ()  # arguments it may also take (OPTIONAL_ARGS)

    @property
    def own_args(self) -> tuple[str, ...]:
        return tuple(own for _, own in self.args)

    @property
    def canonical_args(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.args)


# Text that looks like an attempt at a tool call in some syntax (tags, f(...), $ cmd, ...).
# No two neighbouring quantifiers can match the same character and line starts skip only
# blanks ([^\S\n]), so the search is linear ("<" + spaces, or newlines, once took seconds).
_CALL_LIKE = re.compile(
    r"<\s*(?:/\s*)?[A-Za-z_]|\b[A-Za-z_]\w*\(|\{\s*\"name\"|^[^\S\n]*\$\s"
    r"|^[^\S\n]*action\s*:",
    re.MULTILINE | re.IGNORECASE,
)


def no_call_or_error(text: str) -> ParseError | None:
    """``None`` for plain text (a final answer); a syntax error if it looks like a call."""
    return ParseError(MSG_SYNTAX) if _CALL_LIKE.search(bounded(text)[0]) else None


class ToolInterface:
    """Base class: a table of :class:`ToolSpec` plus the syntax in the subclass.

    ``TOOLS`` names every canonical tool; :meth:`only` gives the interface of one task's tools
    (``Task.tools``), which describes, writes and parses those alone: another tool's name is
    an unknown tool, as it always was (the built-in world's five tools leave the interface as
    it was before ``run`` existed). With ``optional``, its tools take their optional
    arguments too (``read``'s ``offset``): the real formats' tasks, whose files are long.
    """

    TOOLS: tuple[ToolSpec, ...] = ()
    optional_on: bool = False

    def __post_init__(self) -> None:
        # a new interface shows the built-in world's tools; a task's own come by only()
        object.__setattr__(self, "TOOLS", tuple(s for s in type(self).TOOLS
                                                if s.canonical in BUILTIN_TOOLS))

    def only(self, tools: tuple[str, ...], optional: bool = False) -> ToolInterface:
        """A copy whose tools are the canonical ``tools`` (in the table's order), taking
        their optional arguments when ``optional``."""
        copy = copy_module.copy(self)
        object.__setattr__(copy, "TOOLS", tuple(s for s in type(self).TOOLS
                                                if s.canonical in tools))
        object.__setattr__(copy, "optional_on", optional)
        return copy

    def optional(self, spec: ToolSpec) -> tuple[tuple[str, str], ...]:
        """The optional (canonical, own) arguments ``spec`` takes here."""
        return spec.optional if self.optional_on else ()

    enabled = property(lambda self: tuple(s.canonical for s in self.TOOLS))  # canonical names

    def spec(self, canonical: str) -> ToolSpec:
        """A tool's spec, enabled or not: any canonical call can be written (a scripted
        policy writes with the harness template); only enabled ones are shown and parsed."""
        for s in type(self).TOOLS:
            if s.canonical == canonical:
                return s
        raise HscaleError(
            f"{type(self).__name__} has no tool {canonical!r}",
            f"canonical tools: {', '.join(CANONICAL_TOOLS)}",
        )

    def own(self, name: str) -> ToolSpec | None:
        return next((s for s in self.TOOLS if s.name == name), None)

    def checked(self, call: ToolCall) -> ToolSpec:
        """The spec for a canonical call whose argument names are exactly right."""
        spec = self.spec(call.name)
        extra = set(call.args) - set(spec.canonical_args)
        if not set(spec.canonical_args) <= set(call.args) or \
                not extra <= {c for c, _ in spec.optional}:
            raise HscaleError(
                f"call {call.name} has args {sorted(call.args)}",
                f"{call.name} takes {', '.join(CANONICAL_TOOLS.get(call.name, ())) or 'none'}",
            )
        return spec

    def to_canonical(self, name: str, args: dict[str, object]) -> ToolCall | ParseError:
        """Map a call written with own names to the canonical call, or say what is wrong."""
        spec = self.own(name)
        if spec is None:
            return ParseError(f"unknown tool {name}")
        optional = self.optional(spec)
        extra = set(args) - set(spec.own_args)
        if not set(spec.own_args) <= set(args) or not extra <= {own for _, own in optional}:
            if not spec.args:
                return ParseError(f"{name} takes no args")
            return ParseError(f"{name} needs {', '.join(spec.own_args)}")
        numbers = {own for _, own in optional}  # an offset may come as a number
        if not all(isinstance(v, str) or (k in numbers and type(v) is int)
                   for k, v in args.items()):
            return ParseError("args must be text")
        return ToolCall(spec.canonical, {c: str(args[own]) for c, own in (*spec.args, *optional)
                                         if own in args})

    def own_pairs(self, spec: ToolSpec, call: ToolCall) -> list[tuple[str, str]]:
        """(canonical, own) of the arguments ``call`` gives: required, then optional."""
        return [*spec.args, *((c, own) for c, own in spec.optional if c in call.args)]

    def optional_note(self) -> str:
        """The line a description adds for the optional arguments (empty when off)."""
        notes = [f"{s.name} also takes {own}" for s in self.TOOLS for _, own in self.optional(s)]
        return "\n" + "; ".join(notes) + " (the character to start at)" if notes else ""

    def describe(self) -> str:
        raise NotImplementedError

    def format_call(self, call: ToolCall) -> str:
        raise NotImplementedError

    def parse(self, text: str) -> Parsed:
        raise NotImplementedError

    def example_tool(self) -> str:
        """The tool an example shows: read, or the first tool a task without read has."""
        return "read" if "read" in self.enabled or not self.TOOLS else self.TOOLS[0].canonical

    def example(self) -> str:
        name = self.example_tool()
        return self.format_call(ToolCall(name, {a: SAMPLE_ARGS[a] for a in
                                                CANONICAL_TOOLS[name]}))


# --------------------------------------------------------------------------------------------
@register("tool_interface", "json_call")
@dataclass(frozen=True)
class JsonCall(ToolInterface):
    """Hermes style: a JSON object with ``name`` and ``arguments`` inside <tool_call> tags."""

    TOOLS = (
        ToolSpec("list", "list_files"),
        ToolSpec("read", "read_file", (("path", "path"),), (("offset", "offset"),)),
        ToolSpec("write", "write_file", (("path", "path"), ("text", "content"))),
        ToolSpec("search", "search_files", (("word", "query"),)),
        ToolSpec("calc", "calculator", (("expr", "expression"),)),
        ToolSpec("run", "run_command", (("command", "command"),)),
    )
    OPEN = "<tool_call>"
    CLOSE = "</tool_call>"

    def describe(self) -> str:
        others = "; ".join(
            f"{s.name}: {', '.join(s.own_args)}" if s.args else s.name
            for s in self.TOOLS if s.canonical != self.example_tool()
        )
        return f"{self.example()}\nalso: {others}" + self.optional_note()

    def format_call(self, call: ToolCall) -> str:
        spec = self.checked(call)
        args = {own: call.args[c] for c, own in self.own_pairs(spec, call)}
        body = json.dumps({"name": spec.name, "arguments": args}, ensure_ascii=False)
        return f"{self.OPEN} {body} {self.CLOSE}"

    def parse(self, text: str) -> Parsed:
        text = bounded(text)[0]
        start = text.find(self.OPEN)
        if start < 0:
            return ParseError(MSG_TAGS) if self.CLOSE in text else no_call_or_error(text)
        if self.CLOSE in text[:start]:
            return ParseError(MSG_TAGS)
        rest = text[start + len(self.OPEN):]
        skip = len(rest) - len(rest.lstrip())
        try:
            obj, end = json.JSONDecoder().raw_decode(rest, skip)
        except (ValueError, RecursionError):
            return ParseError("bad json" if self.CLOSE in rest else MSG_TAGS)
        after = rest[end:].lstrip()
        if not after.startswith(self.CLOSE):
            return ParseError("bad json" if self.CLOSE in after else MSG_TAGS)
        tail = after[len(self.CLOSE):]
        if self.OPEN in tail:
            return ParseError(MSG_ONE)
        if self.CLOSE in tail:
            return ParseError(MSG_TAGS)
        if not isinstance(obj, dict) or not set(obj) <= {"name", "arguments"} or "name" not in obj:
            return ParseError("call needs name and arguments")
        args = obj.get("arguments", {})
        if not isinstance(obj["name"], str) or not isinstance(args, dict):
            return ParseError("call needs name and arguments")
        return self.to_canonical(obj["name"], args)


# --------------------------------------------------------------------------------------------
_TAG_START = re.compile(r"<\s*(?:/\s*)?[A-Za-z_]")  # not \s*/?\s*: quadratic on spaces
_TAG = re.compile(r'<([A-Za-z_]\w*)((?:\s+[A-Za-z_]\w*\s*=\s*"[^"<]*")*)\s*(/?)>')
_ATTR = re.compile(r'([A-Za-z_]\w*)\s*=\s*"([^"<]*)"')
_ENTITY = re.compile(r"&(quot|lt|gt|amp|#10|#13);")
_ENTITIES = {"quot": '"', "lt": "<", "gt": ">", "amp": "&", "#10": "\n", "#13": "\r"}


def _xml_attr(value: str) -> str:
    return (value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace("\n", "&#10;").replace("\r", "&#13;"))


def _xml_body(value: str) -> str:
    return value.replace("&", "&amp;").replace("<", "&lt;").replace("\r", "&#13;")


def _xml_unescape(value: str) -> str:
    return _ENTITY.sub(lambda m: _ENTITIES[m.group(1)], value)


@dataclass(frozen=True)
class XmlSpec(ToolSpec):
    """An XML tool: ``args`` become attributes; ``body`` (a canonical arg) the element text."""

    body: str | None = None

    @property
    def canonical_args(self) -> tuple[str, ...]:
        return super().canonical_args + ((self.body,) if self.body else ())


@register("tool_interface", "xml_call")
@dataclass(frozen=True)
class XmlCall(ToolInterface):
    """One XML element per call: short verbs, attributes for names, element text for content."""

    TOOLS = (
        XmlSpec("list", "ls"),
        XmlSpec("read", "open", (("path", "file"),), (("offset", "from"),)),
        XmlSpec("write", "save", (("path", "file"),), body="text"),
        XmlSpec("search", "find", (("word", "term"),)),
        XmlSpec("calc", "eval", (), body="expr"),
        XmlSpec("run", "exec", (), body="command"),
    )

    def describe(self) -> str:
        samples = {"path": "a.txt", "text": "text", "word": "word", "expr": "2 + 3",
                   "command": "ls -l"}
        return " ".join(
            self.format_call(ToolCall(s.canonical, {a: samples[a] for a in
                                                    CANONICAL_TOOLS[s.canonical]}))
            for s in self.TOOLS
        ) + self.optional_note()

    def format_call(self, call: ToolCall) -> str:
        spec = self.checked(call)
        assert isinstance(spec, XmlSpec)
        attrs = "".join(f' {own}="{_xml_attr(call.args[c])}"'
                        for c, own in self.own_pairs(spec, call))
        if spec.body is None:
            return f"<{spec.name}{attrs}/>"
        return f"<{spec.name}{attrs}>{_xml_body(call.args[spec.body])}</{spec.name}>"

    def parse(self, text: str) -> Parsed:
        text = bounded(text)[0]
        found = _TAG_START.search(text)
        if found is None:
            return no_call_or_error(text)
        tag = _TAG.match(text, found.start())
        if tag is None:
            return ParseError(MSG_TAGS if "/" in found.group(0) else "bad tag")
        name, raw_attrs, self_closing = tag.group(1), tag.group(2), tag.group(3) == "/"
        spec = self.own(name)
        if spec is None:
            return ParseError(f"unknown tool {name}")
        assert isinstance(spec, XmlSpec)
        pairs = _ATTR.findall(raw_attrs)
        attrs: dict[str, object] = {k: _xml_unescape(v) for k, v in pairs}
        if len(attrs) != len(pairs):
            return ParseError("bad tag")
        end = tag.end()
        close = f"</{name}>"
        if spec.body is not None:
            if self_closing:
                return ParseError(f"{name} needs body")
            stop = text.find(close, end)
            if stop < 0:
                return ParseError(f"missing {close}")
            body = text[end:stop]
            if "<" in body:
                return ParseError(MSG_TAGS)
            end = stop + len(close)
        elif not self_closing:
            stop = text.find(close, end)
            if stop < 0 or text[end:stop].strip():
                return ParseError(f"{name} takes no body")
            end = stop + len(close)
        if _TAG_START.search(text, end):
            return ParseError(MSG_ONE)
        call = self.to_canonical(name, attrs)
        if isinstance(call, ToolCall) and spec.body is not None:
            call = ToolCall(call.name, {**call.args, spec.body: _xml_unescape(body)})
        return call


# --------------------------------------------------------------------------------------------
_PY_CALL = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\(")  # dotted names too: they are errors


def _py_str(value: str) -> str:
    """A Python string literal: double quotes, triple quotes when the text has newlines."""
    out = []
    for ch in value:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append(ch)
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    body = "".join(out)
    return f'"""{body}"""' if "\n" in value else f'"{body}"'


def _scan_call(text: str, open_at: int) -> int | None:
    """Index just past the parenthesis matching ``text[open_at]``, skipping string literals."""
    depth, i, n = 0, open_at, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            quote = ch * 3 if text.startswith(ch * 3, i) else ch
            i += len(quote)
            while i < n and not text.startswith(quote, i):
                if text[i] == "\n" and len(quote) == 1:
                    return None
                i += 2 if text[i] == "\\" else 1
            if i >= n:
                return None
            i += len(quote)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


@register("tool_interface", "python_call")
@dataclass(frozen=True)
class PythonCall(ToolInterface):
    """A Python function call with keyword arguments and string literals."""

    TOOLS = (
        ToolSpec("list", "listdir"),
        ToolSpec("read", "fetch", (("path", "name"),), (("offset", "start"),)),
        ToolSpec("write", "store", (("path", "name"), ("text", "data"))),
        ToolSpec("search", "grep", (("word", "pattern"),)),
        ToolSpec("calc", "compute", (("expr", "formula"),)),
        ToolSpec("run", "shell", (("command", "cmd"),)),
    )

    def describe(self) -> str:
        sigs = ", ".join(f"{s.name}({', '.join(s.own_args)})" for s in self.TOOLS)
        return f"{sigs}\ncall: {self.example()}" + self.optional_note()

    def format_call(self, call: ToolCall) -> str:
        spec = self.checked(call)
        args = ", ".join(f"{own}={_py_str(call.args[c])}" for c, own in self.own_pairs(spec, call))
        return f"{spec.name}({args})"

    def parse(self, text: str) -> Parsed:
        text = bounded(text)[0]
        found = _PY_CALL.search(text)
        if found is None:
            return no_call_or_error(text)
        end = _scan_call(text, found.end() - 1)
        if end is None:
            return ParseError("unbalanced parens")
        if _PY_CALL.search(text, end):
            return ParseError(MSG_ONE)
        try:
            node = ast.parse(text[found.start():end], mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return ParseError("bad python call")
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            return ParseError("bad python call")
        if node.args or any(kw.arg is None for kw in node.keywords):
            return ParseError("use keyword args")
        args: dict[str, object] = {}
        for kw in node.keywords:
            value = kw.value
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                return ParseError("args must be text")
            args[str(kw.arg)] = value.value
        return self.to_canonical(node.func.id, args)
