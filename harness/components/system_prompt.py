"""S: the system prompt. Realizations change wording, structure and emphasis, never meaning.

Every realization says the same things (file tasks, one tool call per turn, the tools, how
results look, what context is kept, the workflow); the other components supply those parts
as text, so a prompt never hard-codes another component's syntax.
"""

from __future__ import annotations

from dataclasses import dataclass

from hscale.harness.components.registry import register

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
        notes = " ".join(x for x in (parts.observation, parts.context, parts.workflow) if x)
        return _join("you do file tasks with tools, one tool call per turn.", parts.tools, notes)


@register("system_prompt", "sectioned")
@dataclass(frozen=True)
class Sectioned(SystemPrompt):
    """Headed sections (role / rules / format), rules as a bullet list."""

    def render(self, parts: PromptParts) -> str:
        rules = ["- one tool call per turn."]
        rules += [f"- {x}" for x in (parts.context, parts.workflow) if x]
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
        checks += [f"[ ] {x}" for x in (parts.observation, parts.context, parts.workflow) if x]
        return _join(
            "you are ada, a careful file clerk.",
            "tools:",
            parts.tools,
            "checklist:",
            *checks,
        )

    def render_task(self, query: str) -> str:
        return f"job: {query}"
