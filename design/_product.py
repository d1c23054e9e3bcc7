"""Mixed levels by products: an s-level factor with s = p^a q^b ... from one array per prime.

For each prime p, the p-parts of the requested level counts form a prime-power problem that
the algebraic constructions solve; the arrays for different primes are crossed (every row of
one with every row of the other) and each factor's parts are merged into one level. A cross
of strength-t arrays has strength t, and merging parts that come from different arrays keeps
it, so e.g. OA(72; 2^1 6^4) = OA(8; 2^5) x OA(9; 3^4) (MacNeish-style).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

import numpy as np

from hscale.design._design import Design
from hscale.design._numbers import prime_parts
from hscale.errors import HscaleError


def cross(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Every combination of rows, one from each array (first array slowest), columns joined."""
    sizes = [len(a) for a in arrays]
    grids = np.indices(sizes).reshape(len(arrays), -1)
    return np.hstack([a[g] for a, g in zip(arrays, grids, strict=True)])


def product_candidate(levels: Sequence[int], strength: int, runs: int,
                      build: Callable[[list[int], int], Design]
                      ) -> tuple[str, np.ndarray] | None:
    """OA(runs; levels) as a cross of one array per prime, or None when that does not fit.

    ``build`` makes each prime's array (``hscale.design`` passes ``orthogonal_array``): taking it
    as an argument keeps this module from importing the one that calls it.
    """
    parts = prime_parts(levels)
    if len(parts) < 2 or all(sum(v > 1 for v in pl) <= 1 for pl in parts.values()):
        return None  # one prime only: the algebraic constructions handle it directly
    pieces, names = [], []
    for p, part_levels in parts.items():
        cols = [j for j, v in enumerate(part_levels) if v > 1]
        sub_levels = [part_levels[j] for j in cols]
        if len(cols) <= strength:  # a full factorial is as strong as it gets
            sub = np.indices(sub_levels).reshape(len(cols), -1).T
            name = f"full({','.join(map(str, sub_levels))})"
        else:
            try:
                design = build(sub_levels, strength)
            except HscaleError:
                return None
            sub, name = design.array, design.method
        pieces.append((p, cols, sub))
        names.append(name)
    base_runs = prod(len(sub) for _, _, sub in pieces)
    if runs % base_runs:
        return None
    crossed = cross([sub for _, _, sub in pieces])
    out = np.zeros((base_runs, len(levels)), dtype=np.int64)
    offset = 0
    for p, cols, sub in pieces:
        for i, j in enumerate(cols):
            out[:, j] = out[:, j] * parts[p][j] + crossed[:, offset + i]
        offset += sub.shape[1]
    lam = runs // base_runs
    if lam > 1:
        out = np.tile(out, (lam, 1))
    suffix = f" x{lam}" if lam > 1 else ""
    return f"cross({' x '.join(names)}){suffix}", out
