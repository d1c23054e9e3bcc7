"""``notes``: a component kind of hscale's own that an evolved harness edits (Harness-S's
skills, memory and tool views): sentences added to the system prompt, a note on a tool
shown beside its description, and tools left out of the view.

A harness without it is unchanged (every hook passes the episode through), so the papers'
space never holds it; ``hscale harness evolve`` writes children that set it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hscale.errors import HscaleError
from hscale.harness._types import CANONICAL_TOOLS
from hscale.harness.components._extra import Extra, component_kind
from hscale.harness.components._registry import register

component_kind("notes", "prompt notes and tool views")

MAX_NOTE_CHARS = 4000


@register("notes", "text")
@dataclass(frozen=True)
class Notes(Extra):
    """``text``: sentences for the system prompt (a skill, a memory, a rule); ``tool_notes``:
    canonical tool -> a note shown with it; ``hide``: canonical tools left out of the view."""

    text: str = ""
    tool_notes: dict[str, str] = field(default_factory=dict)
    hide: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or len(self.text) > MAX_NOTE_CHARS:
            raise HscaleError(f"notes text must be text of at most {MAX_NOTE_CHARS} characters",
                              "shorten the note")
        if not isinstance(self.tool_notes, dict) or not all(
                isinstance(v, str) for v in self.tool_notes.values()):
            raise HscaleError("notes tool_notes must map a tool to its note's text",
                              f"tools are: {', '.join(CANONICAL_TOOLS)}")
        unknown = sorted((set(self.tool_notes) | set(self.hide)) - set(CANONICAL_TOOLS))
        if unknown:
            raise HscaleError(f"notes name an unknown tool {unknown[0]!r}",
                              f"tools are: {', '.join(CANONICAL_TOOLS)}")
        object.__setattr__(self, "hide", tuple(self.hide))

    def describe(self) -> str:
        return self.describe_for(None)

    def describe_for(self, interface: Any) -> str:
        """The text, then each tool's note under the name the interface shows it by."""
        def shown(tool: str) -> str:
            try:
                return interface.spec(tool).name if interface is not None else tool
            except HscaleError:
                return tool

        notes = [f"{shown(tool)}: {note}" for tool, note in sorted(self.tool_notes.items())
                 if tool not in self.hide]
        return " ".join(x for x in (self.text.strip(), *notes) if x)

    def tools(self, tools: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(t for t in tools if t not in self.hide)

    def __hash__(self) -> int:
        return hash((self.text, tuple(sorted(self.tool_notes.items())), self.hide))
