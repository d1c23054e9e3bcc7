"""Harnesses as editable definitions: a child is its parent plus a recorded edit.

An edit sets components: the system prompt (a registered realization, or written text with
``{tools}`` and the other parts in braces: ``system_prompt/text``), the tool interface, the
observation format and its options, the context and memory settings, the workflow hooks,
and ``notes`` (skills and rules added to the prompt, a note per tool, tools hidden from the
view: :mod:`hscale.harness.components._notes`). A child holds every component resolved, so it
builds without its parent, and is named by the sha256 of what it holds (``evo/<12 hex>``):
two proposals that make the same harness are one child.

:func:`problem` is the check a proposal passes before it joins a pool: it builds, its system
prompt shows every tool it offers, and each tool's call written in its syntax parses back to
the same call (the protocol a policy and the environment rely on).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hscale.errors import HscaleError
from hscale.harness._harness import Harness
from hscale.harness._space import COMPONENTS
from hscale.harness._types import CANONICAL_TOOLS, ToolCall

EDITABLE = (*COMPONENTS, "notes")
PREFIX = "evo/"
SAMPLE = {"path": "a.txt", "text": "one two", "word": "two", "expr": "2 + 3", "command": "ls"}


class EditError(HscaleError):
    """A proposal that cannot be a child; ``reason`` is the short form a pool counts."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Edit:
    """What a proposal changes: component -> realization spec (``{"name", "params"}``), and
    why (the editor's words, kept in the record)."""

    changes: tuple[tuple[str, str], ...]
    why: str = ""

    @classmethod
    def parse(cls, raw: Any) -> Edit:
        """An edit from a proposal's object ``{"set": {component: spec}, "why": ...}``; a
        spec is a realization name (``sectioned``, ``context/window``) or ``{"name": ...,
        "params": {...}}``. EditError("does not parse") names what is wrong."""
        if not isinstance(raw, Mapping) or not isinstance(raw.get("set"), Mapping):
            raise EditError("does not parse", "a proposal is an object with a 'set' mapping "
                            "of components to realizations")
        changes = []
        for component, spec in raw["set"].items():
            if component not in EDITABLE:
                raise EditError("does not parse", f"a proposal sets unknown component "
                                f"{component!r} (editable: {', '.join(EDITABLE)})")
            changes.append((str(component), canonical(_spec(component, spec))))
        if not changes:
            raise EditError("does not parse", "a proposal sets no component")
        why = raw.get("why", "")
        return cls(tuple(sorted(changes)), why if isinstance(why, str) else str(why))

    def sets(self) -> dict[str, dict[str, Any]]:
        return {c: json.loads(s) for c, s in self.changes}

    def record(self) -> dict[str, Any]:
        return {"set": self.sets(), **({"why": self.why} if self.why else {})}


def _spec(component: str, spec: Any) -> dict[str, Any]:
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        raise EditError("does not parse", f"{component}: give a realization name or "
                        "{name: ..., params: {...}}")
    params = spec.get("params") or {}
    if not isinstance(params, Mapping):
        raise EditError("does not parse", f"{component}: params must be a mapping")
    name = spec["name"]
    return {"name": name if name.startswith(component + "/") else f"{component}/{name}",
            "params": dict(params)}


def components_of(harness: Harness) -> dict[str, dict[str, Any]]:
    """Every component of ``harness`` (added kinds too) as realization specs."""
    spec = harness.to_spec()
    return {**spec["components"], **spec.get("extras", {})}


def apply(parent: Mapping[str, Any], edit: Edit) -> dict[str, dict[str, Any]]:
    """The child's components: the parent's, with the edit's set (JSON-normal, so a record
    read back hashes the same)."""
    return json.loads(canonical({**dict(parent), **edit.sets()}))


def child_name(components: Mapping[str, Any]) -> str:
    from hscale.harness._spaces import sha256_of

    return PREFIX + sha256_of(canonical(components))[:12]


def build(components: Mapping[str, Any], name: str) -> Harness:
    """The harness of resolved components; EditError("does not build") says why not."""
    try:
        return Harness.from_names(dict(components), name=name)
    except HscaleError as exc:
        raise EditError("does not build", exc.message) from None
    except Exception as exc:  # an editor's parameters reach any realization's constructor
        raise EditError("does not build", f"{type(exc).__name__}: {exc}") from None


def problem(harness: Harness) -> str | None:
    """Why ``harness`` breaks the protocol (None when it keeps it): every tool it offers is
    shown in its system prompt, and its call syntax reads back each call it writes."""
    episode = harness.fresh()
    messages = episode.start("check the tools")
    system = messages[0].content if messages else ""
    interface = episode.tool_interface
    if not interface.enabled:
        return "it offers no tool"
    for tool in interface.enabled:
        own = interface.spec(tool).name
        if own not in system:
            return f"its system prompt does not show the tool {own}"
        call = ToolCall(tool, {a: SAMPLE[a] for a in CANONICAL_TOOLS[tool]})
        parsed = episode.parse(episode.format_call(call))
        if parsed != call:
            return f"its call syntax does not read back a {tool} call"
    return None
