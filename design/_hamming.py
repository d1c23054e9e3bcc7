"""Hamming distances, radius-r neighbourhoods by index arithmetic, and the H(M, L) graph.

Neighbourhoods never enumerate the space: a neighbour of index n that changes factor i from
level a to level b is ``n + (b - a) * stride_i``, so radius-1 neighbours of any batch of
configurations are one broadcast addition.

Every distance takes optional per-factor ``weights`` (hscale.design._weights): the weighted distance
sums the weights of the differing factors. Without weights the plain integer distance is
computed exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations, product

import numpy as np

from hscale.design._bounds import elementary_symmetric
from hscale.design._numbers import shown
from hscale.design._space import MAX_CONFIG_CELLS, FactorSpace
from hscale.design._weights import TIE_DECIMALS, check_weights
from hscale.errors import HscaleError

# Most neighbours listed per configuration: each is one vectorised step of a Python loop.
MAX_NEIGHBOURS = 1_000_000


def distance_matrix(a: np.ndarray | Sequence, b: np.ndarray | Sequence | None = None,
                    weights: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Pairwise Hamming distances between the rows of ``a`` and of ``b`` (default: ``a``):
    integers, or with ``weights`` (one positive number per factor) floats, the sum of the
    weights of the factors in which two rows differ."""
    x = np.atleast_2d(np.asarray(a))
    y = x if b is None else np.atleast_2d(np.asarray(b))
    if x.shape[1] != y.shape[1]:
        raise HscaleError(f"configurations differ in length: {x.shape[1]} vs {y.shape[1]}")
    if weights is not None:
        w = check_weights(weights, x.shape[1])
        weighted = np.zeros((x.shape[0], y.shape[0]), dtype=np.float64)
        for j in range(x.shape[1]):
            weighted += w[j] * (x[:, j, None] != y[None, :, j])
        return weighted
    out = np.zeros((x.shape[0], y.shape[0]), dtype=np.int64)
    for j in range(x.shape[1]):  # loop over factors keeps memory at |a| x |b|
        out += x[:, j, None] != y[None, :, j]
    return out


def tie_key(dist: np.ndarray) -> np.ndarray:
    """Distances as a sort key: weighted ones rounded (TIE_DECIMALS), so sums equal in exact
    arithmetic tie; integer ones unchanged."""
    return np.round(dist, TIE_DECIMALS) if dist.dtype.kind == "f" else dist


def neighbours(space: FactorSpace, configs: np.ndarray | Sequence | int,
               radius: float = 1, exact: bool = True,
               weights: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Indices of configurations at Hamming distance ``radius`` (or <= radius if not exact).

    ``configs`` is one configuration, a batch (n, M), or an index. Returns an array of shape
    (n, count) for a batch, (count,) for one configuration, sorted within each row. With
    ``weights`` the distance is weighted and ``radius`` any number >= 0 (equal within
    TIE_DECIMALS counts as equal).
    """
    if isinstance(configs, int | np.integer):
        configs = space.from_index(int(configs))
    arr = space.validate(np.asarray(configs))
    single = arr.ndim == 1
    arr = np.atleast_2d(arr)
    if weights is None:
        if not float(radius).is_integer() or not 0 <= radius <= space.n_factors:
            raise HscaleError(f"radius must be 0..{space.n_factors}, got {radius}")
        radius = int(radius)
        per_radius = elementary_symmetric([s - 1 for s in space.levels], radius)
        count = per_radius[radius] if exact else sum(per_radius)
        radii = [radius] if exact else list(range(radius + 1))
        subsets = (s for r in radii for s in combinations(range(space.n_factors), r))
    else:
        subsets = _weighted_subsets(check_weights(weights, space.n_factors), radius, exact)
        count = sum(int(np.prod([space.levels[f] - 1 for f in s])) for s in subsets)
    if count > MAX_NEIGHBOURS or count * len(arr) > MAX_CONFIG_CELLS:
        raise HscaleError(f"{shown(count)} configurations lie {'at' if exact else 'within'} "
                          f"distance {radius:g} of each of {len(arr)}: too many to list",
                          "use a smaller radius or fewer configurations")
    base = arr @ space.strides
    levels = np.asarray(space.levels)
    strides = space.strides
    parts = [np.zeros((len(arr), 0), dtype=np.int64)]
    for subset in subsets:
        if not subset:
            parts.append(base[:, None])
            continue
        # For each factor in the subset, a nonzero shift d in 1..L-1 maps level a to
        # (a + d) mod L; the index changes by ((a + d) mod L - a) * stride.
        shift_sets = [range(1, levels[f]) for f in subset]
        for shift in product(*shift_sets):
            delta = np.zeros(arr.shape[0], dtype=np.int64)
            for f, d in zip(subset, shift, strict=True):
                delta += ((arr[:, f] + d) % levels[f] - arr[:, f]) * strides[f]
            parts.append((base + delta)[:, None])
    out = np.sort(np.concatenate(parts, axis=1), axis=1)
    return out[0] if single else out


def _weighted_subsets(weights: np.ndarray, radius: float, exact: bool
                      ) -> list[tuple[int, ...]]:
    """Sets of factors whose weights sum to ``radius`` (or to at most it): the factors a
    neighbour changes. Found depth-first, lightest factors first, pruned once over the
    radius; refused past MAX_NEIGHBOURS sets tried."""
    if not (np.isfinite(radius) and radius >= 0):
        raise HscaleError(f"a weighted radius must be a number >= 0, got {radius}")
    order = np.argsort(weights, kind="stable").tolist()
    w = weights.tolist()
    target = round(float(radius), TIE_DECIMALS)
    found: list[tuple[int, ...]] = []
    stack: list[tuple[int, tuple[int, ...], float]] = [(0, (), 0.0)]
    tried = 0
    while stack:
        start, chosen, total = stack.pop()
        tried += 1
        if tried > MAX_NEIGHBOURS:
            raise HscaleError(f"too many sets of factors lie within weighted distance "
                              f"{radius:g}: too many to list", "use a smaller radius")
        if not exact or round(total, TIE_DECIMALS) == target:
            found.append(tuple(sorted(chosen)))
        for i in range(start, len(order)):
            step = total + w[order[i]]
            if round(step, TIE_DECIMALS) > target:
                break  # the rest are heavier still
            stack.append((i + 1, (*chosen, order[i]), step))
    return found


def hamming_graph(space: FactorSpace, subset: np.ndarray | Sequence | None = None,
                  distance: int = 1, labels: bool = True):
    """H(M, L) as a networkx Graph: nodes are configurations, edges join those at ``distance``.

    With ``subset`` (configs), only those nodes are kept and edges join subset members at the
    given distance. Nodes are labels (``S0-T1-...``) or indices; each has ``config`` and
    ``index`` attributes.
    """
    import networkx as nx

    if subset is None:
        if space.size > 2_000_000:
            raise HscaleError(f"space {space.name} has {space.size} configurations, too many "
                              "for a graph", "pass subset= to draw a part of it")
        configs = space.all_configs()
    else:
        configs = space.validate(np.atleast_2d(np.asarray(subset)))
    index = configs @ space.strides
    names = space.labels(configs) if labels else index.tolist()
    graph = nx.Graph(space=space.name, distance=distance)
    for name, cfg, idx in zip(names, configs, index.tolist(), strict=True):
        graph.add_node(name, config=tuple(int(v) for v in cfg), index=idx)
    if subset is None and distance == 1:
        nb = neighbours(space, configs, 1)
        rows = np.repeat(np.arange(len(configs)), nb.shape[1])
        cols = nb.ravel()  # index order equals row order for the full space
        keep = rows < cols
        graph.add_edges_from(zip(np.asarray(names, dtype=object)[rows[keep]],
                                 np.asarray(names, dtype=object)[cols[keep]], strict=True))
    else:
        dist = distance_matrix(configs)
        i, j = np.nonzero(np.triu(dist == distance, 1))
        graph.add_edges_from((names[a], names[b]) for a, b in zip(i, j, strict=True))
    return graph


def k_nearest(anchor: np.ndarray | Sequence, candidates: np.ndarray | Sequence, k: int,
              rng: np.random.Generator, include_anchor: bool = False,
              weights: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Row indices of the ``k`` candidates nearest to ``anchor`` (in weighted distance when
    ``weights`` are given); ties broken by ``rng``.

    The anchor itself (distance 0) is skipped unless ``include_anchor``. Sorting is by
    (distance, random key), so equal-distance candidates come in a seeded random order.
    """
    cand = np.atleast_2d(np.asarray(candidates))
    dist = tie_key(distance_matrix(np.asarray(anchor)[None, :], cand, weights)[0])
    pool = np.arange(len(cand)) if include_anchor else np.flatnonzero(dist > 0)
    if k > len(pool):
        raise HscaleError(f"asked for {k} nearest configurations, only {len(pool)} available",
                          "lower K or use a larger training set")
    keys = rng.random(len(pool))
    order = np.lexsort((keys, dist[pool]))
    return pool[order[:k]]
