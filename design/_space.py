"""Factor spaces: named factors with named levels, and the maps config <-> index <-> label.

A configuration is a vector of level indices, one per factor. Its index is the mixed-radix
number with the first factor most significant, so ``np.ndindex`` order equals index order.
A label joins ``<factor><level>`` with dashes, e.g. ``S0-T1-O2-C0-W1``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from hscale.design._numbers import shown
from hscale.errors import HscaleError

_SPACE = "[ \t\r\n]*"
_SHORTHAND = re.compile(f"{_SPACE}([0-9]+){_SPACE}(?:\\^{_SPACE}([0-9]+){_SPACE})?")
# Limits that keep a typo (3^300000, 10000000^2, 10000^10000) from exhausting memory: factors,
# levels of one factor, and levels of all factors together (each level gets a name).
MAX_FACTORS = 10_000
MAX_LEVELS = 10_000
MAX_TOTAL_LEVELS = 100_000
# Configurations times factors that all_configs() materialises, and a chunk of iter_configs().
MAX_CONFIG_CELLS = 50_000_000


def parse_levels(text: str | Sequence[int]) -> tuple[int, ...]:
    """Level counts from shorthand: ``"3^5"`` -> (3,3,3,3,3); ``"2^1,3^7"``; ``"2,3,3"``.

    Only ASCII digits count, and every limit is checked before the tuple is built, so a typo
    costs an error line, not memory.
    """
    if isinstance(text, str):
        if text.count(",") >= MAX_FACTORS:
            raise HscaleError(f"cannot read levels: more than {MAX_FACTORS} parts",
                              "write LEVELS as S^M terms, e.g. 2^5000 rather than 2,2,...")
        return _check_levels(_shorthand(text))
    if isinstance(text, bytes | bytearray) or not hasattr(text, "__iter__"):
        raise HscaleError(f"cannot read levels {_clip(repr(text))}: not a list of level counts",
                          "give levels such as '3^5' or [3, 3, 3]; runs come after them")
    levels = []
    for x in text:
        if isinstance(x, bool) or not isinstance(x, int | np.integer):
            raise HscaleError(f"level counts must be integers, got {_clip(repr(x))}",
                              "give levels such as '3^5' or [3, 3, 3]")
        if len(levels) == MAX_FACTORS:
            raise HscaleError(f"more than {MAX_FACTORS} factors: more than hscale handles",
                              "use fewer factors")
        levels.append((int(x), 1))
    return _check_levels(levels)


def _clip(text: str, most: int = 60) -> str:
    return text if len(text) <= most else text[:most] + "..."


def _shorthand(text: str) -> list[tuple[int, int]]:
    """(level count, repeats) per comma-separated part of ASCII digits."""
    out = []
    for part in text.split(","):
        m = _SHORTHAND.fullmatch(part)
        if not m:
            raise HscaleError(f"cannot read levels {_clip(repr(text))}: bad part "
                              f"{_clip(repr(part))}",
                              "write LEVELS as S^M terms joined by commas, e.g. 3^5 or 2^1,3^7")
        size, count = m.groups()
        out.append((_capped(size), 1 if count is None else _capped(count)))
    return out


def _capped(digits: str) -> int:
    """The number, or 10^10 when it is longer (beyond every limit: ``int`` never sees a huge
    digit string)."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= 10 else 10**10


def _check_levels(parts: list[tuple[int, int]]) -> tuple[int, ...]:
    """The level counts of (count, repeats) parts, once every limit holds."""
    n_factors = sum(count for _, count in parts)
    if not n_factors:
        raise HscaleError("no factors given", "write LEVELS such as 3^5 or 2^1,3^7")
    if n_factors > MAX_FACTORS:
        raise HscaleError(f"{n_factors if n_factors < 10**10 else 'so many'} factors is more "
                          f"than hscale handles ({MAX_FACTORS})", "use fewer factors")
    big = [s for s, count in parts if s > MAX_LEVELS and count]
    if big:
        size = big[0] if big[0] < 10**10 else "so many"
        raise HscaleError(f"a factor with {size} levels is more than hscale handles "
                          f"({MAX_LEVELS})", "use fewer levels per factor")
    bad = [s for s, count in parts if s < 2 and count]
    if bad:
        raise HscaleError(
            f"every factor needs at least 2 levels, got {bad[0]}", "use level counts >= 2"
        )
    total = sum(s * count for s, count in parts)
    if total > MAX_TOTAL_LEVELS:
        raise HscaleError(f"{n_factors} factors with {total} levels in all is more than hscale "
                          f"handles ({MAX_TOTAL_LEVELS} levels)",
                          "use fewer factors or fewer levels per factor")
    return tuple(s for s, count in parts for _ in range(count))


def format_levels(levels: Sequence[int]) -> str:
    """Inverse of :func:`parse_levels`, grouping runs of equal counts: (2,3,3) -> ``2^1,3^2``."""
    parts: list[str] = []
    i = 0
    while i < len(levels):
        j = i
        while j < len(levels) and levels[j] == levels[i]:
            j += 1
        parts.append(f"{levels[i]}^{j - i}")
        i = j
    return ",".join(parts)


@dataclass(frozen=True)
class Factor:
    """One component of the space: a short name (used in labels) and its level names."""

    name: str
    levels: tuple[str, ...]
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z_]*", self.name):
            raise HscaleError(
                f"factor name {_clip(repr(self.name))} must be letters or underscores "
                "(no digits)", "digits would make labels such as S0-T1 ambiguous",
            )
        if len(self.levels) < 2:
            raise HscaleError(f"factor {self.name} needs at least 2 levels, got {len(self.levels)}")
        if len(self.levels) > MAX_LEVELS:
            raise HscaleError(f"factor {self.name} has {len(self.levels)} levels, more than "
                              f"hscale handles ({MAX_LEVELS})", "use fewer levels per factor")
        if len(set(self.levels)) != len(self.levels):
            raise HscaleError(f"factor {self.name} repeats a level name: "
                              f"{_clip(repr(list(self.levels)))}")

    @property
    def size(self) -> int:
        return len(self.levels)


@dataclass(frozen=True)
class FactorSpace:
    """A full-factorial space of configurations over named factors (mixed levels allowed)."""

    factors: tuple[Factor, ...]
    name: str = "space"
    _names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = tuple(f.name for f in self.factors)
        if not names:
            raise HscaleError("a factor space needs at least one factor")
        total = sum(f.size for f in self.factors)
        if len(names) > MAX_FACTORS or total > MAX_TOTAL_LEVELS:
            raise HscaleError(f"{len(names)} factors with {total} levels in all is more than "
                              f"hscale handles ({MAX_FACTORS} factors, {MAX_TOTAL_LEVELS} "
                              "levels)", "use fewer factors or fewer levels per factor")
        if len(set(names)) != len(names):
            raise HscaleError(f"factor names repeat: {_clip(repr(list(names)))}",
                              "give each factor its own name")
        object.__setattr__(self, "_names", names)

    # --- construction -------------------------------------------------------------------
    @classmethod
    def from_levels(cls, levels: str | Sequence[int], names: Sequence[str] | None = None,
                    name: str | None = None) -> FactorSpace:
        """A space with generic factor names (A, B, ..., Z, AA, ...) and levels ``0..L-1``."""
        counts = parse_levels(levels)
        if names is None:
            names = [_generic_name(i) for i in range(len(counts))]
        if len(names) != len(counts):
            raise HscaleError(f"{len(names)} factor names for {len(counts)} factors")
        factors = tuple(
            Factor(n, tuple(str(v) for v in range(s))) for n, s in zip(names, counts, strict=True)
        )
        return cls(factors, name=name or format_levels(counts))

    # --- shape --------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @cached_property
    def levels(self) -> tuple[int, ...]:
        return tuple(f.size for f in self.factors)

    @property
    def n_factors(self) -> int:
        return len(self.factors)

    @cached_property
    def size(self) -> int:
        """Number of configurations, an exact Python int even when it exceeds int64."""
        out = 1
        for s in self.levels:
            out *= s
        return out

    def __len__(self) -> int:
        return self.size

    @cached_property
    def strides(self) -> np.ndarray:
        """Mixed-radix place values: index = config @ strides (needs size < 2**63)."""
        self._require_int64()
        out = np.ones(self.n_factors, dtype=np.int64)
        for i in range(self.n_factors - 2, -1, -1):
            out[i] = out[i + 1] * self.levels[i + 1]
        return out

    def _require_int64(self) -> None:
        if self.size >= 2**63:
            raise HscaleError(
                f"space {self.name} has {shown(self.size)} configurations, too many for "
                "integer indices",
                "work with configurations or labels instead of indices",
            )

    # --- config <-> index <-> label -----------------------------------------------------
    def validate(self, configs: np.ndarray | Sequence) -> np.ndarray:
        """Configs as an int array (n, M) or (M,), checked to lie in the space."""
        arr = np.asarray(configs)
        if arr.dtype.kind not in "iu":
            if arr.size and not np.all(np.equal(np.mod(arr, 1), 0)):
                raise HscaleError("configurations must hold integer level indices")
            arr = arr.astype(np.int64)
        if arr.shape[-1:] != (self.n_factors,):
            raise HscaleError(
                f"configurations need {self.n_factors} entries ({', '.join(self.names)}), "
                f"got shape {arr.shape}"
            )
        bad = (arr < 0) | (arr >= np.asarray(self.levels))
        if bad.any():
            where = np.argwhere(bad)[0]
            col = where[-1]
            raise HscaleError(
                f"level {int(arr[tuple(where)])} is out of range for factor "
                f"{self.names[col]} (levels 0..{self.levels[col] - 1})"
            )
        return arr.astype(np.int64, copy=False)

    def contains(self, config: Sequence[int] | str) -> bool:
        """Membership without enumeration: right length and every level in range."""
        try:
            if isinstance(config, str):
                self.parse_label(config)
            else:
                self.validate(np.asarray(config))
        except HscaleError:
            return False
        return True

    def __contains__(self, config: object) -> bool:
        return self.contains(config)  # type: ignore[arg-type]

    def to_index(self, configs: np.ndarray | Sequence) -> np.ndarray | int:
        arr = self.validate(configs)
        out = arr @ self.strides
        return int(out) if arr.ndim == 1 else out

    def from_index(self, index: int | np.ndarray) -> np.ndarray:
        try:
            idx = np.asarray(index, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):
            idx = None
        if idx is None or np.any(idx < 0) or np.any(idx >= self.size):
            raise HscaleError(f"index out of range 0..{shown(self.size - 1)}")
        self._require_cells(idx.size)
        return (idx[..., None] // self.strides) % np.asarray(self.levels)

    def _require_cells(self, n_configs: int) -> None:
        """Refuse to materialise more than MAX_CONFIG_CELLS entries, before allocating."""
        if n_configs * self.n_factors > MAX_CONFIG_CELLS:
            raise HscaleError(f"{shown(n_configs)} configurations of {self.n_factors} factors "
                              f"are more than hscale holds at once ({MAX_CONFIG_CELLS} entries)",
                              "ask for fewer configurations at a time")

    def label(self, config: Sequence[int] | np.ndarray) -> str:
        cfg = self.validate(np.asarray(config))
        if cfg.ndim != 1:
            raise HscaleError("label() takes one configuration; use labels() for several")
        return "-".join(f"{n}{v}" for n, v in zip(self.names, cfg.tolist(), strict=True))

    def labels(self, configs: np.ndarray | Sequence) -> list[str]:
        arr = self.validate(np.atleast_2d(np.asarray(configs)))
        return ["-".join(f"{n}{v}" for n, v in zip(self.names, row, strict=True))
                for row in arr.tolist()]

    def parse_label(self, label: str) -> np.ndarray:
        """``S0-T1-O2-C0-W1`` -> array([0,1,2,0,1]); names must appear in the space's order."""
        parts = label.strip().split("-")
        expected = "-".join(f"{n}<level>" for n in self.names)
        if len(parts) != self.n_factors:
            raise HscaleError(
                f"label {label!r} has {len(parts)} parts, space {self.name} has "
                f"{self.n_factors} factors", f"write it as {expected}",
            )
        cfg = []
        for part, name, size in zip(parts, self.names, self.levels, strict=True):
            m = re.fullmatch(rf"{re.escape(name)}([0-9]+)", part)
            if not m:
                raise HscaleError(f"label {label!r}: part {part!r} should be {name}<level>",
                                  f"write it as {expected}")
            v = int(m.group(1))
            if v >= size:
                raise HscaleError(f"label {label!r}: factor {name} has levels 0..{size - 1}, "
                                  f"got {v}")
            cfg.append(v)
        return np.asarray(cfg, dtype=np.int64)

    def parse_labels(self, labels: Sequence[str]) -> np.ndarray:
        if not labels:
            return np.zeros((0, self.n_factors), dtype=np.int64)
        return np.stack([self.parse_label(x) for x in labels])

    def level_name(self, factor: int, level: int) -> str:
        return self.factors[factor].levels[level]

    # --- enumeration --------------------------------------------------------------------
    def all_configs(self, limit: int = 10_000_000) -> np.ndarray:
        """Every configuration in index order, as an (size, M) array."""
        if self.size > limit:
            raise HscaleError(
                f"space {self.name} has {shown(self.size)} configurations, too many to "
                f"enumerate (limit {limit})",
                "use iter_configs() or index arithmetic instead of enumerating",
            )
        self._require_cells(self.size)
        return self.from_index(np.arange(self.size, dtype=np.int64))

    def iter_configs(self, chunk: int = 65536) -> Iterator[np.ndarray]:
        """Every configuration in index order, in chunks, without holding the whole space."""
        self._require_int64()
        chunk = max(1, min(int(chunk), MAX_CONFIG_CELLS // self.n_factors))
        for start in range(0, self.size, chunk):
            yield self.from_index(np.arange(start, min(start + chunk, self.size)))

    @property
    def base(self) -> np.ndarray:
        """The base configuration h0 = (0, ..., 0)."""
        return np.zeros(self.n_factors, dtype=np.int64)

    def __str__(self) -> str:
        return f"{self.name}: {' x '.join(f'{f.name}({f.size})' for f in self.factors)}"


def _generic_name(i: int) -> str:
    letters = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        letters = chr(65 + r) + letters
    return letters
