"""Strength verification and balance tables, vectorised over all column tuples at once.

An N x k array has strength t when, for every t columns, every combination of their levels
appears equally often, namely N / (L_1 ... L_t) times. The check encodes each t-tuple of a row
as one mixed-radix integer per column tuple, offsets each tuple's codes into its own block and
counts all blocks with a single ``np.bincount``: no Python loop over column tuples.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cache
from itertools import combinations
from math import comb, prod

import numpy as np

from hscale.design._bounds import elementary_symmetric
from hscale.design._numbers import shown
from hscale.errors import HscaleError

# Largest number of (row, column-tuple) codes built at once; bounds memory at ~32 MB.
_CHUNK_CELLS = 4_000_000
# Most multiply-adds one strength check (or balance table) may take, about ten seconds of one
# core: a larger request is refused before any work.
MAX_CHECK_WORK = 4 * 10**10
# Failing column tuples a report lists, the first in column order: it counts the rest.
LISTED_FAILURES = 10
# Most entries of a balance table (factor pairs x level pairs).
_MAX_TABLE_CELLS = 50_000_000
# Below this many multiply-adds a BLAS call runs on one thread: waking a thread pool costs
# more than the product, and on a loaded machine it can cost milliseconds.
_SINGLE_THREAD_FLOPS = 1_000_000_000


@cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _blas_threads(flops: int):
    if flops >= _SINGLE_THREAD_FLOPS:
        return nullcontext()
    return _blas_controller().limit(limits=1, user_api="blas")


def as_array(array: np.ndarray | Sequence, levels: Sequence[int] | None = None
             ) -> tuple[np.ndarray, tuple[int, ...]]:
    """A validated (N, k) integer array and its level counts (inferred as max + 1 if not given)."""
    arr = np.asarray(array)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise HscaleError(f"an array needs rows and columns, got shape {arr.shape}",
                          "give one row per run and one column per factor")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.mod(arr, 1) == 0):
            arr = arr.astype(np.int64)
        else:
            raise HscaleError("array entries must be integer levels 0..L-1")
    if (arr < 0).any():
        raise HscaleError("array entries must be levels 0..L-1, found a negative value")
    if levels is None:
        levels = tuple(int(v) + 1 for v in arr.max(axis=0))
        levels = tuple(max(2, s) for s in levels)
    else:
        levels = tuple(int(s) for s in levels)
        if len(levels) != arr.shape[1]:
            raise HscaleError(f"{len(levels)} level counts for {arr.shape[1]} columns",
                              "give one level count per column")
        over = np.flatnonzero(arr.max(axis=0) >= np.asarray(levels))
        if over.size:
            c = int(over[0])
            raise HscaleError(f"column {c} holds level {int(arr[:, c].max())} but has "
                              f"{levels[c]} levels", "check the level counts")
    return arr.astype(np.int64, copy=False), levels


def check_work(levels: Sequence[int], strength: int, runs: int) -> int:
    """Multiply-adds of a strength-t check: runs x sum of levels x level tuples of t-1 factors
    (one matrix product over all of them)."""
    return runs * sum(levels) * elementary_symmetric(levels, strength - 1)[strength - 1]


def _require_affordable(levels: Sequence[int], strength: int, runs: int) -> None:
    work = check_work(levels, strength, runs)
    if work > MAX_CHECK_WORK:
        raise _too_costly(levels, strength, runs)


def _too_costly(levels: Sequence[int], strength: int, runs: int) -> HscaleError:
    return HscaleError(f"checking {runs} runs of {len(levels)} factors for strength "
                       f"{strength} would take {shown(check_work(levels, strength, runs))} "
                       f"multiply-adds, more than hscale spends ({shown(MAX_CHECK_WORK)})",
                       "check fewer factors or a lower strength")


def _too_few_runs(levels: Sequence[int], strength: int, runs: int) -> str:
    """Why ``runs`` cannot hold every level combination of the t factors with fewest levels
    ('' when it can): the quick no that needs no counting."""
    need = prod(sorted(levels)[:strength])
    if need <= runs:
        return ""
    return (f"strength {strength} needs at least {shown(need)} runs (every level combination "
            f"of {strength} factors), there are {runs}")


@dataclass(frozen=True)
class TupleFailure:
    """A column tuple whose level combinations are not all equally frequent."""

    columns: tuple[int, ...]
    expected: float
    min_count: int
    max_count: int

    @property
    def deviation(self) -> float:
        return max(self.expected - self.min_count, self.max_count - self.expected)

    def describe(self) -> str:
        return (f"columns {self.columns} counts {self.min_count}..{self.max_count} "
                f"(expected {self.expected:g})")


@dataclass(frozen=True)
class StrengthReport:
    """Result of a strength-t check. ``failed`` counts the unbalanced column tuples, but
    ``failures`` lists only the first LISTED_FAILURES (in column order) and ``worst`` the one
    furthest from balance: a large non-array can fail millions of tuples, and keeping them all
    cost hundreds of MB. ``complete`` is False when the check stopped at its first failure."""

    runs: int
    levels: tuple[int, ...]
    strength: int
    tuples_checked: int
    failures: list[TupleFailure] = field(default_factory=list)
    reason: str = ""
    failed: int = 0
    worst: TupleFailure | None = None
    complete: bool = True

    def __post_init__(self) -> None:
        if self.failed < len(self.failures):
            object.__setattr__(self, "failed", len(self.failures))
        if self.worst is None and self.failures:
            object.__setattr__(self, "worst", max(self.failures, key=lambda f: f.deviation))

    @property
    def ok(self) -> bool:
        return not self.failed and not self.reason

    def __bool__(self) -> bool:
        return self.ok

    def summary(self, limit: int = 5) -> str:
        """One line: OK, or how many tuples fail, the worst one and the first ``limit``."""
        head = f"{self.runs} runs, {len(self.levels)} factors, strength {self.strength}"
        if self.ok:
            return f"OK: orthogonal array of {head}"
        if self.reason:
            return f"NOT an orthogonal array of {head}: {self.reason}"
        count = f"{self.failed}" if self.complete else f"at least {self.failed}"
        text = (f"NOT an orthogonal array of {head}: {count} of {self.tuples_checked} column "
                "tuples unbalanced")
        listed = self.failures[:max(limit, 0)]
        if self.worst is not None and self.failed > 1 and self.worst not in listed:
            text += f", the worst {self.worst.describe()}"
        if not listed:
            return text
        text += ("; first " if self.failed > len(listed) else ": ")
        text += "; ".join(f.describe() for f in listed)
        more = self.failed - len(listed)
        return text + (f"; and {more} more" if more > 0 and self.complete else "")


def _onehot(arr: np.ndarray, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indicator matrix (N, sum L): column offsets[j] + v is 1 where factor j is at level v."""
    offsets = np.concatenate(([0], np.cumsum(levels)[:-1]))
    return _indicator(arr + offsets, int(levels.sum())), offsets


def _indicator(columns: np.ndarray, width: int) -> np.ndarray:
    """(N, width) float32 matrix with a 1 at (r, columns[r, j]) for every r, j."""
    n = columns.shape[0]
    out = np.zeros(n * width, dtype=np.float32)
    out[(columns + (np.arange(n) * width)[:, None]).ravel()] = 1.0
    return out.reshape(n, width)


def _prefix_chunks(k: int, t: int, levels: np.ndarray, budget: int, start: int):
    """(t-1)-subsets of columns that leave room for one more, in blocks of cells.

    Blocks start at ``start`` cells and grow fourfold up to ``budget``, so a yes/no check of
    a non-array usually stops after a small first block. For t = 2 a block is a run of
    consecutive columns, whose indicators are a slice of the one-hot matrix.
    """
    limit = start
    if t == 2:
        ends = np.cumsum(levels[:k - 1])
        first = 0
        while first < k - 1:
            base = int(ends[first - 1]) if first else 0
            stop = max(first + 1, int(np.searchsorted(ends, base + limit, side="right")))
            yield np.arange(first, stop)[:, None]
            first, limit = stop, min(budget, limit * 4)
        return
    lv = levels.tolist()
    block: list[tuple[int, ...]] = []
    cells = 0
    for sub in combinations(range(k - 1), t - 1):
        size = prod(lv[c] for c in sub)
        if block and cells + size > limit:
            yield np.asarray(block, dtype=np.int64)
            block, cells, limit = [], 0, min(budget, limit * 4)
        block.append(sub)
        cells += size
    if block:
        yield np.asarray(block, dtype=np.int64)


def _block_cells(runs: int, width: int) -> int:
    """Prefix cells per block: the block's indicator (runs x cells) and its counts (cells x
    width) each hold at most about _CHUNK_CELLS entries, however large the array."""
    return max(256, _CHUNK_CELLS // max(runs, width, 1))


def _failures(arr: np.ndarray, levels: np.ndarray, t: int, first_only: bool,
              onehot: tuple[np.ndarray, np.ndarray] | None = None,
              listed: int = LISTED_FAILURES, max_work: int | None = None
              ) -> tuple[list[TupleFailure], int, TupleFailure | None, int]:
    """The first ``listed`` unbalanced t-tuples of columns, how many there are, the worst, and
    how many tuples there are in all; counted with one matrix product per block.

    For a block of (t-1)-column prefixes S, the indicator matrix Y of their level combinations
    times the level indicator X gives, in one BLAS call, the count of every (S-combination,
    level of column j) cell; tuple S + (j,) is balanced when its block of counts is constant
    at N / (prod L_S * L_j). Blocks are streamed, so memory stays bounded by the block size
    whatever the number of tuples (or of failing ones). ``max_work`` caps the multiply-adds
    spent, block by block: a yes/no check too costly to finish may still find its no early.
    """
    n, k = arr.shape
    x, col_off = onehot if onehot is not None else _onehot(arr, levels)
    col_factor, col_levels = np.repeat(np.arange(k), levels), np.repeat(levels, levels)
    found: list[TupleFailure] = []
    failed, worst, spent = 0, None, 0
    budget = _block_cells(n, x.shape[1])
    start = 1 if first_only and t > 2 else budget  # t = 2: the Gram matrix is cheap anyway
    for prefixes in _prefix_chunks(k, t, levels, budget, start):
        sizes = np.prod(levels[prefixes], axis=1)
        row_off = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        width = int(sizes.sum())
        if t == 2:  # the prefixes are consecutive columns: their indicators are x's columns
            first = int(col_off[prefixes[0, 0]])
            y = x[:, first:first + width]
        else:
            codes = arr[:, prefixes[:, 0]]
            for c in range(1, prefixes.shape[1]):
                codes = codes * levels[prefixes[:, c]] + arr[:, prefixes[:, c]]
            y = _indicator(codes + row_off, width)
        spent += n * y.shape[1] * x.shape[1]
        if max_work is not None and spent > max_work:
            raise _too_costly(levels.tolist(), t, n)
        with _blas_threads(n * y.shape[1] * x.shape[1]):
            counts = y.T @ x
        # fast path: compare every cell with its expected count at once
        row_last = np.repeat(prefixes[:, -1], sizes)
        row_cells = np.repeat(sizes, sizes)[:, None] * col_levels[None, :]
        wrong = (col_factor[None, :] > row_last[:, None]) & (counts * row_cells != n)
        if not wrong.any():
            continue
        if first_only:  # one failing tuple suffices: read its block directly
            r, c = np.unravel_index(int(np.argmax(wrong)), wrong.shape)
            p = int(np.searchsorted(row_off, r, side="right") - 1)
            j = int(col_factor[c])
            block = counts[row_off[p]:row_off[p] + sizes[p], col_off[j]:col_off[j] + levels[j]]
            found.append(TupleFailure((*map(int, prefixes[p]), j),
                                      n / int(sizes[p] * levels[j]), int(block.min()),
                                      int(block.max())))
            return found, 1, found[0], comb(k, t)
        mins = np.minimum.reduceat(np.minimum.reduceat(counts, row_off, axis=0), col_off, axis=1)
        maxs = np.maximum.reduceat(np.maximum.reduceat(counts, row_off, axis=0), col_off, axis=1)
        cells = sizes[:, None] * levels[None, :]
        valid = np.arange(k)[None, :] > prefixes[:, -1:]
        bad = valid & ((mins != maxs) | (mins * cells != n))
        failed += int(np.count_nonzero(bad))
        expected = n / cells
        for p, j in np.argwhere(bad)[:max(0, listed - len(found))]:
            found.append(TupleFailure((*map(int, prefixes[p]), int(j)), float(expected[p, j]),
                                      int(mins[p, j]), int(maxs[p, j])))
        deviation = np.where(bad, np.maximum(expected - mins, maxs - expected), -1.0)
        p, j = np.unravel_index(int(np.argmax(deviation)), deviation.shape)
        if worst is None or deviation[p, j] > worst.deviation:
            worst = TupleFailure((*map(int, prefixes[p]), int(j)), float(expected[p, j]),
                                 int(mins[p, j]), int(maxs[p, j]))
    return found, failed, worst, comb(k, t)


def _level_failures(arr: np.ndarray, levels: np.ndarray) -> list[TupleFailure]:
    found = []
    for j, s in enumerate(levels.tolist()):
        counts = np.bincount(arr[:, j], minlength=s)
        if counts.min() != counts.max():
            found.append(TupleFailure((j,), arr.shape[0] / s, int(counts.min()),
                                      int(counts.max())))
    return found


def _levels_balanced(arr: np.ndarray, levels: np.ndarray) -> bool:
    """Every level of every column equally often, via one bincount over offset codes."""
    offsets = np.concatenate(([0], np.cumsum(levels)[:-1]))
    counts = np.bincount((arr + offsets).ravel(), minlength=int(levels.sum()))
    return bool((counts * np.repeat(levels, levels) == arr.shape[0]).all())


def check_strength(array: np.ndarray | Sequence, strength: int = 2,
                   levels: Sequence[int] | None = None, first_only: bool = False
                   ) -> StrengthReport:
    """Check every ``strength``-tuple of columns: count the failing ones and report the first
    LISTED_FAILURES, and the worst, with their counts.

    ``first_only`` stops at the first failing tuple (for yes/no questions).
    """
    arr, lv = as_array(array, levels)
    n, k = arr.shape
    if strength < 1:
        raise HscaleError(f"strength must be at least 1, got {strength}")
    if strength > k:
        raise HscaleError(f"strength {strength} exceeds the number of factors {k}",
                          f"use a strength between 1 and {k}")
    levels_arr = np.asarray(lv, dtype=np.int64)
    if max(lv) > n:  # some level cannot even appear: no indicator matrix needed to say so
        j = int(np.argmax(levels_arr))
        return StrengthReport(n, lv, strength, comb(k, strength), reason=(
            f"factor {j} has {lv[j]} levels but there are only {n} runs"))
    if strength == 1:
        unbalanced = _level_failures(arr, levels_arr)
        worst = max(unbalanced, key=lambda f: f.deviation, default=None)
        return StrengthReport(n, lv, 1, k, unbalanced[:LISTED_FAILURES],
                              failed=len(unbalanced), worst=worst)
    short = _too_few_runs(lv, strength, n)
    if short:
        return StrengthReport(n, lv, strength, comb(k, strength), reason=short)
    _require_affordable(lv, strength, n)
    listed, failed, worst, n_tuples = _failures(arr, levels_arr, strength, first_only)
    return StrengthReport(n, lv, strength, n_tuples, listed, failed=failed, worst=worst,
                          complete=not first_only)


def is_orthogonal(array: np.ndarray | Sequence, strength: int = 2,
                  levels: Sequence[int] | None = None) -> bool:
    """True when ``array`` is an orthogonal array of the given strength."""
    return check_strength(array, strength, levels, first_only=True).ok


def strength(array: np.ndarray | Sequence, levels: Sequence[int] | None = None) -> int:
    """The largest t such that the array has strength t (0 if not even balanced).

    Each step spends at most MAX_CHECK_WORK multiply-adds: the check of t + 1 usually fails
    in its first small block, so a wide array of strength 2 gets its answer even when a full
    strength-3 check would cost too much; one that does not fail that early is refused.
    """
    arr, lv = as_array(array, levels)
    levels_arr = np.asarray(lv, dtype=np.int64)
    if max(lv) > arr.shape[0] or not _levels_balanced(arr, levels_arr):
        return 0
    onehot = _onehot(arr, levels_arr)
    t = 1
    while t < arr.shape[1] and not _too_few_runs(lv, t + 1, arr.shape[0]):
        if _failures(arr, levels_arr, t + 1, True, onehot, max_work=MAX_CHECK_WORK)[0]:
            break
        t += 1
    return t


def balance_table(array: np.ndarray | Sequence, levels: Sequence[int] | None = None
                  ) -> np.ndarray:
    """Counts of every level pair for every factor pair: shape (k, k, Lmax, Lmax).

    ``table[i, j, a, b]`` is the number of runs with factor i at level a and factor j at
    level b; the diagonal blocks ``table[i, i]`` hold the one-factor counts on their diagonal.
    """
    arr, lv = as_array(array, levels)
    n, k = arr.shape
    lmax = max(lv)
    if k * k * lmax * lmax > _MAX_TABLE_CELLS or n * k * k * lmax * lmax > MAX_CHECK_WORK:
        raise HscaleError(f"a balance table of {k} factors with up to {lmax} levels would "
                          f"hold {shown(k * k * lmax * lmax)} counts, more than hscale builds",
                          "tabulate fewer factors (a subset of the columns)")
    onehot = np.zeros((n, k, lmax), dtype=np.int64)
    onehot[np.arange(n)[:, None], np.arange(k)[None, :], arr] = 1
    return np.einsum("nia,njb->ijab", onehot, onehot)
