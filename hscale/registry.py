"""Variants registered by name: one small registry type for every kind hscale lets a user
extend (harness-set recipes, assignment modes, routers, backends, benchmarks, figures).

A registry answers an unknown name with "did you mean ...? available: ...", and spec
validation reads its names from the registry, so a user's new entry is accepted everywhere
at once. An entry is the object itself, or ``"module:attribute"``, imported on first lookup so
that listing names never imports a heavy module; a registry whose entries register themselves
on import (decorated classes) names those modules in ``load``, imported before its first
lookup.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from hscale.errors import HscaleError

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries of one ``kind`` (a word for messages: "router", "backend", ...)."""

    def __init__(self, kind: str, load: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._load, self._loaded = load, not load

    def _ensure_loaded(self) -> None:
        """Import the ``load`` modules once (their imports register entries)."""
        if self._loaded:
            return
        self._loaded = True
        try:
            for module in self._load:
                importlib.import_module(module)
        except BaseException:
            self._loaded = False
            raise

    def register(self, name: str, entry: T | str | None = None, *, replace: bool = False
                 ) -> Any:
        """Add ``entry`` under ``name``; without ``entry``, a decorator that adds what it
        decorates. A taken name is an error unless ``replace``."""
        if not isinstance(name, str) or not name:
            raise HscaleError(f"a {self.kind} name must be a non-empty string, got {name!r}")

        def add(value: T | str) -> T | str:
            if name in self._entries and not replace and self._entries[name] is not value:
                raise HscaleError(f"{self.kind} {name!r} is already registered",
                                  "pick another name or pass replace=True")
            self._entries[name] = value
            return value

        if entry is None:
            return add
        add(entry)
        return entry

    def unregister(self, name: str) -> None:
        self._entries.pop(name, None)

    def names(self) -> list[str]:
        """Registered names, in registration order (no entry is imported)."""
        self._ensure_loaded()
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        self._ensure_loaded()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def check(self, name: str, among: Iterable[str] | None = None) -> str:
        """``name`` if registered, else an HscaleError with a did-you-mean (for validators)
        among ``among`` (default: every name); a name without ``/`` is also matched against
        the last part of names that have one (``window`` -> ``context/window``)."""
        if name in self:
            return name
        known = self.names() if among is None else list(among)
        close = difflib.get_close_matches(str(name), known, n=1)
        if not close and "/" not in str(name):
            close = [n for n in known if n.rsplit("/", 1)[-1] == name][:1]
        hint = (f"did you mean {close[0]!r}? " if close else "") + \
            f"available: {', '.join(known) or '(none)'}"
        raise HscaleError(f"unknown {self.kind} {name!r}", hint)

    def registered(self, name: str) -> T | str | None:
        """The entry under ``name`` as registered, or None; nothing is loaded or imported
        (for a register step that must see what is there already)."""
        return self._entries.get(name)

    def get(self, name: str) -> T:
        """The entry, importing it first if it was registered as ``"module:attribute"``."""
        entry = self._entries[self.check(name)]
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            entry = getattr(importlib.import_module(module), attribute)
            self._entries[name] = entry
        return entry  # type: ignore[return-value]

    def items(self) -> list[tuple[str, T]]:
        return [(name, self.get(name)) for name in self.names()]

    def validator(self) -> Callable[[str], str]:
        """A pydantic ``AfterValidator``: the name, or a :class:`UnknownName` carrying the
        did-you-mean as its ``hint`` (so a spec error can show it as the hint)."""

        def validate(name: str) -> str:
            try:
                return self.check(name)
            except HscaleError as exc:
                raise UnknownName(exc.message, exc.hint) from None

        validate.registry = self  # the spec reference lists the names it accepts
        return validate


class UnknownName(ValueError):
    """A name no registry entry has, raised inside validation; ``hint`` lists the names."""

    def __init__(self, message: str, hint: str | None) -> None:
        super().__init__(message)
        self.hint = hint
