"""Choosing a design for a factor space: which array, which of its columns, which level labels.

Isomorphic arrays share every quality criterion, but not which configurations they contain:
relabelling levels or reordering columns moves runs around the space. So choosing a design is
two decisions: the isomorphism class (:func:`candidates`, ranked by a criterion) and its
placement in the space (:func:`place`), e.g. so that it contains the base harness h0 and
avoids the held-out evaluation configurations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations, permutations, product
from math import comb, factorial, prod

import numpy as np

from design.criteria import rank_key, summary
from design.errors import HscaleError
from design.isomorphism import canonical_form, enumerate_oas
from design.space import FactorSpace, format_levels, parse_levels
from design.verify import as_array

# Placements evaluated at once: bounds memory at roughly batch x runs x factors int64.
_BATCH = 8192


def contains(array: np.ndarray | Sequence, config: Sequence[int]) -> bool:
    """True when some row of ``array`` equals ``config``."""
    arr = np.atleast_2d(np.asarray(array))
    return bool((arr == np.asarray(config)[None, :]).all(axis=1).any())


def normalize_to_contain(array: np.ndarray | Sequence, config: Sequence[int],
                         row: int | None = None, levels: Sequence[int] | None = None
                         ) -> np.ndarray:
    """A level-relabelled copy of ``array`` in which row ``row`` equals ``config``.

    Relabelling levels within a column is an isomorphism, so the copy is as good a design.
    Each column swaps just the two levels involved; by default the row nearest to
    ``config`` is used, which changes the fewest columns.
    """
    arr, lv = as_array(array, levels)
    cfg = FactorSpace.from_levels(lv).validate(np.asarray(config))
    if cfg.ndim != 1:
        raise HscaleError("normalize_to_contain takes one configuration")
    if row is None:
        row = int(np.argmin((arr != cfg).sum(axis=1)))
    if not 0 <= row < arr.shape[0]:
        raise HscaleError(f"row {row} is out of range 0..{arr.shape[0] - 1}")
    out = arr.copy()
    for c in np.flatnonzero(arr[row] != cfg):
        a, b = arr[row, c], cfg[c]
        out[arr[:, c] == a, c] = b
        out[arr[:, c] == b, c] = a
    return out


@dataclass(frozen=True)
class Placement:
    """A parent array's columns, in factor order, with a level relabelling for each.

    ``permutations[i][v]`` is the level that parent level ``v`` of column ``columns[i]``
    becomes; ``array`` is the result.
    """

    array: np.ndarray
    columns: tuple[int, ...]
    permutations: tuple[tuple[int, ...], ...]
    summary: dict
    key: tuple = field(repr=False)

    def describe(self) -> str:
        """One line: which parent column feeds each factor and how its levels are relabelled."""
        parts = []
        for i, (c, perm) in enumerate(zip(self.columns, self.permutations, strict=True)):
            relabel = "" if perm == tuple(range(len(perm))) else " levels " + ",".join(
                f"{a}->{b}" for a, b in enumerate(perm) if a != b)
            parts.append(f"factor {i} <- column {c}{relabel}")
        return "; ".join(parts)


def _target_levels(parent_levels: tuple[int, ...], k_or_levels) -> tuple[int, ...]:
    if isinstance(k_or_levels, FactorSpace):
        return k_or_levels.levels
    if isinstance(k_or_levels, int | np.integer):
        if len(set(parent_levels)) > 1:
            raise HscaleError("the parent array has mixed levels, so a factor count is ambiguous",
                              "pass the level counts instead, e.g. '2^1,3^4'")
        return (parent_levels[0],) * int(k_or_levels)
    return parse_levels(k_or_levels)


def _subsets(parent_levels: tuple[int, ...], target: tuple[int, ...], max_subsets: int,
             rng: np.random.Generator) -> list[tuple[int, ...]]:
    """Column subsets with the target's level counts: all of them, or a random sample."""
    need = {s: target.count(s) for s in set(target)}
    pools = {s: [c for c, x in enumerate(parent_levels) if x == s] for s in need}
    short = [s for s in need if len(pools[s]) < need[s]]
    if short:
        s = short[0]
        raise HscaleError(f"the parent array has {len(pools[s])} columns with {s} levels, "
                          f"{need[s]} are needed", "use a parent array with more such columns")
    total = prod(comb(len(pools[s]), need[s]) for s in need)
    if total <= max_subsets:
        return [tuple(sorted(c for part in choice for c in part))
                for choice in product(*(combinations(pools[s], need[s]) for s in need))]
    seen: set[tuple[int, ...]] = set()
    while len(seen) < max_subsets:
        seen.add(tuple(sorted(int(c) for s in need
                              for c in rng.choice(pools[s], need[s], replace=False))))
    return sorted(seen)


def _orderings(subset: tuple[int, ...], parent_levels: tuple[int, ...],
               target: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """Every assignment of the subset's columns to factor positions with equal level counts."""
    groups = sorted(set(target))
    positions = [[p for p, s in enumerate(target) if s == g] for g in groups]
    columns = [[c for c in subset if parent_levels[c] == g] for g in groups]
    for choice in product(*(permutations(cols) for cols in columns)):
        order = [0] * len(target)
        for pos, cols in zip(positions, choice, strict=True):
            for p, c in zip(pos, cols, strict=True):
                order[p] = c
        yield tuple(order)


class _Search:
    """Vectorised feasibility checks of placements of one parent array."""

    def __init__(self, arr: np.ndarray, target: tuple[int, ...], include: np.ndarray,
                 exclude: np.ndarray) -> None:
        self.arr = arr
        self.target = target
        self.lmax = max(target)
        self.include = include
        self.strides = FactorSpace.from_levels(target).strides
        self.include_codes = include @ self.strides
        self.exclude_codes = np.unique(exclude @ self.strides)
        self.perms = [np.array(list(permutations(range(s))), dtype=np.int64) for s in target]
        self.tried = self.with_include = self.without_exclude = 0

    def evaluate(self, cols: np.ndarray, maps: np.ndarray) -> np.ndarray:
        """Feasible mask for placements given as parent columns (B, k) and level maps (B, k, L)."""
        values = self.arr.T[cols]  # (B, k, N)
        image = np.take_along_axis(maps, values, axis=2)
        codes = np.einsum("bkn,k->bn", image, self.strides)
        has = np.ones(len(cols), dtype=bool)
        for code in self.include_codes:
            has &= (codes == code).any(axis=1)
        clean = ~np.isin(codes, self.exclude_codes).any(axis=1)
        self.tried += len(cols)
        self.with_include += int(has.sum())
        self.without_exclude += int(clean.sum())
        return has & clean

    def _pad(self, perms: np.ndarray) -> np.ndarray:
        out = np.zeros((*perms.shape[:-1], self.lmax), dtype=np.int64)
        out[..., :perms.shape[-1]] = perms
        return out

    def space_size(self, n_orderings: int) -> int:
        if len(self.include):
            return n_orderings * self.arr.shape[0] * prod(factorial(s - 1) for s in self.target)
        return n_orderings * prod(factorial(s) for s in self.target)

    def exhaustive(self, order: tuple[int, ...]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """All placements with this column order; anchored so include[0] is a row if given."""
        k = len(order)
        cols = np.asarray(order)
        if not len(self.include):
            idx = np.array(list(product(*(range(len(p)) for p in self.perms))), dtype=np.int64)
            for start in range(0, len(idx), _BATCH):
                block = idx[start:start + _BATCH]
                maps = np.stack([self._pad(self.perms[p][block[:, p]]) for p in range(k)], 1)
                yield np.broadcast_to(cols, (len(block), k)), maps
            return
        anchor = self.include[0]
        # allowed[p][a]: the permutations of position p that send parent level a to anchor[p]
        allowed = [[p_[p_[:, a] == anchor[p]] for a in range(s)]
                   for p, (p_, s) in enumerate(zip(self.perms, self.target, strict=True))]
        combos = np.array(list(product(*(range(factorial(s - 1)) for s in self.target))),
                          dtype=np.int64)
        dist = (self.arr[:, cols] != anchor).sum(axis=1)
        for r in np.argsort(dist, kind="stable"):  # rows needing fewest relabels first
            maps = np.stack([self._pad(allowed[p][self.arr[r, c]][combos[:, p]])
                             for p, c in enumerate(order)], axis=1)
            yield np.broadcast_to(cols, (len(combos), k)), maps

    def sampled(self, subset: tuple[int, ...], parent_levels: tuple[int, ...],
                rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        """``size`` random placements of the subset (orders and level maps), anchored likewise."""
        k = len(self.target)
        cols = np.zeros((size, k), dtype=np.int64)
        for g in set(self.target):
            pos = [p for p, s in enumerate(self.target) if s == g]
            pool = np.array([c for c in subset if parent_levels[c] == g])
            cols[:, pos] = pool[rng.random((size, len(pos))).argsort(axis=1)]
        maps = np.zeros((size, k, self.lmax), dtype=np.int64)
        rows = rng.integers(0, self.arr.shape[0], size)  # the row that becomes include[0]
        for p, s in enumerate(self.target):
            perm = rng.random((size, s)).argsort(axis=1)
            if len(self.include):
                # swap two levels so that the anchor row's level goes to include[0][p]
                a = self.arr[rows, cols[:, p]]
                j = np.argmax(perm == self.include[0][p], axis=1)
                b = np.arange(size)
                perm[b, j], perm[b, a] = perm[b, a], perm[b, j].copy()
            maps[:, p, :s] = perm
        return cols, maps


def _configs(configs, target: tuple[int, ...], what: str) -> np.ndarray:
    if configs is None:
        return np.zeros((0, len(target)), dtype=np.int64)
    arr = np.asarray(configs)
    if arr.size == 0:
        return np.zeros((0, len(target)), dtype=np.int64)
    try:
        return FactorSpace.from_levels(target).validate(np.atleast_2d(arr))
    except HscaleError as exc:
        raise HscaleError(f"{what} configurations: {exc.message}",
                          f"give {what} as level vectors for levels {list(target)}") from exc


def place(array: np.ndarray | Sequence, k_or_levels: int | str | Sequence[int] | FactorSpace,
          include: Sequence | np.ndarray | None = None,
          exclude: Sequence | np.ndarray | None = None,
          criterion: str | Sequence[str] = "gwlp", rng: np.random.Generator | None = None,
          max_tries: int = 200_000, max_subsets: int = 500, per_subset: int = 1,
          levels: Sequence[int] | None = None) -> list[Placement]:
    """Placements of columns of ``array`` that contain every ``include`` config, no ``exclude``.

    Column subsets are ranked by ``criterion`` (which is invariant under level relabelling and
    column order). For each subset the search over column orders and level relabellings is
    exhaustive when it has at most ``max_tries`` placements, else ``max_tries`` random ones.
    Returns up to ``per_subset`` placements per subset, best subset first; raises HscaleError
    naming the unmet requirement when none is found.
    """
    arr, plv = as_array(array, levels)
    target = _target_levels(plv, k_or_levels)
    inc = np.unique(_configs(include, target, "include"), axis=0)
    exc = _configs(exclude, target, "exclude")
    if len(inc) > arr.shape[0]:
        raise HscaleError(f"{len(inc)} configurations to include but only {arr.shape[0]} runs",
                          "include fewer configurations or use a larger array")
    clash = [tuple(int(v) for v in c) for c in inc if (exc == c).all(axis=1).any()]
    if clash:
        raise HscaleError(f"configuration {clash[0]} is both included and excluded",
                          "remove it from one of the two lists")
    rng = rng if rng is not None else np.random.default_rng(0)
    subsets = _subsets(plv, target, max_subsets, rng)
    scored = []
    for subset in subsets:
        info = summary(arr[:, list(subset)], _levels_at(plv, subset))
        scored.append((rank_key(info, criterion), subset, info))
    scored.sort(key=lambda item: item[0])
    search = _Search(arr, target, inc, exc)
    sampled = False
    out: list[Placement] = []
    for key, subset, info in scored:
        orders = list(_orderings(subset, plv, target))
        if search.space_size(len(orders)) <= max_tries:
            batches = (b for order in orders for b in search.exhaustive(order))
        else:
            sampled = True
            batches = (search.sampled(subset, plv, rng, min(_BATCH, max_tries - start))
                       for start in range(0, max_tries, _BATCH))
        found = 0
        for cols, maps in batches:
            for b in np.flatnonzero(search.evaluate(cols, maps))[:per_subset - found]:
                out.append(_placement(arr, target, cols[b], maps[b], info, key))
                found += 1
            if found >= per_subset:
                break
    if not out:
        raise _failure(search, inc, exc, sampled)
    return out


def _levels_at(parent_levels: tuple[int, ...], subset: Sequence[int]) -> tuple[int, ...]:
    """Level counts of the chosen parent columns."""
    return tuple(parent_levels[c] for c in subset)


def _placement(arr: np.ndarray, target: tuple[int, ...], cols: np.ndarray, maps: np.ndarray,
               info: dict, key: tuple) -> Placement:
    perms = tuple(tuple(int(v) for v in maps[p, :s]) for p, s in enumerate(target))
    image = np.column_stack([maps[p, arr[:, c]] for p, c in enumerate(cols)])
    return Placement(image, tuple(int(c) for c in cols), perms, info, key)


def _failure(search: _Search, inc: np.ndarray, exc: np.ndarray, sampled: bool) -> HscaleError:
    how = (f"in {search.tried} sampled placements" if sampled
           else f"in all {search.tried} placements")
    more = "raise max_tries, " if sampled else ""
    if len(inc) and search.with_include == 0:
        shown = ", ".join(str(tuple(int(v) for v in c)) for c in inc[:4])
        return HscaleError(f"no placement contains every included configuration ({shown}) {how}",
                           f"{more}include fewer configurations or use another parent array")
    return HscaleError(
        f"every placement {'containing the included configurations ' if len(inc) else ''}"
        f"hits the {len(exc)} excluded configurations {how}",
        f"{more}exclude fewer configurations or use another parent array")


@dataclass(frozen=True)
class Candidate:
    """One isomorphism class of OA: a stable id, a representative array, its criteria."""

    id: str
    array: np.ndarray
    summary: dict


_CLASSES: dict[tuple, tuple[np.ndarray, ...]] = {}


def _classes(runs: int, levels: tuple[int, ...], strength: int,
             progress: Callable[[str, int, int], None] | None = None
             ) -> tuple[np.ndarray, ...]:
    """Canonical representatives of all classes, columns back in the order of ``levels``.

    Cached per (runs, levels, strength): enumeration is the slow part of listing candidates.
    """
    key = (runs, levels, strength)
    if key in _CLASSES:
        return _CLASSES[key]
    order = np.argsort(levels, kind="stable")  # canonical forms sort columns by level count
    reps = []
    for rep in enumerate_oas(runs, levels, strength, progress):
        canon = canonical_form(rep, levels)
        out = np.empty_like(canon)
        out[:, order] = canon
        out.setflags(write=False)
        reps.append(out)
    _CLASSES[key] = tuple(reps)
    return _CLASSES[key]


def candidates(runs: int, levels: str | Sequence[int], strength: int = 2,
               criterion: str | Sequence[str] = "gwlp",
               progress: Callable[[str, int, int], None] | None = None) -> list[Candidate]:
    """Every non-isomorphic OA(runs; levels) with its criteria, best by ``criterion`` first.

    Ids such as ``OA18.3^5#1`` number the classes by GWLP (then distance, covering radius,
    and the canonical array as final tie-break), so an id names the same design whatever
    ``criterion`` sorts the list.
    """
    lv = parse_levels(levels)
    reps = _classes(runs, lv, strength, progress)
    infos = [summary(a, lv) for a in reps]
    order = sorted(range(len(reps)), key=lambda i: (rank_key(infos[i], "gwlp"),
                                                    reps[i].tobytes()))
    stem = f"OA{runs}.{format_levels(lv)}"
    found = [Candidate(f"{stem}#{n + 1}", reps[i], infos[i]) for n, i in enumerate(order)]
    return sorted(found, key=lambda c: rank_key(c.summary, criterion))
