"""A harness: one realization per component, buildable from a label, names or a spec.

``Harness.from_label("S0-T1-O2-C0-W1")`` reads level names from the factor space (a level
name is the realization name), so a space with other levels works as long as realizations
of those names are registered. ``to_spec()`` is what a manifest stores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from hscale.design import FactorSpace
from hscale.errors import HscaleError
from hscale.harness import components as registry
from hscale.harness._space import BASE, COMPONENTS, FACTOR_COMPONENTS, PRESETS, factor_space
from hscale.harness._types import BUILTIN_TOOLS, Message, ParseError, ToolCall, ToolResult
from hscale.harness.components import (
    EXTRA_KINDS,
    Action,
    Context,
    Extra,
    Observation,
    Parsed,
    PromptParts,
    SystemPrompt,
    ToolInterface,
    Workflow,
)

ComponentSpec = str | Mapping[str, Any]


def _full_name(component: str, name: str) -> str:
    return name if name.startswith(component + "/") else f"{component}/{name}"


def _build(component: str, spec: ComponentSpec) -> Any:
    if isinstance(spec, str):
        return registry.get(_full_name(component, spec))
    name = _full_name(component, str(spec["name"]))
    return registry.get(name, **dict(spec.get("params") or {}))


def _kind_of(extra: Any) -> str:
    return registry.name_of(extra).split("/", 1)[0]


@dataclass
class Harness:
    """One realization per component; ``name`` is its label or preset name; ``extras`` the
    realizations of component kinds beyond the five (hscale.harness.components._extra), in
    the order of their factors."""

    system_prompt: SystemPrompt
    tool_interface: ToolInterface
    observation: Observation
    context: Context
    workflow: Workflow
    name: str = ""
    extras: tuple[Extra, ...] = ()
    # system prompts rendered, by the tools shown: a component's description is a function
    # of its configuration, so a harness renders each once (veRL's inputs render 100,000s)
    _systems: dict[tuple[tuple[str, ...], bool], str] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    # --- construction ---------------------------------------------------------------
    @classmethod
    def from_names(cls, names: Mapping[str, ComponentSpec] | None = None,
                   name: str = "") -> Harness:
        """Components by realization name (``"window"`` or ``"context/window"``) or spec dict;
        missing components take the base realization; added kinds (a plugin's) only when
        named."""
        names = dict(names or {})
        registry.load_builtins()  # hscale's own added kinds (notes) are declared on import
        unknown = sorted(set(names) - set(COMPONENTS) - set(EXTRA_KINDS.names()))
        if unknown:
            raise HscaleError(f"unknown components {unknown}",
                              f"components are: {', '.join(COMPONENTS + tuple(EXTRA_KINDS))}")
        parts = {c: _build(c, names.get(c, BASE[c])) for c in COMPONENTS}
        extras = tuple(_build(c, spec) for c, spec in names.items() if c not in COMPONENTS)
        wrong = [c for c, e in zip((c for c in names if c not in COMPONENTS), extras,
                                   strict=True) if not isinstance(e, Extra)]
        if wrong:
            raise HscaleError(f"a realization of {wrong[0]} is not an Extra",
                              "subclass hscale.harness.components._extra.Extra")
        return cls(**parts, name=name, extras=extras)

    @classmethod
    def from_label(cls, label: str, space: FactorSpace | None = None) -> Harness:
        """``S0-T1-O2-C0-W1`` -> the realizations named by the space's level names."""
        space = space or factor_space()
        config = space.parse_label(label)
        names: dict[str, str] = {}
        for i, factor in enumerate(space.factors):
            component = FACTOR_COMPONENTS.get(factor.name)
            if component is None:
                raise HscaleError(
                    f"factor {factor.name} of space {space.name} sets no harness component",
                    f"name factors {', '.join(FACTOR_COMPONENTS)} (one per component)",
                )
            names[component] = factor.levels[int(config[i])]
        return cls.from_names(names, name=space.label(config))

    @classmethod
    def from_name(cls, name: str, space: FactorSpace | None = None) -> Harness:
        """A label of the space, or a registered harness preset such as ``oos/shell``."""
        space = space or factor_space()
        if space.contains(name):
            return cls.from_label(name, space)
        return PRESETS.get(name)()

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Harness:
        """Inverse of :meth:`to_spec`."""
        return cls.from_names({**spec.get("components", {}), **spec.get("extras", {})},
                              name=str(spec.get("name", "")))

    def to_spec(self) -> dict[str, Any]:
        """``{"name": ..., "components": {component: {"name": ..., "params": ...}}}``, and
        ``extras`` the same way when the harness has added kinds."""
        out = {"name": self.name,
               "components": {c: registry.spec_of(getattr(self, c)) for c in COMPONENTS}}
        if self.extras:
            out["extras"] = {_kind_of(e): registry.spec_of(e) for e in self.extras}
        return out

    def fresh(self) -> Harness:
        """A copy with fresh per-episode state (for concurrent episodes)."""
        return Harness.from_spec(self.to_spec())

    def realization_names(self) -> dict[str, str]:
        return {**{c: registry.name_of(getattr(self, c)) for c in COMPONENTS},
                **{_kind_of(e): registry.name_of(e) for e in self.extras}}

    # --- rendering ------------------------------------------------------------------
    def render_system(self) -> str:
        if self.extras:  # an added kind may describe itself by its per-episode state
            return self._render_system()
        key = (self.tool_interface.enabled, self.tool_interface.optional_on)
        text = self._systems.get(key)
        if text is None:
            text = self._systems[key] = self._render_system()
        return text

    def _render_system(self) -> str:
        return self.system_prompt.render(PromptParts(
            tools=self.tool_interface.describe(),
            workflow=self.workflow.instructions(),
            observation=self.observation.describe(),
            context=self.context.describe(),
            extra=" ".join(x for x in (e.describe_for(self.tool_interface)
                                       for e in self.extras) if x),
        ))

    def initial_messages(self, task_query: str) -> list[Message]:
        """System prompt and task message (no state is touched)."""
        return [Message("system", self.render_system()),
                Message("user", self.system_prompt.render_task(task_query))]

    # --- what the agent loop calls --------------------------------------------------
    def start(self, task_query: str,
              tools: tuple[str, ...] = BUILTIN_TOOLS) -> list[Message]:
        """Reset context and workflow state and take the task's ``tools`` (``Task.tools``);
        the episode's first messages."""
        self.context.start()
        optional = tools != BUILTIN_TOOLS  # a real format's task: read windows with offsets
        for extra in self.extras:
            extra.start(task_query)
            tools = extra.tools(tools)
        if tools != self.tool_interface.enabled or optional != self.tool_interface.optional_on:
            self.tool_interface = self.tool_interface.only(tools, optional)
        return self.workflow.start(self.initial_messages(task_query))

    def view(self, history: Sequence[Message]) -> list[Message]:
        view = self.context.view(history, self.tool_interface.parse)
        for extra in self.extras:
            view = extra.view(view)
        return view

    def parse(self, text: str) -> Parsed:
        return self.tool_interface.parse(text)

    def format_call(self, call: ToolCall) -> str:
        return self.tool_interface.format_call(call)

    def observe(self, result: ToolResult | ParseError) -> Message:
        """The tool message for a result (a ParseError shows as an error result)."""
        if isinstance(result, ParseError):
            result = ToolResult(ok=False, error=result.message)
        text = self.observation.render(result)
        for extra in self.extras:
            text = extra.observe(text)
        return Message("tool", text)

    def after_assistant(self, turn: int, parsed: Parsed, text: str) -> Action:
        return self.workflow.after_assistant(turn, parsed, text)


@cache
def harness_named(label: str, space: Any = None) -> Harness:
    """One harness per label (of ``space``, a hscale.harness._spaces.HarnessSpace, the papers'
    when None; else a preset's name) and
    process, built once: a template that episodes copy (``fresh()``), so trainers,
    evaluators, routers and agent loops share it."""
    if space is None:
        return Harness.from_name(label)
    if space.factor_space.contains(label) or label in space.composed():
        return space.harness(label)
    return PRESETS.get(label)()
