"""Planted studies by variance components: :func:`planted` draws the evaluation rows of arms
whose paired difference has known components (training seeds, tasks, harnesses, seed x task,
evaluation runs) and a known true difference. (Studies of arm-specific shapes, unequal
stability, seeds or interactions, are hscale.analysis._planted's, which the calibration
benchmark runs.)

Outcomes follow a linear probability model clipped to [0, 1]: each arm's success
probability is a base rate plus half the difference, shared task and harness effects (they
cancel in pairs), and each component drawn per arm with half the difference's variance. The
base rate is chosen so the binary residual matches ``components['residual']``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hscale.analysis._components import COMPONENTS, StudySize
from hscale.contracts import Setting

ARMS = ("reference", "other")


def cells(design: StudySize) -> tuple[np.ndarray, ...]:
    """(seed, run, harness, task) indices of every paired cell: every task x harness, or
    with ``episodes`` set the rotation of hscale.train.planning._workload.eval_pairs."""
    if design.episodes is None:
        s, r, h, t = np.meshgrid(*(np.arange(n) for n in (design.seeds, design.runs,
                                                           design.harnesses, design.tasks)),
                                 indexing="ij")
        return s.ravel(), r.ravel(), h.ravel(), t.ravel()
    per = min(max(1, math.ceil(design.episodes / design.harnesses)), design.tasks)
    out = []
    for seed in range(design.seeds):
        for run in range(design.runs):
            rot = seed * design.runs + run
            start = rot * per * design.harnesses + rot
            for j in range(design.harnesses):
                for i in range(per):
                    out.append((seed, run, j, (start + j * per + i) % design.tasks))
    return tuple(np.array(c) for c in zip(*out, strict=True))


def base_rate(components: Mapping[str, float], shared: float = 0.005) -> float:
    """The success rate at which two arms' binary noise has ``components['residual']``."""
    comp = {k: float(components.get(k, 0.0)) for k in COMPONENTS}
    spread = sum(v for k, v in comp.items() if k != "residual") / 2 + 2 * shared
    need = comp["residual"] / 2 + spread
    if need > 0.25:
        raise ValueError(f"residual {comp['residual']} is too large for a binary outcome with "
                         "these components (at most 0.5 minus the rest)")
    return 0.5 - math.sqrt(0.25 - need)


def planted(components: Mapping[str, float], design: StudySize,
            effect: float | Sequence[float] = 0.0, rng: np.random.Generator | int = 0,
            shared: float = 0.005) -> pd.DataFrame:
    """Evaluation rows of a reference arm and one arm a true difference in ``effect`` (a
    proportion each; several: several arms), in the shape hscale.analysis._load gives them."""
    effects = [float(effect)] if np.isscalar(effect) else [float(e) for e in effect]
    comp = {k: float(components.get(k, 0.0)) for k in COMPONENTS}
    base = base_rate(comp, shared)
    gen = np.random.default_rng(rng)
    s, r, h, t = cells(design)
    sizes = {"seed": (design.seeds,), "task": (design.tasks,), "harness": (design.harnesses,),
             "seed_task": (design.seeds, design.tasks), "run": (design.seeds, design.runs)}
    index = {"seed": (s,), "task": (t,), "harness": (h,), "seed_task": (s, t), "run": (s, r)}
    common = (gen.normal(0, math.sqrt(shared), design.tasks)[t]
              + gen.normal(0, math.sqrt(shared), design.harnesses)[h])
    names = [ARMS[0], *(ARMS[1] if len(effects) == 1 else f"arm{j + 1}"
                        for j in range(len(effects)))]
    success = []
    for shift in [-np.mean(effects) / 2, *(e - np.mean(effects) / 2 for e in effects)]:
        p = base + shift + common
        for name, shape in sizes.items():
            p = p + gen.normal(0, math.sqrt(comp[name] / 2), shape)[index[name]]
        success.append(gen.random(len(s)) < np.clip(p, 0, 1))
    n, arms = len(s), len(names)
    arm = np.repeat(np.arange(arms), n)
    frame = pd.DataFrame({
        "source": "measured", "experiment": "planted", "model": "m", "algorithm": "grpo",
        "method": pd.Categorical.from_codes(arm, names),
        "arm": pd.Categorical.from_codes(arm, names),
        "seed": np.tile(s, arms), "run": np.tile(r, arms), "step": 1, "benchmark": "bench",
        "setting": Setting.IN_SPACE, "harness": pd.Categorical.from_codes(
            np.tile(h, arms), [f"h{j}" for j in range(design.harnesses)]),
        "task_id": pd.Categorical.from_codes(np.tile(t, arms),
                                             [f"t{j}" for j in range(design.tasks)])})
    frame["success"] = np.concatenate(success)
    frame["reward"] = frame["success"].astype(np.float64)
    frame["turns"] = 1
    return frame
