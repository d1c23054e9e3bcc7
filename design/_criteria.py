"""Design-quality criteria: generalized word-length pattern, Hamming distances, covering radius.

Two orthogonal arrays with equal strength can still differ a lot: the generalized word-length
pattern (GWLP, Xu & Wu 2001) measures aliasing of effects, the distance distribution says how
close runs come to each other, and the covering radius how far any configuration of the space
lies from its nearest run. ``CRITERIA`` turns a :func:`summary` into sort keys so designs can be
ranked by any of these (smaller key = better).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import inf

import numpy as np

from hscale.design._hamming import distance_matrix
from hscale.design._space import FactorSpace, parse_levels
from hscale.design._verify import as_array
from hscale.design._verify import strength as array_strength
from hscale.errors import HscaleError

# Spaces larger than this are refused by covering_radius: it looks at every configuration.
MAX_COVERING_CONFIGS = 5_000_000
# Row pairs handled at once when counting coincidence patterns.
_PAIR_CHUNK = 2_000_000


def _polymul(a: list[int], b: list[int]) -> list[int]:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        if x:
            for j, y in enumerate(b):
                out[i + j] += x * y
    return out


def _pair_poly(n_cols: int, n_same: int, size: int) -> list[int]:
    """(1 + (L-1) z)^m (1 - z)^(n-m): one row pair's factor for a group of L-level columns."""
    poly = [1]
    for _ in range(n_same):
        poly = _polymul(poly, [1, size - 1])
    for _ in range(n_cols - n_same):
        poly = _polymul(poly, [1, -1])
    return poly


def _level_groups(levels: Sequence[int]) -> list[tuple[int, np.ndarray]]:
    """Columns grouped by level count: the pair polynomial only depends on per-group matches."""
    lv = np.asarray(levels)
    return [(int(s), np.flatnonzero(lv == s)) for s in sorted(set(levels))]


def gwlp(array: np.ndarray | Sequence, levels: Sequence[int] | None = None) -> np.ndarray:
    """The generalized word-length pattern (A_0, ..., A_k); A_0 = 1, strength t => A_1..A_t = 0.

    Uses sum_j A_j z^j = N^-2 sum_{r,s} prod_i (1 + z (L_i [x_ri = x_si] - 1)): every ordered row
    pair contributes a polynomial that depends only on how many columns of each level count
    coincide, so pairs are counted by coincidence pattern and each pattern is expanded once,
    in exact integers.
    """
    arr, lv = as_array(array, levels)
    n, k = arr.shape
    groups = _level_groups(lv)
    radix = [len(cols) + 1 for _, cols in groups]
    counts = np.zeros(int(np.prod(radix)), dtype=np.int64)
    rows_per_chunk = max(1, _PAIR_CHUNK // n)
    for start in range(0, n, rows_per_chunk):
        block = arr[start:start + rows_per_chunk]
        code = np.zeros((block.shape[0], n), dtype=np.int64)
        for (_, cols), base in zip(groups, radix, strict=True):
            same = (block[:, None, cols] == arr[None, :, cols]).sum(axis=2)
            code = code * base + same
        counts += np.bincount(code.ravel(), minlength=counts.size)
    total = [0] * (k + 1)
    for code, count in enumerate(counts.tolist()):
        if not count:
            continue
        poly = [count]
        for (size, cols), base in zip(reversed(groups), reversed(radix), strict=True):
            code, same = divmod(code, base)
            poly = _polymul(poly, _pair_poly(len(cols), same, size))
        for j, c in enumerate(poly):
            total[j] += c
    out = np.array([c / (n * n) for c in total], dtype=float)
    return np.round(out, 12) + 0.0


def distance_distribution(array: np.ndarray | Sequence) -> np.ndarray:
    """Counts of Hamming distances 0..k over unordered pairs of distinct rows."""
    arr = np.atleast_2d(np.asarray(array))
    k = arr.shape[1]
    dist = distance_matrix(arr)
    upper = dist[np.triu_indices(arr.shape[0], 1)]
    return np.bincount(upper, minlength=k + 1).astype(np.int64)


def distance_range(array: np.ndarray | Sequence) -> tuple[int, int]:
    """Smallest and largest Hamming distance between two rows."""
    dd = distance_distribution(array)
    present = np.flatnonzero(dd)
    if present.size == 0:
        raise HscaleError("distances need at least two rows", "pass an array with 2 or more runs")
    return int(present[0]), int(present[-1])


def min_distance(array: np.ndarray | Sequence) -> int:
    """Minimum Hamming distance between two rows (0 when a run is repeated)."""
    return distance_range(array)[0]


def _levels_of(space_levels: FactorSpace | Sequence[int] | str) -> tuple[int, ...]:
    if isinstance(space_levels, FactorSpace):
        return space_levels.levels
    return parse_levels(space_levels)


def covering_radius(array: np.ndarray | Sequence,
                    space_levels: FactorSpace | Sequence[int] | str) -> int:
    """Largest distance from any configuration of the space to its nearest row.

    Enumerates the space in chunks; a row match count is a one-hot matrix product, so each
    chunk costs one BLAS call.
    """
    lv = _levels_of(space_levels)
    arr, lv = as_array(array, lv)
    size = int(np.prod([float(s) for s in lv]))
    if size > MAX_COVERING_CONFIGS:
        raise HscaleError(
            f"covering radius needs every configuration; the space has {size} (limit "
            f"{MAX_COVERING_CONFIGS})", "compute it for a projection onto fewer factors")
    k = arr.shape[1]
    offsets = np.concatenate(([0], np.cumsum(lv)[:-1])).astype(np.int64)
    onehot = np.zeros((sum(lv), arr.shape[0]), dtype=np.float32)
    onehot[(arr + offsets).T.ravel(), np.tile(np.arange(arr.shape[0]), k)] = 1.0
    space = FactorSpace.from_levels(lv)
    radius = 0
    for configs in space.iter_configs(chunk=max(1024, 4_000_000 // max(arr.shape[0], 1))):
        cfg_hot = np.zeros((configs.shape[0], sum(lv)), dtype=np.float32)
        cfg_hot[np.arange(configs.shape[0])[:, None], configs + offsets] = 1.0
        best = (cfg_hot @ onehot).max(axis=1)
        radius = max(radius, k - int(round(float(best.min()))))
        if radius == k:
            break
    return radius


def summary(array: np.ndarray | Sequence, levels: FactorSpace | Sequence[int] | str) -> dict:
    """Every criterion of one array, as plain Python values (ready for JSON or a table).

    ``covering_radius`` is None when the space is too large to enumerate; a single row has
    ``min_distance`` k and ``max_distance`` 0 (no pair of runs to compare).
    """
    lv = _levels_of(levels)
    arr, lv = as_array(array, lv)
    dd = distance_distribution(arr)
    lo, hi = distance_range(arr) if arr.shape[0] > 1 else (arr.shape[1], 0)
    try:
        radius: int | None = covering_radius(arr, lv)
    except HscaleError:
        radius = None
    return {
        "runs": int(arr.shape[0]),
        "levels": list(lv),
        "strength": array_strength(arr, lv),
        "gwlp": [float(x) for x in gwlp(arr, lv)],
        "distance_distribution": [int(x) for x in dd],
        "min_distance": lo,
        "max_distance": hi,
        "covering_radius": radius,
    }


CRITERIA: dict[str, Callable[[dict], tuple]] = {
    "gwlp": lambda s: tuple(s["gwlp"][1:]),  # lexicographically smaller aberration
    "min_distance": lambda s: (-s["min_distance"],),  # runs further apart
    "distance_distribution": lambda s: tuple(s["distance_distribution"]),  # fewer close pairs
    "covering_radius": lambda s: (inf if s["covering_radius"] is None else s["covering_radius"],),
    "strength": lambda s: (-s["strength"],),
}
"""Sort keys over :func:`summary` dicts: a smaller key is a better design."""

_TIE_BREAK = ("gwlp", "min_distance", "covering_radius")


def rank_key(summary_: dict, criterion: str | Sequence[str] = "gwlp") -> tuple:
    """Sort key for ranking by ``criterion`` (one name or several), then GWLP, distance, radius."""
    names = [criterion] if isinstance(criterion, str) else list(criterion)
    unknown = [c for c in names if c not in CRITERIA]
    if unknown:
        raise HscaleError(f"unknown design criterion {unknown[0]!r}",
                          f"use one of {', '.join(CRITERIA)}")
    key: tuple = ()
    for name in [*names, *(c for c in _TIE_BREAK if c not in names)]:
        key += CRITERIA[name](summary_)
    return key

