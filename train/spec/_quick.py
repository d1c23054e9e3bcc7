"""``hscale run --quick``: an experiment's arms at smoke-test scale."""

from __future__ import annotations

import math

from hscale.train.spec._experiment import ExperimentSpec


def quick(spec: ExperimentSpec) -> ExperimentSpec:
    """The same arms at smoke-test scale (``hscale run --quick``), under ``<name>-quick``:
    one seed, 4 steps of 4 tasks x 2 rollouts (or the least multiple of every arm's K above
    4, as a schedule needs), one evaluation run of 6 episodes a setting."""
    every_k = math.lcm(*(arm.assignment.k for arm in spec.resolved_arms().values()))
    algorithm = spec.algorithm.model_copy(update={"tasks_per_step": 4, "rollouts": 2})
    arms = {}
    for name, body in spec.arms.items():
        body = {k: v for k, v in (body or {}).items() if k != "seeds"}  # one seed, as all
        if body.get("algorithm"):
            body["algorithm"] = {**body["algorithm"], "tasks_per_step": 4, "rollouts": 2}
        arms[name] = body
    evaluation = spec.evaluation.model_copy(update={"runs": 1, "tasks": 6, "episodes": 6,
                                                    "every": None})
    hypotheses = spec.hypotheses.model_copy(update={"stages": None}) \
        if spec.hypotheses else None
    defaults = {k: v for k, v in spec.defaults.items() if k != "seeds"}
    return spec.model_copy(update={"name": f"{spec.name}-quick", "seeds": spec.seeds[:1],
                                   "hypotheses": hypotheses, "defaults": defaults,
                                   "steps": every_k * math.ceil(4 / every_k),
                                   "algorithm": algorithm, "arms": arms,
                                   "evaluation": evaluation})
