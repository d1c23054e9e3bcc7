"""A frozen Harness-S sibling pool: the file ``hscale harness evolve`` writes and a rescue
arm names (``assignment.pool: pool.json``).

It holds the base harness's label and space, every child (its name, parent, round, the root
causes it was asked to fix, the edit, and all its components resolved), each round's
proposals with the dropped ones and why, and a sha256 over the base and the children. A
pool is frozen: read back, the hash is checked, so a child edited by hand after evolution
is refused rather than trained under a name that no longer says what it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.files import atomic_write_text
from hscale.harness import canonical, child_name

POOL_FORMAT = "hscale-pool/2"  # 2: the hash covers the tallies and notes too
_CHILDREN_ONLY = "hscale-pool/1"  # its hash covers the children: files of it still read


@dataclass(frozen=True)
class Child:
    """One sibling: ``components`` build it alone; ``parent`` is a label or another child."""

    name: str
    parent: str
    round: int
    causes: tuple[str, ...]
    edit: dict[str, Any]
    components: dict[str, Any]

    def record(self) -> dict[str, Any]:
        return {"name": self.name, "parent": self.parent, "round": self.round,
                "causes": list(self.causes), "edit": self.edit, "components": self.components}


@dataclass(frozen=True)
class Pool:
    """The frozen pool: ``base`` (a label of ``space``), its children, and each round's
    tally (proposals, accepted, dropped with reasons)."""

    space: str
    base: str
    children: tuple[Child, ...]
    rounds: tuple[dict[str, Any], ...] = ()
    notes: dict[str, Any] = field(default_factory=dict)
    format: str = POOL_FORMAT

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.children]

    @property
    def sha256(self) -> str:
        from hscale.harness import sha256_of

        body = {"space": self.space, "base": self.base,
                "children": [c.record() for c in self.children]}
        if self.format != _CHILDREN_ONLY:  # every word of the file is frozen
            body |= {"rounds": list(self.rounds), "notes": self.notes}
        return sha256_of(canonical(body))

    def composed(self) -> list[tuple[str, str]]:
        """The children as a space's composed harnesses (name, components as JSON)."""
        return [(c.name, canonical(c.components)) for c in self.children]

    def record(self) -> dict[str, Any]:
        return {"format": self.format, "space": self.space, "base": self.base,
                "sha256": self.sha256, "children": [c.record() for c in self.children],
                "rounds": list(self.rounds), **({"notes": self.notes} if self.notes else {})}


def with_pool(space: Any, pool: Pool, where: str, hint: str) -> Any:
    """``space`` (a HarnessSpace) with the pool's children as composed harnesses, each once;
    a pool evolved from another space or base harness is refused, named by ``where``."""
    base = space.factor_space.label(space.factor_space.base)
    if (pool.space, pool.base) != (space.name, base):
        raise HscaleError(f"{where}: the pool was evolved from {pool.base} of space "
                          f"{pool.space}, not from {base} of space {space.name}", hint)
    known = dict(space.outside)
    return replace(space, outside=(*space.outside, *(
        pair for pair in pool.composed() if pair[0] not in known)))


def _check_fields(path: Path, entry: Any, fields: dict[str, type], where: str) -> None:
    """``entry`` an object with each of ``fields`` of its type: else one line naming the
    file, the entry and the key."""
    hint = "write it with hscale harness evolve"
    if not isinstance(entry, dict):
        raise HscaleError(f"{path}: {where} is {_kind(entry)}, not an object", hint)
    for key, kind in fields.items():
        if key not in entry:
            raise HscaleError(f"{path}: {where} has no {key}", hint)
        value = entry[key]
        if not isinstance(value, kind) or kind is int and isinstance(value, bool):
            raise HscaleError(f"{path}: {where}.{key} is {_kind(value)}, not {_kind(kind())}",
                              hint)


def _kind(value: Any) -> str:
    """What a JSON value is, in words."""
    if value is None:
        return "null"
    return {bool: "true/false", int: "a number", float: "a number", str: "text",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def write_pool(path: str | Path, pool: Pool) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(pool.record(), indent=1) + "\n")
    return path


def read_pool(path: str | Path) -> Pool:
    """The pool a file holds, its hash and every child's name checked against its content."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise HscaleError(f"{path}: no such pool file", "write one with hscale harness "
                          "evolve, or list the siblings' labels in assignment.pool") from None
    except (OSError, ValueError) as exc:
        raise HscaleError(f"{path}: not a pool file ({exc})", "write it with hscale harness "
                          "evolve") from None
    if not isinstance(raw, dict) or raw.get("format") not in (POOL_FORMAT, _CHILDREN_ONLY):
        raise HscaleError(f"{path}: not a pool file (format is not {POOL_FORMAT})",
                          "write it with hscale harness evolve")
    _check_fields(path, raw, {"space": str, "base": str, "children": list}, "the pool")
    for key, kind in (("rounds", list), ("notes", dict)):
        if raw.get(key) is not None and not isinstance(raw[key], kind):
            raise HscaleError(f"{path}: {key} is {_kind(raw[key])}, not {_kind(kind())}",
                              "write it with hscale harness evolve")
    for i, c in enumerate(raw["children"]):
        _check_fields(path, c, {"name": str, "parent": str, "round": int, "edit": dict,
                                "components": dict}, f"children[{i}]")
    children = tuple(Child(c["name"], c["parent"], c["round"], tuple(c.get("causes") or ()),
                           dict(c["edit"]), dict(c["components"])) for c in raw["children"])
    pool = Pool(raw["space"], raw["base"], children, tuple(raw.get("rounds") or ()),
                dict(raw.get("notes") or {}), raw["format"])
    renamed = next((c.name for c in children if c.name != child_name(c.components)), None)
    if renamed or pool.sha256 != raw.get("sha256"):
        raise HscaleError(f"{path}: the pool changed after it was frozen"
                          + (f" (child {renamed} no longer holds what it was named for)"
                             if renamed else " (its sha256 is not the recorded one)"),
                          "evolve a new pool rather than edit a frozen one")
    if not children:
        raise HscaleError(f"{path}: the pool holds no child", "evolve with more proposals")
    return pool
