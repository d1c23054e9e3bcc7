"""The small data types every harness component, the environment and the agent loop share.

Tool calls are *canonical*: whatever syntax and names a tool interface shows the model, its
parser returns a ToolCall over the canonical tools below, and the environment executes that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant", "tool"]

# Canonical tools of the built-in world: name -> ordered argument names.
CANONICAL_TOOLS: dict[str, tuple[str, ...]] = {
    "list": (),                   # list the workspace's files
    "read": ("path",),            # a file's text
    "write": ("path", "text"),    # create or replace a file
    "search": ("word",),          # lines containing a word, as "path: line"
    "calc": ("expr",),            # integer arithmetic: a op b [op c ...], op in + - * /
    "run": ("command",),          # a shell command in the workspace: exit code and output
}
# Arguments a tool may also take, for tasks of the real formats (``ToolInterface.only``): a
# read window's start, in characters.
OPTIONAL_ARGS: dict[str, tuple[str, ...]] = {"read": ("offset",)}
# The built-in world's tools: every task's unless its benchmark declares others (``run``
# comes with the real task sets whose prompts ask the agent to run code).
BUILTIN_TOOLS: tuple[str, ...] = ("list", "read", "write", "search", "calc")


@dataclass(frozen=True)
class ToolCall:
    """A parsed, canonical tool call."""

    name: str
    args: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned: ``ok`` and ``output``, or an error message; cut outputs say so."""

    ok: bool
    output: str = ""
    error: str = ""
    truncated: bool = False


@dataclass(frozen=True)
class ParseError:
    """A model turn that tried to call a tool but did not follow the interface's syntax."""

    message: str


@dataclass
class Message:
    """One chat message. ``loss`` is True for model-written text (assistant turns) only."""

    role: Role
    content: str

    @property
    def loss(self) -> bool:
        return self.role == "assistant"
