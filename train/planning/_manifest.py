"""Manifests from a spec: resolve an arm's harness sets, assignment and budget into one
:class:`hscale.contracts.Manifest` per (experiment, arm, seed).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from hscale.contracts import BASE_MODEL_ARM, POOL_SETTING, Manifest, Setting, rng_for
from hscale.design import (
    RECIPES,
    FactorSpace,
    by_name,
    eval_set,
    first_order,
    neighbours,
    structured,
)
from hscale.errors import HscaleError
from hscale.harness import HarnessSpace
from hscale.train.planning._workload import harness_space
from hscale.train.spec import Arm, ExperimentSpec, resolve_space, spec_weights

if TYPE_CHECKING:
    from hscale.design import Design
    from hscale.train.planning._sources import Sources


def space_of(spec: ExperimentSpec) -> HarnessSpace:
    """The spec's harness space: the papers' or one given by components (its plugins
    loaded); every level builds (hscale.train.spec._space). The children of the frozen pools
    its rescue arms name are composed harnesses of it, so every driver builds them."""
    from hscale.train.harness_s import with_pool

    space = resolve_space(spec.space, out_of_space=spec.evaluation.out_of_space)
    for arm, pool in pools_of(spec).items():
        space = with_pool(space, pool, f"arm {arm}: assignment.pool",
                          "evolve the pool with this spec (hscale harness evolve --spec ...)")
    return space


def pools_of(spec: ExperimentSpec) -> dict[str, Any]:
    """arm -> the frozen pool its rescue assignment names by file (hscale.train.harness_s._pool)."""
    from hscale.train.harness_s import read_pool

    out = {}
    for name, arm in spec.resolved_arms().items():
        if isinstance(arm.assignment.pool, str):
            try:
                out[name] = read_pool(arm.assignment.pool)
            except HscaleError as exc:
                raise HscaleError(f"arm {name}: assignment.pool: {exc.message}",
                                  exc.hint) from None
    return out


def out_of_space_names(spec: ExperimentSpec) -> list[str]:
    """The evaluated out-of-space harnesses' names: presets and composed ones."""
    return [h if isinstance(h, str) else h.name for h in spec.evaluation.out_of_space]


def _factors(space: HarnessSpace | FactorSpace) -> FactorSpace:
    return space.factor_space if isinstance(space, HarnessSpace) else space


# How a spec builds each evaluation setting's harnesses (hscale.contracts.Setting says its
# label and order): None when the spec does not ask for it. A new setting is a member of
# Setting, its key under the spec's ``evaluation`` and a builder here.
SettingBuilder = Callable[[ExperimentSpec, FactorSpace, Any], list[str] | None]
SETTING_BUILDERS: dict[Setting, SettingBuilder] = {}


def builds(setting: Setting) -> Callable[[SettingBuilder], SettingBuilder]:
    def register(build: SettingBuilder) -> SettingBuilder:
        SETTING_BUILDERS[setting] = build
        return build
    return register


@builds(Setting.BASE)
def _base(spec: ExperimentSpec, space: FactorSpace, weights: Any) -> list[str] | None:
    return [space.label(space.base)] if spec.evaluation.base else None


@builds(Setting.IN_SPACE)
def _in_space(spec: ExperimentSpec, space: FactorSpace, weights: Any) -> list[str] | None:
    """A held-out set beside the structured and first-order training sets; one that cannot
    be built names ``evaluation.in_space``."""
    n = spec.evaluation.in_space
    if not n:
        return None
    try:
        return eval_set(space, [structured(space), first_order(space)], runs=n,
                        weights=weights).labels
    except HscaleError as exc:
        raise HscaleError(f"evaluation.in_space: {n} held-out harnesses of space "
                          f"{space.name}: {exc.message}", exc.hint) from None


@builds(Setting.OUT_OF_SPACE)
def _out_of_space(spec: ExperimentSpec, space: FactorSpace, weights: Any) -> list[str] | None:
    return out_of_space_names(spec) if spec.evaluation.out_of_space else None


@builds(Setting.NEIGHBOURS)
def _neighbours(spec: ExperimentSpec, space: FactorSpace, weights: Any) -> list[str] | None:
    if not spec.evaluation.neighbours:
        return None
    return [space.label(space.from_index(int(i))) for i in neighbours(space, space.base)]


def eval_sets(spec: ExperimentSpec, space: HarnessSpace | FactorSpace) -> dict[str, list[str]]:
    """The evaluated harnesses, shared by every arm, of each setting the spec asks for
    (:data:`SETTING_BUILDERS`, in their order)."""
    weights = spec_weights(spec.weights, space)
    space = _factors(space)
    sets = {setting: build(spec, space, weights) for setting, build in SETTING_BUILDERS.items()}
    return {str(setting): labels for setting, labels in sets.items() if labels is not None}


def train_set(arm: Arm, space: FactorSpace, held_out: list[str], rng: np.random.Generator
              ) -> list[str]:
    """The arm's training harnesses from its recipe (``hscale.design._recipes.RECIPES``), given the
    options its signature takes: ``runs``, ``n``, ``criterion``, ``exclude`` (the held-out
    set) and ``seed``. Every recipe but ``full`` must avoid the held-out set."""
    recipe, options = arm.train.recipe, arm.train
    build = RECIPES.get(recipe)
    asked = (build, space, options.runs, options.n or 18, options.criterion, tuple(held_out))
    if "seed" in inspect.signature(build).parameters:
        labels = list(_recipe_labels(*asked, rng))
    else:  # the same set for every seed (and every arm of the same recipe): built once
        labels = list(_same_labels(*asked))
    if recipe != "full" and set(labels) & set(held_out):
        raise HscaleError(f"the {recipe} training set overlaps the held-out eval set",
                          "use another recipe or a smaller eval set")
    return labels


def _recipe_labels(build: Callable[..., Design], space: FactorSpace, runs: int | None, n: int,
                   criterion: str, held_out: tuple[str, ...], rng: np.random.Generator | None
                   ) -> tuple[str, ...]:
    """The labels of the design a recipe ``build``s, given the options its signature takes."""
    offered = {"runs": runs, "n": n, "criterion": criterion,
               "exclude": space.parse_labels(list(held_out)) if held_out else None, "seed": rng}
    takes = inspect.signature(build).parameters
    return tuple(build(space, **{k: v for k, v in offered.items() if k in takes}).labels)


@cache
def _same_labels(build: Callable[..., Design], space: FactorSpace, runs: int | None, n: int,
                 criterion: str, held_out: tuple[str, ...]) -> tuple[str, ...]:
    """:func:`_recipe_labels` of a recipe that draws nothing (no ``seed``), remembered: a
    study's arms and seeds ask for the same few sets (a Structured-18 placement takes about
    60 ms)."""
    return _recipe_labels(build, space, runs, n, criterion, held_out, None)


def assignment_of(arm_name: str, arm: Arm, space: FactorSpace, train: list[str],
                  held_out: list[str]) -> dict[str, Any]:
    """The manifest's ``assignment``; for a Harness-S rescue arm, with the frozen sibling pool
    resolved, so the trainer finds everything it needs to rescue a zero-signal group."""
    out = arm.assignment.model_dump()
    if out["mode"] != "rescue":
        return out
    base = space.label(space.base)
    where = f"arm {arm_name}: rescue assignment"
    if train != [base]:
        raise HscaleError(f"{where} trains under the base harness {base}, but its "
                          f"{arm.train.recipe} training set has {len(train)} configurations",
                          "use train: single; the sibling harnesses go in assignment.pool")
    if isinstance(out["pool"], str):  # a frozen pool file: its children, by content hash
        from hscale.train.harness_s import read_pool

        pool = read_pool(out["pool"])
        out["pool_sha256"] = pool.sha256
        pool = pool.names
    elif out["pool"]:
        try:
            pool = space.labels(space.parse_labels(list(out["pool"])))
        except HscaleError as exc:
            raise HscaleError(f"{where}: pool: {exc.message}", exc.hint) from None
    else:  # the structured OA training set; a sibling is never the base harness itself
        pool = [label for label in structured(space).labels if label != base]
    _check_pool(where, pool, base, held_out)
    out["pool"] = pool
    return out


def _check_pool(where: str, pool: list[str], base: str, held_out: list[str]) -> None:
    twice = sorted({label for label in pool if pool.count(label) > 1})
    if twice:
        raise HscaleError(f"{where}: the pool lists {twice[0]} twice", "list each sibling once")
    if base in pool:
        raise HscaleError(f"{where}: the pool holds the base harness {base}",
                          "remove it; router: original re-samples under the base harness")
    seen = sorted(set(pool) & set(held_out))
    if seen:
        raise HscaleError(f"{where}: the pool holds held-out eval harnesses ({seen[0]}, ...)",
                          "rescue rollouts are trained on; pick siblings outside the eval set")


def build_manifest(spec: ExperimentSpec, arm_name: str, arm: Arm, seed: int,
                   space: HarnessSpace | FactorSpace, evals: dict[str, list[str]],
                   sources: Sources | None = None) -> Manifest:
    """One run's manifest; ``sources`` (hscale.train.planning.resolve_sources) once per plan.
    A training set that cannot be built names the arm's ``train`` key."""
    if sources is None:
        from hscale.train.planning._sources import resolve_sources

        sources = resolve_sources(spec, spec.name)
    algorithm = arm.algorithm or spec.algorithm
    record = (space.record() if isinstance(space, HarnessSpace) else
              {"name": space.name, "factors": {f.name: list(f.levels) for f in space.factors}})
    weights = spec_weights(spec.weights, space)
    space = _factors(space)
    if arm.blackbox is not None:  # one harness, outside the space: every task under it
        plain = arm.model_copy(update={"blackbox": None, **_ONE_HARNESS})
        return _blackbox_manifest(build_manifest(spec, arm_name, plain, seed, space, evals,
                                                 sources), arm)
    try:
        train = train_set(arm, space, evals.get(Setting.IN_SPACE, []),
                          rng_for(seed, arm_name, "train"))
    except HscaleError as exc:
        options = ", ".join(f"{k}={v}" for k, v in arm.train.model_dump().items()
                            if v is not None and k != "criterion")
        raise HscaleError(f"arm {arm_name}: train ({options}) in space {space.name}: "
                          f"{exc.message}", exc.hint) from None
    assignment = assignment_of(arm_name, arm, space, train, evals.get(Setting.IN_SPACE, []))
    if spec.evaluation.pool and assignment["mode"] == "rescue" and assignment["pool"]:
        evals = {**evals, POOL_SETTING: [train[0], *assignment["pool"]]}
    return Manifest.build(
        experiment=spec.name, arm=arm_name, seed=seed,
        space={**record, "weights": by_name(space, weights)},
        train_harnesses=train,
        eval_sets=evals,
        assignment=assignment,
        algorithm=algorithm.model_dump(),
        budget={"steps": spec.steps, "tasks_per_step": algorithm.tasks_per_step,
                "rollouts_per_task": algorithm.rollouts},
        benchmark=sources.train,
        model=spec.model,
        evaluation={**spec.evaluation.model_dump(exclude={"base", "base_model", "in_space",
                                                          "neighbours", "out_of_space",
                                                          "benchmarks",
                                                          "tasks", "pool"}),
                    "tasks": sources.eval_tasks, "benchmarks": sources.evaluation},
        backend=spec.backend,
        tracking=spec.tracking,
        keep_rollouts=spec.keep_rollouts,
    )


def _blackbox_manifest(planned: Manifest, arm: Arm) -> Manifest:
    """An arm trained through a black-box harness: that harness its one training harness,
    and the manifest's ``blackbox`` record (the backends read how it trains from there)."""
    return Manifest.build(**{**planned.body(), "train_harnesses": [arm.blackbox.harness],
                             "blackbox": arm.blackbox.record()})


def is_blackbox_sft(manifest: Manifest) -> bool:
    """A black-box SFT run: a teacher's episodes and a fine-tune, then an evaluation."""
    return manifest.blackbox is not None and manifest.blackbox.method == "sft"


# the base model's reference run: no training, one evaluation at step 0
BASE_MODEL = Arm.model_validate({"train": "single", "assignment": {"mode": "repeat", "k": 1},
                                 "description": "the starting model, evaluated before RL"})
# what a black-box arm is planned as before its harness replaces the training set: whatever
# the spec's defaults say, one harness and each task under it once (repeat, K = 1)
_ONE_HARNESS = {"train": BASE_MODEL.train, "assignment": BASE_MODEL.assignment}


def base_model_manifest(spec: ExperimentSpec, seed: int, space: HarnessSpace | FactorSpace,
                        evals: dict[str, list[str]], sources: Sources | None = None
                        ) -> Manifest:
    """The reference run of a seed (arm ``base-model``): the spec's model evaluated at step
    0 on the same eval sets, tasks and runs as every trained arm of that seed (evaluation
    episodes depend on the seed, not the arm, so its rows pair with theirs), with a budget
    of 0 steps, no training harnesses and no schedule."""
    built = build_manifest(spec, BASE_MODEL_ARM, BASE_MODEL, seed, space, evals, sources)
    body = built.body()
    return Manifest.build(**{**body, "train_harnesses": [],
                             "budget": {**body["budget"], "steps": 0},
                             "evaluation": {**body["evaluation"], "every": None}})


def with_verl(spec: ExperimentSpec, manifests: list[Manifest]) -> tuple[list[Manifest],
                                                                        list[str]]:
    """For a veRL spec (its backend, or a ``verl:`` section), every manifest gets the same
    ``verl`` record, its token budgets measured over all the runs' harnesses (so every arm
    trains under the same budgets); and the notes that measuring raised."""
    if spec.backend != "verl" and spec.verl is None:
        return manifests, []
    from hscale.train.planning._token_budget import verl_record
    from hscale.train.planning._workload import harness_labels
    from hscale.train.spec import VerlSettings, resolve_model

    resolve_model(spec.model)
    record, notes = verl_record(spec.verl or VerlSettings(), spec.model,
                                harness_labels(manifests), manifests[0].benchmark,
                                harness_space(manifests[0]))
    notes += blackbox_notes(manifests, record["prompt_length"])
    if any(m.blackbox for m in manifests):  # a CLI's model calls, each a segment
        from hscale.harness import EPISODE_TURNS

        record["max_segments"] = max(record["max_segments"], EPISODE_TURNS)
    return [Manifest.build(**{**m.body(), "verl": record}) for m in manifests], notes


def blackbox_notes(manifests: list[Manifest], prompt_length: int) -> list[str]:
    """A line for each black-box harness whose first request alone is longer than the
    rollout's prompt budget (its requests would be refused)."""
    from hscale.harness import HARNESSES, is_blackbox
    from hscale.train.planning._token_budget import CHARS_PER_TOKEN

    used = sorted({h for m in manifests for hs in (m.train_harnesses, *m.eval_sets.values())
                   for h in hs if is_blackbox(h)})
    notes = []
    for name in used:
        tokens = -(-HARNESSES.get(name).prompt_chars // CHARS_PER_TOKEN)
        if tokens > prompt_length:
            notes.append(f"{name}'s first request is about {tokens} tokens, over "
                         f"verl.prompt_length={prompt_length}: the rollout would refuse its "
                         f"episodes; set verl.prompt_length to at least {tokens * 2}")
    return notes
