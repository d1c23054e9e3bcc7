"""Sweeps: arms over the training-set size N and the assignment's K, declared in one line.

``sweeps: {size: {recipes: [structured, random], n: [18, 27]}, k: {k: [1, 2, 4]}}`` becomes
the arms ``structured-n18``, ``structured-n27``, ``random-n18``, ``random-n27``, ``k1``,
``k2`` and ``k4``, each merged with ``defaults`` like an explicit arm. Expansion happens while
the spec is validated, so validate, plan, run and the report all see the same arms; the
manifests record N (``train_harnesses``) and K (``assignment.k``), so nothing downstream
reads an arm's name to know what it sweeps.

Not supported yet: sweeping the levels per factor. The space (``spec.space``) is one per
experiment, shared by the held-out eval set every arm is compared on; a 2^5 and a 3^5 arm
would not be evaluated on the same harnesses.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from hscale.design import RECIPES
from hscale.errors import HscaleError

MAX_SWEPT_ARMS = 100  # arms one spec's sweeps may add: each is a run per seed
MAX_SWEPT_N = 100_000
SIZE_OPTIONS = ("runs", "n")  # how a recipe takes its size: structured runs=N, random n=N


class SweepError(HscaleError):
    """A sweep that cannot expand; ``loc`` is the spec key it comes from (for the line)."""

    def __init__(self, message: str, hint: str | None, loc: tuple[str, ...]) -> None:
        super().__init__(message, hint)
        self.loc = loc


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False,
                              use_attribute_docstrings=True)  # the spec reference's text


def _distinct(values: list[int]) -> list[int]:
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise ValueError(f"{twice[0]} is listed twice (two arms would be one)")
    return values


def _sized(name: str) -> str:
    """A recipe (already checked registered) that takes a size (``runs`` or ``n``)."""
    if size_option(name) is None:
        raise ValueError(f"recipe {name!r} takes no size (N goes to a recipe's runs or n)")
    return name


class SizeSweep(_Strict):
    """One arm per recipe x N, named ``<recipe>-n<N>``."""

    recipes: list[Annotated[str, AfterValidator(RECIPES.validator()),
                            AfterValidator(_sized)]] = Field(
        default_factory=lambda: ["structured", "random"], min_length=1, max_length=16)
    """The recipes swept, one arm each per N, named `<recipe>-n<N>`."""
    n: Annotated[list[Annotated[int, Field(ge=1, le=MAX_SWEPT_N)]],
                 AfterValidator(_distinct)] = Field(min_length=1, max_length=MAX_SWEPT_ARMS)
    """The training-set sizes N."""

    @field_validator("recipes")
    @classmethod
    def _distinct_recipes(cls, names: list[str]) -> list[str]:
        twice = sorted({r for r in names if names.count(r) > 1})
        if twice:
            raise ValueError(f"recipe {twice[0]!r} is listed twice")
        return names


class KSweep(_Strict):
    """One arm per K on the default training set, named ``k<K>``."""

    k: Annotated[list[Annotated[int, Field(ge=1, le=64)]], AfterValidator(_distinct)] = \
        Field(min_length=1, max_length=64)
    """The K values, one arm each on the default training set, named `k<K>`."""


class Sweeps(_Strict):
    size: SizeSweep | None = None
    """One arm per recipe and training-set size N."""
    k: KSweep | None = None
    """One arm per K."""


@dataclass(frozen=True)
class Expansion:
    """The swept arms (name -> arm body, before ``defaults``), the spec key each came from,
    and notes for the plan (sizes skipped)."""

    arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def size_option(recipe: str) -> str | None:
    """The option a recipe takes its size by (``runs`` before ``n``), None if it takes none."""
    takes = inspect.signature(RECIPES.get(recipe)).parameters
    return next((o for o in SIZE_OPTIONS if o in takes), None)


def expand(sweeps: Sweeps, explicit: Iterable[str], space: str, name_pattern: str,
           reserved: Iterable[str] = ()) -> Expansion:
    """Every arm of ``sweeps``. A recipe sized by ``runs`` builds an orthogonal array of
    strength 2: an N for which hscale builds none is skipped with a note. A swept name that
    an explicit arm has, or more than MAX_SWEPT_ARMS arms, is a :class:`SweepError`."""
    size, ks = sweeps.size, sweeps.k
    count = (len(size.recipes) * len(size.n) if size else 0) + (len(ks.k) if ks else 0)
    if count > MAX_SWEPT_ARMS:
        raise SweepError(f"the sweeps make {count} arms, more than {MAX_SWEPT_ARMS}",
                         "sweep fewer sizes, recipes or K values (or split the experiment)",
                         ("sweeps",))
    arms: dict[str, dict[str, Any]] = {}
    origin: dict[str, tuple[str, ...]] = {}
    notes: list[str] = []
    for recipe in size.recipes if size else ():
        option = size_option(recipe)
        for n in size.n:
            problem = _no_array(space, n) if option == "runs" else None
            if problem:
                notes.append(f"sweeps.size: no {recipe}-n{n} arm: {problem}")
                continue
            arms[f"{recipe}-n{n}"] = {"train": {"recipe": recipe, option: n}}
            origin[f"{recipe}-n{n}"] = ("sweeps", "size")
    for k in ks.k if ks else ():
        arms[f"k{k}"] = {"assignment": {"k": k}}
        origin[f"k{k}"] = ("sweeps", "k")
    taken, reserved = set(explicit), set(reserved)
    for name, loc in origin.items():
        where = ".".join(loc)
        if name in taken:
            raise SweepError(f"sweep arm {name!r} ({where}) is also an explicit arm",
                             f"rename the explicit arm, or drop its value from {where}", loc)
        if name in reserved or not re.fullmatch(name_pattern, name):
            raise SweepError(f"sweep arm name {name!r} ({where}) is not a free folder name",
                             "use a recipe whose name is letters, digits, _ . -", loc)
    return Expansion(arms, origin, notes)


@lru_cache(maxsize=256)
def _no_array(space: str, runs: int) -> str | None:
    """Why no OA(runs; space) of strength 2 is built, or None when one is (cached: a plan
    loads its spec more than once, and a failed construction takes seconds)."""
    from hscale.design import orthogonal_array, parse_levels
    from hscale.harness import factor_space

    levels = factor_space().levels if space == "harness" else parse_levels(space)
    try:
        orthogonal_array(levels, 2, runs=runs)
    except HscaleError as exc:
        return exc.message
    return None
