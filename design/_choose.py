"""Choosing a design for a factor space: which array, which of its columns, which level labels.

Isomorphic arrays share every quality criterion, but not which configurations they contain:
relabelling levels or reordering columns moves runs around the space. So choosing a design is
two decisions: the isomorphism class (:func:`candidates`, ranked by a criterion) and its
placement in the space (:func:`place`), e.g. so that it contains the base harness h0 and
avoids the held-out evaluation configurations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import combinations, permutations, product
from math import comb, factorial, prod
from pathlib import Path

import numpy as np

from hscale.design._criteria import rank_key, summary
from hscale.design._enumeration import enumerate_oas
from hscale.design._isomorphism import canonical_form
from hscale.design._space import FactorSpace, format_levels, parse_levels
from hscale.design._verify import as_array, is_orthogonal
from hscale.errors import HscaleError

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


Decoder = Callable[[int], tuple[np.ndarray, np.ndarray]]


class _Search:
    """Vectorised feasibility checks of placements of one parent array.

    A placement is a column order (k parent columns) and a level map per position; batches
    are produced as the config codes of every placed row, (B, N), with a decoder that turns
    a batch index back into (columns, level maps).
    """

    def __init__(self, arr: np.ndarray, target: tuple[int, ...], include: np.ndarray,
                 exclude: np.ndarray) -> None:
        self.arr = arr
        self.target = target
        self.lmax = max(target)
        self.include = include
        self.strides = FactorSpace.from_levels(target).strides
        self.include_codes = include @ self.strides
        self.exclude_codes = np.unique(exclude @ self.strides)
        self.tried = self.with_include = self.without_exclude = 0

    def evaluate(self, codes: np.ndarray) -> np.ndarray:
        """Feasible mask: the placed rows hold every included and no excluded code."""
        has = np.ones(len(codes), dtype=bool)
        for code in self.include_codes:
            has &= (codes == code).any(axis=1)
        clean = ~np.isin(codes, self.exclude_codes).any(axis=1)
        self.tried += len(codes)
        self.with_include += int(has.sum())
        self.without_exclude += int(clean.sum())
        return has & clean

    def space_size(self, n_orderings: int) -> int:
        if len(self.include):
            return n_orderings * self.arr.shape[0] * prod(factorial(s - 1) for s in self.target)
        return n_orderings * prod(factorial(s) for s in self.target)

    def _tables(self) -> tuple[np.ndarray, list[int]]:
        """Level maps by (position, anchor row's parent level, choice), and choices per position.

        Anchored (include given): the choices at position p are the relabellings sending the
        anchor row's parent level to include[0][p]; otherwise every relabelling.
        """
        k = len(self.target)
        anchored = bool(len(self.include))
        counts = [factorial(s - 1) if anchored else factorial(s) for s in self.target]
        table = np.zeros((k, self.lmax, max(counts), self.lmax), dtype=np.int64)
        for p, s in enumerate(self.target):  # s! relabellings: only for an exhaustive search
            perms = np.array(list(permutations(range(s))), dtype=np.int64)
            for a in range(s):
                chosen = perms[perms[:, a] == self.include[0][p]] if anchored else perms
                table[p, a, :len(chosen), :s] = chosen
        return table, counts

    def exhaustive(self, orders: np.ndarray) -> Iterator[tuple[np.ndarray, Decoder]]:
        """Every placement with these column orders (O, k), in batches of whole orders.

        A row's code is a sum over positions of a term that depends on one level choice only,
        so the codes of all choice combinations are one broadcast sum, without a gather per
        placement. Anchored so include[0] is the image of some row; rows needing the fewest
        relabels come first, so a parent that already fits comes back unchanged.
        """
        table, counts = self._tables()
        k, n = len(self.target), self.arr.shape[0]
        weighted = table * self.strides[:, None, None, None]
        anchored = bool(len(self.include))
        n_rows = n if anchored else 1
        if anchored:
            dist = (self.arr[:, orders] != self.include[0]).sum(axis=2)  # (N, O)
            row_order = np.argsort(dist.T, axis=1, kind="stable")
        else:
            row_order = np.zeros((len(orders), 1), dtype=np.int64)
        per_order = n_rows * prod(counts) * n
        step = max(1, 4_000_000 // per_order)
        for start in range(0, len(orders), step):
            cols = orders[start:start + step]  # (O, k)
            values = self.arr[:, cols].transpose(1, 2, 0)  # (O, k, N)
            rows = row_order[start:start + step]  # (O, R)
            level = (self.arr[rows[:, :, None], cols[:, None, :]] if anchored
                     else np.zeros((len(cols), 1, k), dtype=np.int64))  # (O, R, k)
            codes = np.zeros((len(cols), n_rows, *([1] * k), n), dtype=np.int64)
            for p in range(k):
                term = weighted[p][level[:, :, p, None, None],
                                   np.arange(counts[p])[None, None, :, None],
                                   values[:, None, None, p, :]]  # (O, R, F_p, N)
                shape = [len(cols), n_rows] + [1] * k + [n]
                shape[2 + p] = counts[p]
                codes = codes + term.reshape(shape)

            def decode(b: int, cols=cols, level=level) -> tuple[np.ndarray, np.ndarray]:
                o, r, *choice = np.unravel_index(b, (len(cols), n_rows, *counts))
                maps = table[np.arange(k), level[o, r], np.asarray(choice)]
                return cols[o], maps

            yield codes.reshape(-1, n), decode

    def sampled(self, subset: tuple[int, ...], parent_levels: tuple[int, ...],
                rng: np.random.Generator, size: int, first: bool = False
                ) -> tuple[np.ndarray, Decoder]:
        """``size`` random placements of the subset, anchored likewise; ``first`` puts the
        unchanged parent columns first when nothing is anchored."""
        k, n = len(self.target), self.arr.shape[0]
        cols = np.zeros((size, k), dtype=np.int64)
        for g in set(self.target):
            pos = [p for p, s in enumerate(self.target) if s == g]
            pool = np.array([c for c in subset if parent_levels[c] == g])
            cols[:, pos] = pool[rng.random((size, len(pos))).argsort(axis=1)]
        maps = np.zeros((size, k, self.lmax), dtype=np.int64)
        rows = rng.integers(0, n, size)  # the row that becomes include[0]
        for p, s in enumerate(self.target):
            perm = rng.random((size, s)).argsort(axis=1)
            if len(self.include):
                # swap two levels so that the anchor row's level goes to include[0][p]
                a = self.arr[rows, cols[:, p]]
                j = np.argmax(perm == self.include[0][p], axis=1)
                b = np.arange(size)
                perm[b, j], perm[b, a] = perm[b, a], perm[b, j].copy()
            maps[:, p, :s] = perm
        if not len(self.include) and first:  # try the parent as it is before random ones
            cols[0] = next(_orderings(subset, parent_levels, self.target))
            maps[0] = np.arange(self.lmax)
        flat = (maps * self.strides[None, :, None]).ravel()
        index = (np.arange(size * k).reshape(size, k, 1) * self.lmax
                 + self.arr.T[cols])  # (B, k, N) positions in flat
        codes = np.take(flat, index).sum(axis=1)
        return codes, lambda b: (cols[b], maps[b])


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
        n_orders = prod(factorial(target.count(g)) for g in set(target))
        if search.space_size(n_orders) <= max_tries:
            batches = search.exhaustive(np.array(list(_orderings(subset, plv, target))))
        else:
            sampled = True
            batches = (search.sampled(subset, plv, rng, min(_BATCH, max_tries - start),
                                      first=start == 0)
                       for start in range(0, max_tries, _BATCH))
        found = 0
        for codes, decode in batches:
            for b in np.flatnonzero(search.evaluate(codes))[:per_subset - found]:
                out.append(_placement(arr, target, *decode(int(b)), info, key))
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


_CATALOGUE = Path(__file__).with_name("data") / "oa_classes.json"


def _shipped_classes(levels: tuple[int, ...], runs: int, strength: int
                     ) -> tuple[np.ndarray, ...] | None:
    """Class representatives enumerated once and shipped (the papers' OA(18; 3^5) among them).

    Each is verified on load; the test suite checks the catalogue against a fresh enumeration.
    """
    try:
        catalogue = json.loads(_CATALOGUE.read_text())
    except (OSError, ValueError):
        return None
    rows = catalogue.get(f"{runs}|{','.join(map(str, levels))}|{strength}")
    if rows is None:
        return None
    reps = []
    for rep in rows:
        arr = np.asarray(rep, dtype=np.int64)
        if not is_orthogonal(arr, strength, levels):
            return None
        arr.setflags(write=False)
        reps.append(arr)
    return tuple(reps)


def _classes(levels: tuple[int, ...], runs: int, strength: int,
             progress: Callable[[str, int, int], None] | None = None
             ) -> tuple[np.ndarray, ...]:
    """Canonical representatives of all classes, columns back in the order of ``levels``.

    Cached per (runs, levels, strength): enumeration is the slow part of listing candidates.
    """
    key = (runs, levels, strength)
    if key in _CLASSES:
        return _CLASSES[key]
    shipped = _shipped_classes(levels, runs, strength)
    if shipped is not None:
        _CLASSES[key] = shipped
        return shipped
    order = np.argsort(levels, kind="stable")  # canonical forms sort columns by level count
    reps = []
    found = enumerate_oas(levels, runs, strength, progress)
    for done, rep in enumerate(found):
        if progress is not None:
            progress("canonical forms", done, len(found))
        canon = canonical_form(rep, levels)
        out = np.empty_like(canon)
        out[:, order] = canon
        out.setflags(write=False)
        reps.append(out)
    # hscale's exact cross-check of the enumerator (OApackage's, where installed): the
    # classes' canonical forms, computed for the ids anyway, are pairwise different
    if len({r.tobytes() for r in reps}) != len(reps):
        raise RuntimeError(f"the enumeration of OA({runs}; {format_levels(levels)}) returned "
                           "two isomorphic arrays: a bug")
    _CLASSES[key] = tuple(reps)
    return _CLASSES[key]


def candidates(levels: str | Sequence[int], runs: int, strength: int = 2,
               criterion: str | Sequence[str] = "gwlp",
               progress: Callable[[str, int, int], None] | None = None) -> list[Candidate]:
    """Every non-isomorphic OA(runs; levels) with its criteria, best by ``criterion`` first.

    Ids such as ``OA18.3^5#1`` number the classes by GWLP (then distance, covering radius,
    and the canonical array as final tie-break), so an id names the same design whatever
    ``criterion`` sorts the list.
    """
    lv = parse_levels(levels)
    reps = _classes(lv, runs, strength, progress)
    infos = [summary(a, lv) for a in reps]
    order = sorted(range(len(reps)), key=lambda i: (rank_key(infos[i], "gwlp"),
                                                    reps[i].tobytes()))
    stem = f"OA{runs}.{format_levels(lv)}"
    found = [Candidate(f"{stem}#{n + 1}", reps[i], infos[i]) for n, i in enumerate(order)]
    return sorted(found, key=lambda c: rank_key(c.summary, criterion))

