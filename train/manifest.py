"""Manifests: one resolved, content-hashed description per (experiment, arm, seed).

A manifest holds everything a trainer needs (harness sets, assignment, algorithm, budget,
backend); its ``hash`` is the sha256 of the canonical JSON of everything else, so the same
spec gives the same hash on any machine and Python run.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from design.recipes import eval_set, first_order, full, random_n, single, structured
from design.space import Factor, FactorSpace, harness_space
from hscale.errors import HscaleError
from train.spec import Arm, ExperimentSpec

if TYPE_CHECKING:
    from harness.tasks import Task

SCHEMA_VERSION = 1


def space_of(spec: ExperimentSpec) -> FactorSpace:
    return harness_space() if spec.space == "harness" else FactorSpace.from_levels(spec.space)


def manifest_space(manifest: dict[str, Any]) -> FactorSpace:
    """A run's factor space rebuilt from its manifest alone (a trainer reads nothing else)."""
    factors = manifest["space"]["factors"]
    return FactorSpace(tuple(Factor(name, tuple(levels)) for name, levels in factors.items()),
                       name=manifest["space"]["name"])


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """A generator derived from the run's seed and stable names (not Python's salted hash)."""
    return np.random.default_rng([seed, *(zlib.crc32(n.encode()) for n in names)])


def eval_sets(spec: ExperimentSpec, space: FactorSpace) -> dict[str, list[str]]:
    """The evaluated harnesses, shared by every arm: base, held-out in-space, out-of-space."""
    sets: dict[str, list[str]] = {}
    if spec.evaluation.base:
        sets["base"] = [space.label(space.base)]
    if spec.evaluation.in_space:
        held_out = eval_set(space, [structured(space), first_order(space)],
                            runs=spec.evaluation.in_space)
        sets["in_space"] = held_out.labels
    if spec.evaluation.out_of_space:
        sets["out_of_space"] = list(spec.evaluation.out_of_space)
    return sets


def eval_pairs(labels: Sequence[str], tasks: Sequence[Task], episodes: int | None,
               rotation: int = 0) -> list[tuple[str, Task]]:
    """(harness label, task) pairs of one setting for one run.

    With ``episodes`` set, each harness takes ``ceil(episodes / harnesses)`` consecutive
    tasks of the pool (categories rotate along it), and ``rotation`` (the run's index over
    seeds x runs) moves every harness on to other tasks, so over the runs each harness meets
    many tasks and no harness is tied to a task or category."""
    if not episodes:
        return [(label, task) for label in labels for task in tasks]
    per = min(max(1, math.ceil(episodes / len(labels))), len(tasks))
    start = rotation * per * len(labels) + rotation
    return [(label, tasks[(start + j * per + i) % len(tasks)])
            for j, label in enumerate(labels) for i in range(per)]


def train_set(arm: Arm, space: FactorSpace, held_out: list[str], rng: np.random.Generator
              ) -> list[str]:
    """The arm's training harnesses; every recipe but ``full`` avoids the held-out set."""
    recipe = arm.train.recipe
    exclude = space.parse_labels(held_out) if held_out else None
    if recipe == "single":
        design = single(space)
    elif recipe == "first_order":
        design = first_order(space)
    elif recipe == "structured":
        design = structured(space, runs=arm.train.runs, exclude=exclude,
                            criterion=arm.train.criterion)
    elif recipe == "random":
        design = random_n(space, arm.train.n or 18, seed=rng, exclude=exclude)
    else:
        design = full(space)
    labels = design.labels
    if recipe != "full" and set(labels) & set(held_out):
        raise HscaleError(f"the {recipe} training set overlaps the held-out eval set",
                          "use another recipe or a smaller eval set")
    return labels


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
    if out["pool"]:
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


def canonical_hash(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def build_manifest(spec: ExperimentSpec, arm_name: str, arm: Arm, seed: int,
                   space: FactorSpace, evals: dict[str, list[str]]) -> dict[str, Any]:
    algorithm = arm.algorithm or spec.algorithm
    train = train_set(arm, space, evals.get("in_space", []), rng_for(seed, arm_name, "train"))
    body: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "experiment": spec.name,
        "arm": arm_name,
        "seed": seed,
        "space": {"name": space.name,
                  "factors": {f.name: list(f.levels) for f in space.factors}},
        "train_harnesses": train,
        "eval_sets": evals,
        "assignment": assignment_of(arm_name, arm, space, train, evals.get("in_space", [])),
        "algorithm": algorithm.model_dump(),
        "budget": {"steps": spec.steps, "tasks_per_step": algorithm.tasks_per_step,
                   "rollouts_per_task": algorithm.rollouts},
        "benchmark": spec.benchmark.model_dump(),
        "model": spec.model,
        "evaluation": spec.evaluation.model_dump(exclude={"base", "in_space", "out_of_space"}),
        "backend": spec.backend,
    }
    body["hash"] = canonical_hash(body)
    return body
