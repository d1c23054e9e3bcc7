"""A spec's ``space:`` given by components and realizations, resolved to a HarnessSpace.

::

    space:
      name: new-space
      plugins: [new_space_plugin.py]      # files beside the spec, or module names
      factors:
        S: [terse, manual, {name: brief, text: "{tools}\\n{workflow}"}, steps]
        T: [json_call, xml_call, action_lines]
        O: {component: observation, levels: [plain, exit_code]}
        M: {component: reminder, levels: [none, restate]}     # a plugin's component kind
      base: {S: manual}                   # moved first; default: each factor's first level

A factor named by a papers' letter (S, T, O, C, W) sets that letter's component unless it
says another; a level is a realization's name, ``{realization: window, params: {k: 3}, name:
window3}``, or inline text (``{name: ..., text: ...}``, the component's ``text``
realization). Structure is checked by pydantic; :func:`resolve_space` then loads the plugins
and builds every level, so a space that cannot run is refused at ``validate``, in one line
naming the key.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from hscale.errors import HscaleError
from hscale.harness import (
    HarnessSpace,
    Level,
    SpaceFactor,
    canonical,
    from_a_file_plugin,
    is_file_source,
    papers_space,
    plugin_of,
    plugin_path,
    sha256_of,
)

LEVEL_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"


class SpaceError(HscaleError):
    """A space that cannot be resolved; ``loc`` is the spec key it comes from."""

    def __init__(self, message: str, hint: str | None, loc: tuple[Any, ...]) -> None:
        super().__init__(message, hint)
        self.loc = loc


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              use_attribute_docstrings=True)  # the spec reference's text


class LevelSpec(_Strict):
    """A level given as a mapping: a realization with parameters, or inline text."""

    name: str | None = Field(None, pattern=LEVEL_NAME)
    """The level's name in labels and reports (default: the realization's)."""
    realization: str | None = None
    """A registered realization of the factor's component (`hscale harness list`)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """The realization's parameters."""
    text: str | None = Field(None, min_length=1, max_length=100_000)
    """Inline text, for a component with a `text` realization (a system prompt, `{tools}` and the
    other parts in braces)."""


Levels = Annotated[list[str | LevelSpec], Field(min_length=2, max_length=256)]


def _factor_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z][A-Za-z_]*", name):
        raise HscaleError(f"factor name {name!r} must be ASCII letters or underscores",
                          "it starts each part of a label, such as S0-T1: name it S, T, "
                          "Tools or Ctx_window")
    return name


class FactorSpec(_Strict):
    component: str | None = None
    """The component the factor sets (default: the factor's name)."""
    levels: Levels
    """Its levels: realization names, or mappings (LevelSpec)."""


class SpaceSpec(_Strict):
    name: str = Field("space", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    """The space's name."""
    plugins: list[str] = Field(default_factory=list, max_length=64)
    """Python files (beside the spec) or importable modules that register realizations or
    component kinds, loaded at plan time."""
    factors: dict[Annotated[str, AfterValidator(_factor_name)], FactorSpec | Levels] = Field(
        min_length=1, max_length=64)
    """Factor short name (it starts each part of a label) -> its component and levels, or just
    its levels."""
    base: dict[str, str] | None = None
    """Factor -> the level of the base harness (default: each factor's first)."""

    def level_counts(self) -> str:
        """The level counts (``4^1,3^4``), for what needs only the shape (sweeps)."""
        from hscale.design import format_levels

        return format_levels([len(b.levels if isinstance(b, FactorSpec) else b)
                              for b in self.factors.values()])

    def with_base(self, base: Path) -> SpaceSpec:
        """Plugin files made absolute against ``base`` (the spec's folder)."""
        plugins = [str((base / Path(p).expanduser()).resolve()) if is_file_source(p)
                   and not Path(p).expanduser().is_absolute() else p for p in self.plugins]
        return self.model_copy(update={"plugins": plugins})


class ComposedHarness(_Strict):
    """An out-of-space harness composed from the registry (``evaluation.out_of_space``):
    ``{name: oos/mine, components: {system_prompt: qa, context: {realization: window,
    params: {k: 3}}}}``; the papers' components it leaves out take the base's."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*/[A-Za-z0-9_.-]{1,64}$")
    """Its label, `kind/name` (for example `oos/mine`)."""
    components: dict[str, str | LevelSpec] = Field(min_length=1, max_length=64)
    """Component -> a realization name or a level mapping; the papers' components left out take
    the base harness's."""


def papers_only(space: str) -> str:
    """A spec's ``space`` as a string names the papers' space; level counts alone build no
    harness."""
    if space != "harness":
        raise ValueError(f"space {space!r} gives level counts but no realizations, so no "
                         "harness could be built (write harness, or give the space by "
                         "components and levels: see experiments/new-space.yaml)")
    return space


def resolve_space(space: str | SpaceSpec, base: Path | None = None,
                  out_of_space: Sequence[Any] = ()) -> HarnessSpace:
    """The HarnessSpace of a spec's ``space`` (``harness``: the papers'), with the composed
    harnesses of ``out_of_space`` (the spec's ``evaluation.out_of_space``); a SpaceError
    names the key of the first problem."""
    if isinstance(space, str):
        return _with_composed(papers_space(), out_of_space, {})
    from hscale.harness import COMPONENTS, FACTOR_COMPONENTS
    from hscale.harness import components as registry
    from hscale.harness.components import EXTRA_KINDS

    plugins = []
    for i, source in enumerate(space.plugins):
        try:
            plugins.append(plugin_of(source, base))
        except HscaleError as exc:
            raise SpaceError(exc.message, exc.hint, ("space", "plugins", i)) from None
    twice = sorted({p.module for p in plugins if [q.module for q in plugins].count(p.module) > 1})
    if twice:
        raise SpaceError(f"two plugins load as module {twice[0]}", "rename one of the files",
                         ("space", "plugins"))
    from_plugin = {p.module: p.sha256 for p in plugins}
    kinds = (*COMPONENTS, *EXTRA_KINDS.names())
    factors, seen = [], {}
    for letter, body in space.factors.items():
        loc = ("space", "factors", letter)
        body = body if isinstance(body, FactorSpec) else FactorSpec(levels=body)
        component = body.component or FACTOR_COMPONENTS.get(letter)
        if component is None:
            raise SpaceError(f"factor {letter}: give its component", "write {component: "
                             f"..., levels: [...]}} (components: {', '.join(kinds)})", loc)
        if component not in kinds:
            close = difflib.get_close_matches(component, kinds, n=1)
            raise SpaceError(f"factor {letter}: unknown component {component!r}",
                             (f"did you mean {close[0]!r}? " if close else "")
                             + f"components: {', '.join(kinds)} (a plugin adds kinds)",
                             (*loc, "component"))
        if component in seen:
            raise SpaceError(f"factors {seen[component]} and {letter} both set {component}",
                             "a harness holds one realization of each component", loc)
        seen[component] = letter
        levels = [_level(component, raw, from_plugin, (*loc, "levels", i) if isinstance(
            space.factors[letter], FactorSpec) else (*loc, i), registry)
            for i, raw in enumerate(body.levels)]
        names = [lv.name for lv in levels]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup:
            raise SpaceError(f"factor {letter}: two levels are named {dup}",
                             "give each level its own name (name: ...)", loc)
        factors.append(SpaceFactor(letter, component, tuple(levels)))
    factors = _with_base(factors, space.base or {})
    out = HarnessSpace(space.name, tuple(factors), tuple(plugins))
    try:
        out.check()
    except HscaleError as exc:
        raise SpaceError(exc.message, exc.hint, ("space", "factors")) from None
    return _with_composed(out, out_of_space, from_plugin)


def _with_composed(space: HarnessSpace, out_of_space: Sequence[Any],
                   from_plugin: dict[str, str]) -> HarnessSpace:
    """``space`` with the composed out-of-space harnesses, each component resolved as a
    level is (its realization exists and builds)."""
    from hscale.harness import COMPONENTS, PRESETS
    from hscale.harness import components as registry
    from hscale.harness.components import EXTRA_KINDS

    kinds = (*COMPONENTS, *EXTRA_KINDS.names())
    outside = []
    for i, entry in enumerate(out_of_space):
        if not isinstance(entry, ComposedHarness):
            continue
        loc = ("evaluation", "out_of_space", i)
        if entry.name in PRESETS:
            raise SpaceError(f"out-of-space harness {entry.name} is a preset already",
                             "give the composed harness a name of its own", (*loc, "name"))
        specs = {}
        for component, raw in entry.components.items():
            if component not in kinds:
                raise SpaceError(f"out-of-space harness {entry.name}: unknown component "
                                 f"{component!r}", f"components: {', '.join(kinds)}",
                                 (*loc, "components", component))
            level = _level(component, raw, from_plugin, (*loc, "components", component),
                           registry)
            specs[component] = level.spec()
        outside.append((entry.name, canonical(specs)))
    return replace(space, outside=tuple(outside)) if outside else space


def _level(component: str, raw: str | LevelSpec, from_plugin: dict[str, str],
           loc: tuple[Any, ...], registry: Any) -> Level:
    """One level resolved: the realization it names exists (did-you-mean among the
    component's), its parameters build it, and its content hash where it is not hscale's."""
    spec = LevelSpec(realization=raw) if isinstance(raw, str) else raw
    if (spec.text is None) == (spec.realization is None):
        raise SpaceError("a level gives either a realization or inline text",
                         "write a realization's name, or {name: ..., text: ...}", loc)
    if spec.text is not None:
        full = f"{component}/text"
        params = {**spec.params, "text": spec.text}
        if full not in registry.available(component):
            raise SpaceError(f"{component} takes no inline text (no {full} realization)",
                             "name a registered realization instead", loc)
    else:
        name = spec.realization
        full = name if name.startswith(component + "/") else f"{component}/{name}"
        params = dict(spec.params)
    try:
        build = registry.factory(full)
        registry.get(full, **params)
    except HscaleError as exc:
        raise SpaceError(exc.message, exc.hint, loc) from None
    module = getattr(build, "__module__", "")
    if from_a_file_plugin(module) and module not in from_plugin:
        raise SpaceError(f"{full} comes from the plugin {plugin_path(module)}, which this "
                         "spec does not load", "list that file under space.plugins", loc)
    level_name = spec.name or (full.split("/", 1)[1] if spec.text is None else None)
    if level_name is None:
        raise SpaceError("an inline level needs a name", "add name: ... beside text:", loc)
    digest = (sha256_of(canonical(params)) if spec.text is not None
              else from_plugin.get(getattr(build, "__module__", "")))
    return Level(level_name, full, canonical(params), digest)


def _with_base(factors: list[SpaceFactor], base: dict[str, str]) -> list[SpaceFactor]:
    """Each factor with the base harness's level first (its label is then all zeros)."""
    names = {f.name: f for f in factors}
    for letter, level in base.items():
        loc = ("space", "base", letter)
        if letter not in names:
            raise SpaceError(f"base names factor {letter}, not in the space",
                             f"factors: {', '.join(names)}", loc)
        levels = [lv.name for lv in names[letter].levels]
        if level not in levels:
            raise SpaceError(f"base: factor {letter} has no level {level!r}",
                             f"levels: {', '.join(levels)}", loc)
    out = []
    for f in factors:
        first = base.get(f.name)
        levels = sorted(f.levels, key=lambda lv: lv.name != first) if first else f.levels
        out.append(SpaceFactor(f.name, f.component, tuple(levels)))
    return out
