"""Manifests: one resolved, content-hashed description per (experiment, arm, seed).

A manifest holds everything a trainer needs (harness sets, assignment, algorithm, budget,
backend); its ``hash`` is the sha256 of the canonical JSON of everything else, so the same
spec gives the same hash on any machine and Python run.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from typing import Any

import numpy as np

from design.errors import HscaleError
from design.recipes import eval_set, first_order, full, random_n, single, structured
from design.space import FactorSpace, harness_space
from train.spec import Arm, ExperimentSpec

SCHEMA_VERSION = 1


def space_of(spec: ExperimentSpec) -> FactorSpace:
    return harness_space() if spec.space == "harness" else FactorSpace.from_levels(spec.space)


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
        "assignment": arm.assignment.model_dump(),
        "algorithm": algorithm.model_dump(),
        "budget": {"steps": spec.steps, "tasks_per_step": algorithm.tasks_per_step,
                   "rollouts_per_task": algorithm.rollouts},
        "benchmark": spec.benchmark.model_dump(),
        "model": spec.model,
        "evaluation": {"runs": spec.evaluation.runs, "every": spec.evaluation.every},
        "backend": spec.backend,
    }
    body["hash"] = canonical_hash(body)
    return body
