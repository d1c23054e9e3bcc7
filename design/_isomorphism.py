"""Isomorphism of orthogonal arrays, classification, and complete enumeration of small OAs.

Two arrays are isomorphic when one becomes the other by permuting rows, permuting columns that
have the same number of levels, and permuting the levels within each column. Isomorphic arrays
are the same design for every purpose here (strength, GWLP, distances), so listing the
non-isomorphic ones lists every genuinely different design.

Cheap invariants reject most pairs. Exact tests use a canonical form (the isomorphic copy with
the smallest row-sorted reading), so classifying thousands of arrays is one dictionary lookup
each. A coloured graph whose graph isomorphisms are exactly the array isomorphisms is offered
too (networkx VF2++), but it is slow on OAs: they look the same locally everywhere.
Enumerating every class lives in :mod:`hscale.design._enumeration`.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import permutations
from typing import TYPE_CHECKING

import numpy as np

from hscale.design._criteria import distance_distribution, gwlp
from hscale.design._hamming import distance_matrix
from hscale.design._search_budget import OutOfSteps, StepBudget
from hscale.design._verify import as_array
from hscale.errors import HscaleError

if TYPE_CHECKING:
    import networkx as nx

# Work limit of one canonical form, in steps (about 10 us each; a count, so the same request
# fails or succeeds on any machine). A canonical-form pass costs a step per four runs (its
# row-by-row minimum) and one per this many cells it writes.
CANONICAL_STEPS = 1_000_000
_CELLS_PER_STEP = 1000


def to_graph(array: np.ndarray | Sequence, levels: Sequence[int] | None = None) -> nx.Graph:
    """A node-coloured graph, isomorphic to another such graph iff the arrays are isomorphic.

    Row r joins level node (c, x_rc); level node (c, v) joins column node c. Column colours
    carry the level count, so columns only map to columns with as many levels. (networkx is
    imported here, not with the module: planning a run never draws a graph.)
    """
    import networkx as nx

    arr, lv = as_array(array, levels)
    graph = nx.Graph()
    graph.add_nodes_from((("r", r) for r in range(arr.shape[0])), color="row")
    for c, size in enumerate(lv):
        graph.add_node(("c", c), color=f"col{size}")
        for v in range(size):
            graph.add_node(("l", c, v), color="level")
            graph.add_edge(("c", c), ("l", c, v))
    graph.add_edges_from((("r", r), ("l", c, int(v)))
                         for (r, c), v in np.ndenumerate(arr))
    return graph


def invariant(array: np.ndarray | Sequence, levels: Sequence[int] | None = None) -> tuple:
    """A hashable isomorphism invariant: equal for isomorphic arrays, usually not otherwise."""
    arr, lv = as_array(array, levels)
    _, mult = np.unique(arr, axis=0, return_counts=True)
    dist = distance_matrix(arr)
    k = arr.shape[1]
    profiles = np.stack([np.bincount(row, minlength=k + 1) for row in dist])
    profiles = profiles[np.lexsort(profiles.T[::-1])]
    return (arr.shape, tuple(sorted(lv)), tuple(np.round(gwlp(arr, lv), 9)),
            tuple(distance_distribution(arr)), tuple(sorted(mult.tolist())),
            profiles.tobytes())


def _perms(size: int) -> np.ndarray:
    """All permutations of range(size) as rows: candidate level relabellings of one column."""
    return np.array(list(permutations(range(size))), dtype=np.int64)


def _lexmin_rows(block: np.ndarray) -> np.ndarray:
    """Indices of the rows of a 2-D array that are lexicographically smallest."""
    rows = np.arange(block.shape[0])
    for i in range(block.shape[1]):
        col = block[rows, i]
        rows = rows[col == col.min()]
        if rows.size == 1:
            break
    return rows


_CHUNK_CELLS = 1 << 22  # states x perms x runs a step of _smallest holds (32 MiB of int64)


def _smallest(codes: np.ndarray, size: int, relabelled: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Over every (state, level permutation) of one column, the smallest sorted prefix code:
    (that code, the flat indices state * perms + perm reaching it, their unsorted codes).
    Worked through in chunks of states, so memory stays bounded however many states the
    array's symmetries leave."""
    n, count = codes.shape[1], len(relabelled)
    step = max(1, _CHUNK_CELLS // (count * n))
    best: np.ndarray | None = None
    picked: list[np.ndarray] = []
    raws: list[np.ndarray] = []
    for start in range(0, len(codes), step):
        new = (codes[start:start + step, None, :] * size + relabelled[None, :, :]).reshape(-1, n)
        ordered = np.sort(new, axis=1)
        rows = _lexmin_rows(ordered)
        cand = ordered[rows[0]]
        if best is not None:
            diff = np.flatnonzero(cand != best)
            if diff.size and cand[diff[0]] > best[diff[0]]:
                continue
            if diff.size:
                picked, raws = [], []
        best = cand
        picked.append(rows + start * count)
        raws.append(new[rows])
    assert best is not None
    return best, np.concatenate(picked), np.concatenate(raws)


def canonical_form(array: np.ndarray | Sequence, levels: Sequence[int] | None = None,
                   steps: int = CANONICAL_STEPS) -> np.ndarray:
    """The isomorphic copy of ``array`` whose row-sorted, column-major reading is smallest.

    Columns are ordered by level count. Column j of the row-sorted array depends only on the
    sorted codes of the first j + 1 columns, so a breadth-first search that keeps, column by
    column, every (column choice, level permutation) reaching the smallest prefix is exact
    and needs no pairwise tests: arrays are isomorphic iff their canonical forms are equal.
    Cost grows with the automorphism group, which is small for most OAs; past ``steps`` the
    search stops with an HscaleError rather than run for minutes.
    """
    arr, lv = as_array(array, levels)
    try:
        return _canonical(arr, lv, StepBudget(steps))
    except OutOfSteps:
        raise HscaleError(f"the canonical form of this {arr.shape[0]}-run array takes more "
                          f"than {steps} steps: it has very many symmetries",
                          "compare invariant() values, or pass a larger steps") from None


def _canonical(arr: np.ndarray, lv: tuple[int, ...], budget: StepBudget) -> np.ndarray:
    """:func:`canonical_form` of a validated array, spending from ``budget``."""
    n, k = arr.shape
    lv_arr = np.asarray(lv)
    codes = np.zeros((1, n), dtype=np.int64)  # per state: prefix code of each row of arr
    used = np.zeros((1, k), dtype=bool)
    chosen = np.zeros((1, 0), dtype=np.int64)  # column picked at each position
    relabel: list[np.ndarray] = []  # per position: level map of each state, (states, L)
    for size in sorted(lv):
        perms = _perms(size)
        best: np.ndarray | None = None
        keep: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = []
        for c in np.flatnonzero(lv_arr == size):
            states = np.flatnonzero(~used[:, c])
            if states.size == 0:
                continue
            budget.spend(2 + n // 4 + len(states) * len(perms) * n // _CELLS_PER_STEP)
            cand, picked, new = _smallest(codes[states], size, perms[:, arr[:, c]])
            if best is not None:
                diff = np.flatnonzero(cand != best)
                if diff.size and cand[diff[0]] > best[diff[0]]:
                    continue
                if diff.size:
                    keep = []
            best = cand
            keep.append((states[picked // len(perms)], int(c), perms[picked % len(perms)], new))
        parent = np.concatenate([s for s, _, _, _ in keep])
        col = np.concatenate([np.full(len(s), c) for s, c, _, _ in keep])
        relabel = [m[parent] for m in relabel] + [np.concatenate([p for _, _, p, _ in keep])]
        raw = np.concatenate([x for _, _, _, x in keep])
        _, inverse = np.unique(raw, return_inverse=True)  # order-preserving, avoids overflow
        codes = inverse.reshape(raw.shape).astype(np.int64)
        used = used[parent]
        used[np.arange(len(col)), col] = True
        chosen = np.column_stack([chosen[parent], col])
    cols = chosen[0]
    out = np.column_stack([relabel[j][0][arr[:, c]] for j, c in enumerate(cols)])
    return _sort_rows(out)


def canonical_key(array: np.ndarray | Sequence, levels: Sequence[int] | None = None,
                  budget: StepBudget | None = None) -> tuple:
    """A hashable certificate: equal exactly for isomorphic arrays."""
    arr, lv = as_array(array, levels)
    canon = canonical_form(arr, lv) if budget is None else _canonical(arr, lv, budget)
    return (canon.shape, tuple(sorted(lv)), canon.tobytes())


def are_isomorphic(a: np.ndarray | Sequence, b: np.ndarray | Sequence,
                   levels_a: Sequence[int] | None = None,
                   levels_b: Sequence[int] | None = None, method: str = "canonical") -> bool:
    """True when ``b`` is ``a`` up to row, column (equal level counts) and level permutations.

    Cheap invariants reject most pairs. ``method="canonical"`` then compares canonical forms;
    ``method="graph"`` runs networkx VF2++ on :func:`to_graph` instead, which is exact too but
    can take seconds even on 18-run OAs, whose graphs look alike locally everywhere.
    """
    if method not in ("canonical", "graph"):
        raise HscaleError(f"unknown isomorphism method {method!r}", "use 'canonical' or 'graph'")
    arr_a, lv_a = as_array(a, levels_a)
    arr_b, lv_b = as_array(b, levels_b)
    if invariant(arr_a, lv_a) != invariant(arr_b, lv_b):
        return False
    if method == "graph":
        import networkx as nx

        return nx.vf2pp_is_isomorphic(to_graph(arr_a, lv_a), to_graph(arr_b, lv_b),
                                      node_label="color")
    return canonical_key(arr_a, lv_a) == canonical_key(arr_b, lv_b)


class _Classes:
    """Representatives keyed by canonical form; adding an array keeps it only if it is new."""

    def __init__(self, budget: StepBudget | None = None) -> None:
        self.seen: set[tuple] = set()
        self.reps: list[np.ndarray] = []
        self.budget = budget

    def add(self, arr: np.ndarray, lv: Sequence[int]) -> bool:
        key = canonical_key(arr, lv, self.budget)
        if key in self.seen:
            return False
        self.seen.add(key)
        self.reps.append(arr)
        return True


def classify(arrays: Sequence[np.ndarray], levels: Sequence[int] | None = None
             ) -> list[np.ndarray]:
    """One representative per isomorphism class, in order of first appearance."""
    classes = _Classes()
    for a in arrays:
        arr, lv = as_array(a, levels)
        classes.add(arr, lv)
    return classes.reps


def _sort_rows(arr: np.ndarray) -> np.ndarray:
    """Rows in lexicographic order, so rows equal in all columns are adjacent."""
    return arr[np.lexsort(arr.T[::-1])]
