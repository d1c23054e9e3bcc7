"""S: the system prompt. Realizations change wording, structure and emphasis, never meaning.

Every realization says the same things (file tasks, one tool call per turn, the tools, how
results look, what context is kept, the workflow); the other components supply those parts
as text, so a prompt never hard-codes another component's syntax.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hscale.errors import HscaleError
from hscale.harness.components._registry import register

WORDS = (
    "you do file tasks with tools, one tool call per turn.",
    "## role rules tools format task",
    "you do file tasks.",
    "- one tool call per turn.",
    "you are ada, a careful file clerk.",
    "checklist:",
    "[ ] one tool call at most",
    "job:",
)


@dataclass(frozen=True)
class PromptParts:
    """What the other components contribute to the system prompt, as ready text."""

    tools: str
    workflow: str
    observation: str = ""
    context: str = ""
    extra: str = ""  # the added component kinds' sentences (hscale.harness.components._extra)


class SystemPrompt:
    """Base class: ``render`` builds the system message, ``render_task`` the first user one."""

    def render(self, parts: PromptParts) -> str:
        raise NotImplementedError

    def render_task(self, query: str) -> str:
        return query


def _join(*lines: str) -> str:
    return "\n".join(line for line in lines if line)


@register("system_prompt", "terse")
@dataclass(frozen=True)
class Terse(SystemPrompt):
    """Two short lines around the tool list: everything, nothing stressed."""

    def render(self, parts: PromptParts) -> str:
        notes = " ".join(x for x in (parts.observation, parts.context, parts.workflow,
                                     parts.extra) if x)
        return _join("you do file tasks with tools, one tool call per turn.", parts.tools, notes)


@register("system_prompt", "sectioned")
@dataclass(frozen=True)
class Sectioned(SystemPrompt):
    """Headed sections (role / rules / format), rules as a bullet list."""

    def render(self, parts: PromptParts) -> str:
        rules = ["- one tool call per turn."]
        rules += [f"- {x}" for x in (parts.context, parts.workflow, parts.extra) if x]
        return _join(
            "## role", "you do file tasks.",
            "## rules", *rules,
            "## format", parts.tools, parts.observation,
        )

    def render_task(self, query: str) -> str:
        return f"## task\n{query}"


@register("system_prompt", "persona")
@dataclass(frozen=True)
class Persona(SystemPrompt):
    """A named character and a checklist to tick before each reply."""

    def render(self, parts: PromptParts) -> str:
        checks = ["[ ] one tool call at most"]
        checks += [f"[ ] {x}" for x in (parts.observation, parts.context, parts.workflow,
                                         parts.extra) if x]
        return _join(
            "you are ada, a careful file clerk.",
            "tools:",
            parts.tools,
            "checklist:",
            *checks,
        )

    def render_task(self, query: str) -> str:
        return f"job: {query}"


# The parts a written prompt may place: {tools}, {workflow}, {observation}, {context}, {extra}.
_PART = re.compile(r"\{(tools|workflow|observation|context|extra)\}( ?)")


@register("system_prompt", "text")
@dataclass(frozen=True)
class Text(SystemPrompt):
    """A prompt written in a spec (an inline level): ``text`` with the other components'
    parts in braces, ``{tools}`` at least; ``task`` wraps the task's query (``{query}``).
    Other braces are kept as written; a line that held only empty parts is dropped."""

    text: str = "{tools}\n{observation} {context} {workflow} {extra}"
    task: str = "{query}"

    def __post_init__(self) -> None:
        if not isinstance(self.text, str) or "{tools}" not in self.text:
            raise HscaleError("a written system prompt must place the tools' description",
                              "put {tools} in its text (and {workflow}, {observation}, "
                              "{context}, {extra} where they belong)")
        if not isinstance(self.task, str) or "{query}" not in self.task:
            raise HscaleError("a written system prompt's task text must place the query",
                              "put {query} in task (or leave task out)")

    def render(self, parts: PromptParts) -> str:
        def part(m: re.Match[str]) -> str:  # an empty part takes its following space along
            text = getattr(parts, m.group(1))
            return text + m.group(2) if text else ""

        lines = []
        for line in self.text.split("\n"):
            done = _PART.sub(part, line).rstrip()
            if done or not _PART.search(line):
                lines.append(done)
        return "\n".join(lines)

    def render_task(self, query: str) -> str:
        return self.task.replace("{query}", query)
