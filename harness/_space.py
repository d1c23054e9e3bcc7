"""The harness space in one place: the five components, the factor letter each sets in a
label, the papers' three realizations of each, the base harness h0, and the registry of whole
harness presets (the out-of-space harnesses).

``hscale.design`` knows factor spaces in general (any names, any levels); this module says
which factor space is the papers' harness space H = S x T x O x C x W, and what its levels
mean: a level name is the name of a registered realization of that factor's component.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hscale.design import Factor, FactorSpace
from hscale.registry import Registry


@dataclass(frozen=True)
class Component:
    """One harness component: its registry prefix (``context``), the factor letter labels use
    (``C``), what it is, and the papers' realizations of it (the first is the base)."""

    name: str
    factor: str
    description: str
    realizations: tuple[str, ...]


COMPONENTS_OF_THE_PAPERS = (
    Component("system_prompt", "S", "system prompt", ("terse", "sectioned", "persona")),
    Component("tool_interface", "T", "tool interface", ("json_call", "xml_call", "python_call")),
    Component("observation", "O", "observation format", ("plain", "json", "markdown")),
    Component("context", "C", "context management", ("full", "window", "compact")),
    Component("workflow", "W", "workflow", ("react", "plan_act", "act_verify")),
)
# Component names, in the order a harness holds them.
COMPONENTS = tuple(c.name for c in COMPONENTS_OF_THE_PAPERS)
# Factor letter in a space -> the component it sets.
FACTOR_COMPONENTS = {c.factor: c.name for c in COMPONENTS_OF_THE_PAPERS}
# The realization each component takes where a space or a spec leaves it out: h0's.
BASE = {c.name: c.realizations[0] for c in COMPONENTS_OF_THE_PAPERS}


def factor_space() -> FactorSpace:
    """The papers' space H = S x T x O x C x W as the design module sees it (a
    :class:`~hscale.design.FactorSpace`: 5 factors, 3 levels each, 243 configurations, labels
    such as ``S0-T1-O2-C0-W1``). A run's space with its realizations is a ``HarnessSpace``
    (``hscale.train.planning.harness_space(manifest)``)."""
    return FactorSpace(tuple(Factor(c.factor, c.realizations, c.description)
                             for c in COMPONENTS_OF_THE_PAPERS), name="harness")


def component_aliases(space: FactorSpace) -> dict[str, str]:
    """Component name -> the factor of ``space`` that sets it (``context`` -> ``C``), so a
    spec may name weights by component as well as by factor."""
    return {c.name: c.factor for c in COMPONENTS_OF_THE_PAPERS if c.factor in space.names}


# Whole harnesses by name (``oos/shell``): factories of a ``Harness``, outside any factor
# space. Users add their own with ``PRESETS.register("mine/name", factory)``.
PRESETS: Registry[Callable[[], Any]] = Registry("harness preset")
PRESETS.register("oos/shell", "hscale.harness._out_of_space:shell_harness")
PRESETS.register("oos/actions", "hscale.harness._out_of_space:actions_harness")
# The out-of-space harnesses hscale ships (a spec's default out-of-space setting).
OUT_OF_SPACE = ("oos/shell", "oos/actions")
