"""Realizations registered by stable name ``<component>/<realization>``.

A manifest names a harness by these strings, so a name must always rebuild the same object:
``get("context/window", k=3)``. Users add realizations with ``@register(component, name)``;
the built-in ones are imported on first lookup, so importing this module stays cheap. The
names live in one :class:`hscale.registry.Registry` (its did-you-mean answers a typo); what
is particular to realizations is here: the name grammar, building with parameters, and the
spec that rebuilds an instance.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from hscale.errors import HscaleError
from hscale.registry import Registry

# Modules whose import registers the built-in realizations (and the out-of-space ones).
BUILTIN_MODULES = (
    "hscale.harness.components._system_prompt",
    "hscale.harness.components._tool_interface",
    "hscale.harness.components._observation",
    "hscale.harness.components._context",
    "hscale.harness.components._workflow",
    "hscale.harness.components._notes",
    "hscale.harness._out_of_space",
)

REALIZATIONS: Registry[Callable[..., Any]] = Registry("realization", load=BUILTIN_MODULES)
_NAME = re.compile(r"[a-z][a-z0-9_]*(/[a-z0-9_]+)*")

F = TypeVar("F", bound=Callable[..., Any])


def register(component: str, name: str, *, replace: bool = False) -> Callable[[F], F]:
    """Class (or factory) decorator: make it buildable as ``get("<component>/<name>")``.

    The decorated class gets ``registry_name``; registering another object under a taken
    name is an error unless ``replace=True`` (the same class again, as a re-imported module
    makes it, is allowed).
    """
    full = f"{component}/{name}"
    if not _NAME.fullmatch(full):
        raise HscaleError(
            f"bad realization name {full!r}",
            "use lowercase letters, digits and underscores, e.g. context/window",
        )

    def deco(factory: F) -> F:
        old = REALIZATIONS.registered(full)
        same = old is not None and _qualname(old) == _qualname(factory)
        REALIZATIONS.register(full, factory, replace=replace or same)
        if isinstance(factory, type):
            factory.registry_name = full  # type: ignore[attr-defined]
        return factory

    return deco


def unregister(name: str) -> None:
    """Remove a full name (for tests and for users replacing a realization)."""
    REALIZATIONS.unregister(name)


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def load_builtins() -> None:
    """Import the modules that register the built-in realizations (once)."""
    REALIZATIONS.names()


def available(component: str | None = None) -> list[str]:
    """Registered full names, sorted; only those of ``component`` when given."""
    names = sorted(REALIZATIONS.names())
    if component is None:
        return names
    return [n for n in names if n.split("/", 1)[0] == component]


def factory(name: str) -> Callable[..., Any]:
    """The registered class or factory for a full name; a did-you-mean among the names of
    its component (all names when it names no known component)."""
    if name not in REALIZATIONS:  # the did-you-mean (every episode builds its harness's)
        component = name.split("/", 1)[0] if "/" in name else None
        among = available(component) if component and available(component) else None
        REALIZATIONS.check(name, among)
    return REALIZATIONS.get(name)


def get(name: str, **params: Any) -> Any:
    """Build the realization ``<component>/<realization>`` with optional parameters."""
    build = factory(name)
    _check_types(name, build, params)
    try:
        return build(**params)
    except TypeError as exc:
        allowed = _param_names(build)
        raise HscaleError(
            f"cannot build {name} with params {params}: {exc}",
            f"its params are: {', '.join(allowed) or 'none'}",
        ) from None


_KINDS = {int: "a whole number", float: "a number", str: "text", bool: "true or false"}


def _check_types(name: str, build: Callable[..., Any], params: dict[str, Any]) -> None:
    """Each given parameter of the type its field declares (an int, float, str or bool),
    so a wrong one is named as such, never as the realization's own TypeError."""
    hints = _hints(build) if dataclasses.is_dataclass(build) else None
    if hints is None:
        return
    for key, value in params.items():
        kind = hints.get(key)
        if kind not in _KINDS:
            continue
        fits = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool)) \
            or kind is float and isinstance(value, int) and not isinstance(value, bool)
        if not fits:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise HscaleError(f"{name}: param {key} is {shown}, not {_KINDS[kind]}",
                              f"its params are: {', '.join(_param_names(build)) or 'none'}")


@functools.cache
def _hints(build: Callable[..., Any]) -> dict[str, Any] | None:
    """A realization's field types, resolved once (every episode builds its harness's)."""
    try:
        return typing.get_type_hints(build)
    except Exception:  # noqa: BLE001 -- a plugin's annotations that do not resolve
        return None


def _param_names(build: Callable[..., Any]) -> list[str]:
    if dataclasses.is_dataclass(build):
        return [f.name for f in dataclasses.fields(build) if f.init]
    return []


def params_of(obj: Any) -> dict[str, Any]:
    """A realization's constructor parameters (dataclass init fields), for specs."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
    return {}


def name_of(obj: Any) -> str:
    """The full registered name of a realization instance."""
    name = getattr(type(obj), "registry_name", None)
    if name is None:
        raise HscaleError(
            f"{type(obj).__name__} is not a registered realization",
            "decorate its class with @register(component, name)",
        )
    return name


def spec_of(obj: Any) -> dict[str, Any]:
    """``{"name": "<component>/<realization>", "params": {...}}``: enough to rebuild ``obj``."""
    return {"name": name_of(obj), "params": params_of(obj)}


def from_spec(spec: str | dict[str, Any]) -> Any:
    """Inverse of :func:`spec_of`; a bare full name means default parameters."""
    if isinstance(spec, str):
        return get(spec)
    return get(spec["name"], **dict(spec.get("params") or {}))
