"""A plugin for experiments/new-space.yaml and experiments/sixth-factor.yaml: a system prompt
of numbered steps, and a sixth component kind, a task reminder.

A spec loads it by path (``space: {plugins: [new_space_plugin.py]}``) when it is planned;
the manifest records its sha256, so editing this file makes a new plan, and a run planned
before the edit refuses to start.
"""

from dataclasses import dataclass, field

from hscale.harness.components import (
    Extra,
    PromptParts,
    SystemPrompt,
    component_kind,
    register,
)

component_kind("reminder", "task reminder")


@register("system_prompt", "steps")
@dataclass(frozen=True)
class Steps(SystemPrompt):
    """The rules as numbered steps, the tools among them."""

    def render(self, parts: PromptParts) -> str:
        notes = [x for x in (parts.observation, parts.context, parts.workflow, parts.extra) if x]
        steps = ["you do file tasks with tools.", "one tool call per turn.",
                 f"tools:\n{parts.tools}", *notes]
        return "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))

    def render_task(self, query: str) -> str:
        return f"task: {query}"


@register("reminder", "none")
@dataclass
class NoReminder(Extra):
    """Nothing added: the episode as the other components make it."""


@register("reminder", "restate")
@dataclass
class Restate(Extra):
    """Every observation ends with the task again, so a long episode keeps it in view."""

    _query: str = field(default="", init=False, repr=False)  # per-episode state

    def start(self, query: str) -> None:
        self._query = query

    def describe(self) -> str:
        return "each result ends with the task."

    def observe(self, text: str) -> str:
        return f"{text}\ntask: {self._query}"
