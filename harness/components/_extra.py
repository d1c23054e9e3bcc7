"""Component kinds beyond the papers' five: a sixth factor such as a memory policy, a tool
subset or a task reminder, declared by a plugin.

A new kind is a name (``component_kind("reminder", "task reminder")``) and realizations of
it registered like any other (``@register("reminder", "restate")``) that subclass
:class:`Extra`. A harness holds one realization per kind of its space and calls its hooks
where the turn engine passes the matching point of an episode; each hook leaves the episode
unchanged by default, so a realization overrides only what it changes.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hscale.errors import HscaleError
from hscale.harness._types import Message
from hscale.registry import Registry


@dataclass(frozen=True)
class Kind:
    """A component kind a plugin adds: its name (the registry prefix of its realizations)
    and a few words for messages and the report."""

    name: str
    description: str = ""
    module: str = ""  # the module that declared it: another declaring it too is a clash


EXTRA_KINDS: Registry[Kind] = Registry("component kind")


def component_kind(name: str, description: str = "") -> Kind:
    """Declare a component kind (idempotent: a re-imported plugin declares it again; another
    module declaring the same name is refused, as a realization's name is)."""
    from hscale.harness._space import COMPONENTS

    if not re.fullmatch(r"[a-z][a-z0-9_]*", name or ""):
        raise HscaleError(f"bad component kind name {name!r}",
                          "use lowercase letters, digits and underscores, e.g. memory")
    if name in COMPONENTS:
        raise HscaleError(f"{name} is one of the papers' components already",
                          "register realizations of it with @register instead")
    module = sys._getframe(1).f_globals.get("__name__", "")
    old = EXTRA_KINDS.registered(name)
    if isinstance(old, Kind) and old.module != module:
        raise HscaleError(f"component kind {name!r} is declared by {old.module} already",
                          "give this plugin's kind another name, or load one of the two")
    kind = Kind(name, description or name.replace("_", " "), module)
    EXTRA_KINDS.register(name, kind, replace=True)
    return kind


class Extra:
    """Base class of a realization of an added component kind."""

    def start(self, query: str) -> None:
        """A new episode of ``query`` begins (reset per-episode state here)."""

    def describe(self) -> str:
        """A sentence for the system prompt ("" adds nothing)."""
        return ""

    def describe_for(self, interface: Any) -> str:
        """:meth:`describe`, for a realization that names tools as ``interface`` (the
        harness's tool interface) shows them."""
        return self.describe()

    def tools(self, tools: tuple[str, ...]) -> tuple[str, ...]:
        """The tools the episode offers, from the task's (a tool subset drops some)."""
        return tools

    def view(self, messages: Sequence[Message]) -> list[Message]:
        """What the model sees, after the context policy made its view."""
        return list(messages)

    def observe(self, text: str) -> str:
        """A tool message's text as the observation format rendered it."""
        return text
