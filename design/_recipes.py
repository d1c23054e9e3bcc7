"""Harness-set recipes: the training sets of the ablation arms and the held-out eval set.

Every recipe takes a :class:`FactorSpace` and returns a :class:`Design` whose ``notes`` say what
was checked. Random choices take a seed (or a Generator) so a manifest reproduces its sets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hscale.design._criteria import distance_range, gwlp
from hscale.design._design import Design
from hscale.design._hamming import distance_matrix
from hscale.design._space import FactorSpace
from hscale.design._verify import check_strength
from hscale.design._weights import TIE_DECIMALS
from hscale.errors import HscaleError
from hscale.registry import Registry


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def single(space: FactorSpace) -> Design:
    """Only the base harness h0 = (0, ..., 0): the Single-Harness arm."""
    return Design(space.base[None, :], space, method="single(h0)")


def first_order(space: FactorSpace) -> Design:
    """max(L) configurations (i mod L_j for each factor j): every level of every factor appears.

    For the papers' 3^5 space: S0-T0-O0-C0-W0, S1-T1-O1-C1-W1, S2-T2-O2-C2-W2, so each
    realization is used exactly once and h0 is included.
    """
    rows = np.arange(max(space.levels))[:, None] % np.asarray(space.levels)[None, :]
    balanced = len(set(space.levels)) == 1  # with mixed levels some levels repeat
    return Design(rows, space, method="first_order", strength=int(balanced))


def full(space: FactorSpace) -> Design:
    """Every configuration of the space (the Full-243 arm; it contains any eval set)."""
    return Design(space.all_configs(), space, method="full", strength=space.n_factors)


def random_n(space: FactorSpace, n: int, seed: int | np.random.Generator | None = None,
             exclude: np.ndarray | Sequence | None = None, include_base: bool = False) -> Design:
    """``n`` distinct configurations drawn uniformly, optionally avoiding ``exclude``."""
    rng = _rng(seed)
    if space.size >= 2**63:
        raise HscaleError(f"space {space.name} is too large to draw from by index",
                          "use a space with fewer than 2**63 configurations")
    excluded = _indices(space, exclude)
    base_index = 0
    if include_base and base_index in excluded:
        raise HscaleError("include_base asks for h0, but h0 is in the excluded set")
    available = space.size - len(excluded)
    if n < 1 or n > available:
        raise HscaleError(f"cannot draw {n} configurations: {available} are available",
                          f"choose n between 1 and {available}")
    taken = {base_index} if include_base else set()
    if space.size <= 5_000_000:
        pool = np.setdiff1d(np.arange(space.size, dtype=np.int64),
                            np.fromiter(excluded | taken, dtype=np.int64), assume_unique=True)
        picks = list(taken) + rng.choice(pool, size=n - len(taken), replace=False).tolist()
    else:  # rejection sampling: never materialise a huge space
        picks = list(taken)
        seen = set(excluded) | taken
        while len(picks) < n:
            idx = int(rng.integers(space.size))
            if idx not in seen:
                seen.add(idx)
                picks.append(idx)
    configs = space.from_index(np.asarray(picks, dtype=np.int64))
    return Design(configs, space, method=f"random(n={n})", notes={"excluded": len(excluded)})


def _indices(space: FactorSpace, configs: np.ndarray | Sequence | Design | None) -> set[int]:
    if configs is None:
        return set()
    arr = configs.array if isinstance(configs, Design) else np.asarray(configs)
    if arr.size == 0:
        return set()
    return set(np.atleast_1d(space.to_index(np.atleast_2d(arr))).tolist())


def eval_set(space: FactorSpace, train: Design | np.ndarray | Sequence, runs: int | None = None,
             base: Design | np.ndarray | None = None, exclude_base: bool = True,
             seed: int | np.random.Generator | None = None,
             max_translations: int = 20_000,
             weights: Sequence[float] | np.ndarray | None = None) -> Design:
    """A held-out in-space eval set: a translate of an OA, disjoint from ``train`` and h0.

    ``train`` holds every configuration any arm trains on except Full (a Design, an array, or
    a list of them). A translate (A + c mod L) of a strength-2 array is again one, so every
    level of every factor appears equally often and pairwise distances are those of A.
    ``base`` is the array translated (default: hscale's constructed OA with ``runs`` runs,
    the smallest it can build if not given; for the papers' space its distances run 2..5).
    Among translations that
    avoid the training set, the one whose configurations lie farthest from training (largest
    mean distance to the nearest training configuration) is taken; ties go to the smallest
    translation index, or to ``seed``'s order if given. With ``weights`` (per factor) that
    distance is weighted, so the set lies far from training in the components that matter.
    """
    from hscale.design._oa import orthogonal_array

    parts = train if isinstance(train, list | tuple) else [train]
    train_arr = space.validate(np.vstack([np.atleast_2d(np.asarray(getattr(p, "array", p)))
                                          for p in parts]))
    train_idx = train_arr @ space.strides
    if base is not None:
        base_arr = space.validate(np.atleast_2d(np.asarray(getattr(base, "array", base))))
        if not check_strength(base_arr, 2, space.levels).ok:
            raise HscaleError("the base of an eval set must be a strength-2 orthogonal array",
                              "hscale design verify FILE shows which pairs are unbalanced")
        if len(np.unique(base_arr, axis=0)) != len(base_arr):
            raise HscaleError("the base of an eval set repeats a configuration",
                              "use an array without repeated runs (not a lambda-multiple)")
        how = "translate of the given array"
    else:
        built = orthogonal_array(space.levels, 2, runs=runs, space=space)
        base_arr, how = built.array, f"translate of {built.method}"
    n = len(base_arr)
    levels = np.asarray(space.levels)
    if space.size <= max_translations:
        shifts = space.all_configs()
    else:
        pick = _rng(0 if seed is None else seed)  # reproducible even without a seed
        shifts = space.from_index(pick.choice(space.size, max_translations, replace=False))
    order = (np.arange(len(shifts)) if seed is None
             else _rng(seed).permutation(len(shifts)))
    best, best_score = None, None
    for i in order:
        cand = (base_arr + shifts[i]) % levels
        idx = cand @ space.strides
        if np.isin(idx, train_idx).any() or len(np.unique(idx)) != len(idx):
            continue
        if exclude_base and (idx == 0).any():
            continue
        score = distance_matrix(cand, train_arr, weights).min(axis=1).mean()
        if weights is not None:  # sums equal in exact arithmetic tie (hscale.design._weights)
            score = round(float(score), TIE_DECIMALS)
        if best_score is None or score > best_score:
            best, best_score = cand, score
    if best is None:
        raise HscaleError(f"no translate of a {n}-run array avoids the {len(train_arr)} "
                          "training configurations", "use a smaller training set or another N")
    lo, hi = distance_range(best)
    counts = [np.bincount(best[:, j], minlength=s).tolist() for j, s in enumerate(space.levels)]
    notes = {
        "level_counts": counts,
        "balanced": all(len(set(c)) == 1 for c in counts),
        "pairwise_distance_range": (lo, hi),
        "mean_distance_to_train": float(best_score),
        "disjoint_from_train": True,
        "contains_base": False if exclude_base else bool((best @ space.strides == 0).any()),
        "gwlp": gwlp(best, space.levels).round(6).tolist(),
    }
    if weights is not None:
        notes["weights"] = [float(w) for w in weights]
    return Design(best, space, method=f"eval_set({how})", strength=2, notes=notes)


def structured(space: FactorSpace, runs: int | None = None, strength: int = 2,
               include_base: bool = True, exclude: np.ndarray | Sequence | Design | None = None,
               criterion: str = "gwlp") -> Design:
    """The Structured-N arm: an orthogonal array placed to contain h0 and avoid ``exclude``.

    When enumeration is cheap (the papers' OA(18; 3^5)) every non-isomorphic array is a
    candidate, best by ``criterion`` first; otherwise the constructed array, with its columns
    and level labels chosen by :func:`hscale.design._choose.place`.
    """
    from hscale.design._choose import place

    include = space.base[None, :] if include_base else None
    excl = None
    if exclude is not None:
        excl = np.atleast_2d(np.asarray(getattr(exclude, "array", exclude)))
    problems = []
    for parent_name, parent in _structured_parents(space, runs, strength, criterion):
        try:
            best = place(parent, space.levels, include=include, exclude=excl,
                         criterion=criterion)[0]
        except HscaleError as exc:
            problems.append(f"{parent_name}: {exc.message}")
            continue
        if not check_strength(best.array, strength, space.levels).ok:
            raise RuntimeError(f"internal error: placement of {parent_name} lost strength")
        return Design(best.array, space, method=f"structured({parent_name})",
                      strength=strength, notes={"criterion": criterion,
                                                "placement": best.describe(), **best.summary})
    raise HscaleError("no placement of an orthogonal array satisfies the include/exclude "
                      "sets: " + "; ".join(problems[:3]),
                      "drop include_base or shrink the excluded set")


def _structured_parents(space: FactorSpace, runs: int | None, strength: int, criterion: str
                        ) -> list[tuple[str, np.ndarray]]:
    """Arrays to place: every non-isomorphic one when enumeration is cheap, else one built."""
    from hscale.design._choose import candidates
    from hscale.design._oa import ENUMERATE_UP_TO, orthogonal_array

    design = orthogonal_array(space.levels, strength, runs=runs, space=space)
    if (strength == 2 and design.runs <= ENUMERATE_UP_TO[0]
            and space.n_factors <= ENUMERATE_UP_TO[1]):
        ranked = candidates(space.levels, design.runs, criterion=criterion)
        return [(c.id, np.asarray(c.array)) for c in ranked]
    return [(design.method, np.asarray(design.array))]


# Training-set recipes: ``recipe(space, **options)``, options among runs, n, criterion,
# exclude (configurations to avoid) and seed; a spec's ``train.recipe`` names one.
RECIPES: Registry[Callable[..., Design]] = Registry("harness-set recipe")
RECIPES.register("single", single)
RECIPES.register("first_order", first_order)
RECIPES.register("structured", structured)
RECIPES.register("random", random_n)
RECIPES.register("full", full)


def recipe(name: str) -> Callable[..., Design]:
    """A harness-set recipe by name; an unknown name gets a did-you-mean from the registry."""
    return RECIPES.get(name)
