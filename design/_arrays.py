"""Operations on orthogonal arrays: full factorials, replication, expansion, collapsing and
foldovers. Each keeps (or raises) the strength of what it is given, which is how a built array
is fitted to a request.

Also the helpers every construction shares. Every function returns an int64 array with one
row per run and levels 0..L-1 per column.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import prod

import numpy as np

from hscale.design._space import format_levels
from hscale.design._verify import as_array
from hscale.errors import HscaleError

# Full factorials and algebraic arrays beyond this many cells are not what these
# constructions are for.
_MAX_CELLS = 10_000_000


def _frozen(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array, dtype=np.int64)
    array.setflags(write=False)
    return array


def _positive(name: str, value: int, least: int = 1) -> int:
    if not isinstance(value, int | np.integer) or value < least:
        raise HscaleError(f"{name} must be an integer >= {least}, got {value!r}")
    return int(value)


def full_factorial(levels: Sequence[int]) -> np.ndarray:
    """All level combinations, first column slowest: the OA of strength k with lambda 1."""
    lv = tuple(_positive("a level count", s, 2) for s in levels)
    if not lv:
        raise HscaleError("a full factorial needs at least one factor")
    if prod(lv) * len(lv) > _MAX_CELLS:
        raise HscaleError(f"the full factorial of {format_levels(lv)} has {prod(lv)} runs",
                          "use a fractional design (an orthogonal array) instead")
    return np.indices(lv).reshape(len(lv), -1).T.astype(np.int64)


def replicate(array: np.ndarray, lam: int) -> np.ndarray:
    """The array stacked ``lam`` times: every count multiplies by lam, so strength is kept."""
    arr, _ = as_array(array)
    return np.tile(arr, (_positive("lam", lam), 1))


def _column_levels(arr: np.ndarray, column: int) -> int:
    if not -arr.shape[1] <= column < arr.shape[1]:
        raise HscaleError(f"column {column} does not exist in an array of {arr.shape[1]} columns")
    return int(arr[:, column].max()) + 1


def expand(array: np.ndarray, column: int, sub_array: np.ndarray) -> np.ndarray:
    """Expansive replacement: level v of an L-level column becomes row v of an L-run OA.

    With a strength-2 ``sub_array`` the result keeps strength 2 (e.g. a 6-level column and
    ``full_factorial((2, 3))`` give a 2-level and a 3-level column).
    """
    arr, _ = as_array(array)
    sub, _ = as_array(sub_array)
    n_levels = _column_levels(arr, column)
    if sub.shape[0] != n_levels:
        raise HscaleError(f"column {column} has {n_levels} levels but the replacement array "
                          f"has {sub.shape[0]} runs", f"give an OA with {n_levels} runs")
    column %= arr.shape[1]
    return np.hstack([arr[:, :column], sub[arr[:, column]], arr[:, column + 1:]])


def collapse(array: np.ndarray, column: int, d: int) -> np.ndarray:
    """Merge the L levels of a column into d balanced groups (level a -> a mod d, d | L)."""
    arr, _ = as_array(array)
    n_levels = _column_levels(arr, column)
    d = _positive("d", d, 2)
    if n_levels % d:
        raise HscaleError(f"cannot collapse {n_levels} levels into {d} equal groups",
                          f"use a divisor of {n_levels}")
    out = arr.copy()
    out[:, column] %= d
    return out


def foldover(array: np.ndarray, extra_column: bool = False) -> np.ndarray:
    """[A; 1 - A] for a two-level A: strength 2 becomes strength 3 (odd moments cancel).

    ``extra_column`` appends a column that is 0 on A and 1 on its mirror, still strength 3.
    """
    arr, _ = as_array(array)
    if arr.max() > 1:
        raise HscaleError("foldover needs a two-level array (levels 0 and 1)")
    out = np.vstack([arr, 1 - arr])
    if extra_column:
        out = np.hstack([out, np.repeat([0, 1], len(arr))[:, None]])
    return out


def foldover_join(array: np.ndarray, two_level: np.ndarray) -> np.ndarray:
    """[[A, H, 0], [A, 1 - H, 1]]: OA(2N; levels(A) 2^(m+1)) from OA(N; levels(A)) and a
    two-level OA(N; 2^m). Each row of A meets both values of every H column, so A's columns
    are orthogonal to the folded ones, and the last column separates the halves."""
    a, _ = as_array(array)
    h, _ = as_array(two_level)
    if len(a) != len(h) or h.max() > 1:
        raise HscaleError("foldover_join needs a two-level array with as many runs as the other",
                          f"got {len(a)} and {len(h)} runs")
    flag = np.repeat([0, 1], len(a))[:, None]
    return np.hstack([np.vstack([a, a]), np.vstack([h, 1 - h]), flag])
