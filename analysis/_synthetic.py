"""Synthetic results whose answers are known by construction, for tests, benchmarks and power.

``synthetic_episodes`` draws eval rows from success probabilities you choose (kept in the
column ``p_true``); ``write_runs`` lays them out as run folders the way ``hscale run`` does, so
the whole pipeline, the loader included, can be checked against known truths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from hscale.contracts import (
    EVAL,
    EVAL_COLUMNS,
    TRAIN,
    Manifest,
    RunState,
    Setting,
    eval_frame,
    train_frame,
    write_status,
)
from hscale.files import write_parquet
from hscale.harness import OUT_OF_SPACE

Prob = Callable[[pd.DataFrame], np.ndarray] | Mapping[str, float] | float


@lru_cache(maxsize=1)
def _paper_sets() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    from hscale.design import eval_set, first_order, structured
    from hscale.harness import factor_space

    space = factor_space()
    train = structured(space)
    held_out = eval_set(space, [train, first_order(space)])
    return (space.label(space.base),), tuple(held_out.labels), tuple(train.labels)


def default_eval_sets() -> dict[str, list[str]]:
    """The demo's evaluated harnesses: h0, the 18 held-out configurations, two out-of-space."""
    base, held_out, _ = _paper_sets()
    return {Setting.BASE: list(base), Setting.IN_SPACE: list(held_out),
            Setting.OUT_OF_SPACE: list(OUT_OF_SPACE)}


def structured_labels() -> list[str]:
    """The OA(18; 3^5) training set the demo's Structured-18 arm uses."""
    return list(_paper_sets()[2])


def design_grid(arms: Sequence[str], seeds: Sequence[int] = (0, 1, 2), runs: int = 3,
                benchmarks: Sequence[str] = ("bench",), tasks: int = 20,
                eval_sets: Mapping[str, Sequence[str]] | None = None,
                experiment: str = "synthetic", step: int = 10) -> pd.DataFrame:
    """Every (arm, seed, run, benchmark, setting x harness, task) once, as categoricals."""
    sets = default_eval_sets() if eval_sets is None else eval_sets
    pairs = [(s, h) for s, labels in sets.items() for h in labels]
    index = pd.MultiIndex.from_product(
        [list(arms), list(seeds), range(runs), list(benchmarks), range(len(pairs)), range(tasks)],
        names=["arm", "seed", "run", "benchmark", "pair", "task"])
    codes = index.codes
    pair = np.asarray(codes[4])
    frame = pd.DataFrame({
        "experiment": pd.Categorical.from_codes(np.zeros(len(index), int), [experiment]),
        "arm": pd.Categorical.from_codes(codes[0], list(arms)),
        "seed": np.asarray(seeds, dtype=np.int64)[codes[1]],
        "run": np.asarray(codes[2], dtype=np.int64),
        "step": np.full(len(index), step, dtype=np.int64),
        "benchmark": pd.Categorical.from_codes(codes[3], list(benchmarks)),
        "setting": pd.Categorical([s for s, _ in pairs])[pair],
        "harness": pd.Categorical([h for _, h in pairs])[pair],
        "task_id": pd.Categorical.from_codes(codes[5], [f"t{j:04d}" for j in range(tasks)]),
    })
    return frame


def synthetic_episodes(prob: Prob, arms: Sequence[str] = ("single-harness", "structured-18"),
                       seeds: Sequence[int] = (0, 1, 2), runs: int = 3,
                       benchmarks: Sequence[str] = ("bench",), tasks: int = 20,
                       eval_sets: Mapping[str, Sequence[str]] | None = None,
                       experiment: str = "synthetic", step: int = 10,
                       rng: int | np.random.Generator = 0) -> pd.DataFrame:
    """eval.parquet rows with ``success ~ Bernoulli(p_true)``.

    ``prob`` is a constant, a mapping arm -> probability, or a function of the grid (columns
    arm, seed, run, benchmark, setting, harness, task_id) returning one probability per row.
    """
    grid = design_grid(arms, seeds, runs, benchmarks, tasks, eval_sets, experiment, step)
    if callable(prob):
        p = np.asarray(prob(grid), dtype=np.float64)
    elif isinstance(prob, Mapping):
        p = grid["arm"].map(dict(prob)).to_numpy(dtype=np.float64)
    else:
        p = np.full(len(grid), float(prob))
    gen = np.random.default_rng(rng)
    grid["p_true"] = p
    grid["success"] = gen.random(len(grid)) < p
    grid["reward"] = grid["success"].astype(np.float64)
    grid["turns"] = gen.integers(1, 9, len(grid))
    return grid[[*EVAL_COLUMNS, "p_true"]]


def manifest_for(experiment: str, arm: str, seed: int, eval_sets: Mapping[str, list[str]],
                 train: Sequence[str], model: str, algorithm: str, steps: int,
                 runs: int) -> Manifest:
    """A manifest in the contract's shape, for a run of the synthetic "backend"."""
    from hscale.harness import factor_space

    return Manifest.build(
        experiment=experiment, arm=arm, seed=int(seed),
        space={"name": "harness",
               "factors": {f.name: list(f.levels) for f in factor_space().factors}},
        train_harnesses=list(train), eval_sets={k: list(v) for k, v in eval_sets.items()},
        assignment={"mode": "locality", "k": 2},
        algorithm={"name": algorithm, "tasks_per_step": 8, "rollouts": 4, "lr": 1e-6,
                   "gamma": 1.0, "lam": 1.0, "clip_low": 0.2, "clip_high": 0.28},
        budget={"steps": steps, "tasks_per_step": 8, "rollouts_per_task": 4},
        benchmark={"name": "builtin", "tasks": 200, "seed": 0},
        model=model, evaluation={"runs": runs, "tasks": 36}, backend="synthetic")


def train_rows(steps: int, rate: float, rng: np.random.Generator) -> pd.DataFrame:
    """A train.parquet with an effective-group rate around ``rate`` and a rising reward."""
    step = np.arange(steps, dtype=np.int64)
    return pd.DataFrame({
        "step": step,
        "reward_mean": np.clip(0.3 + 0.3 * step / max(steps - 1, 1)
                               + rng.normal(0, 0.03, steps), 0, 1),
        "effective_group_rate": np.clip(rate + rng.normal(0, 0.05, steps), 0, 1),
        "episodes": np.full(steps, 32, dtype=np.int64),
    })


def write_runs(root: str | Path, episodes: pd.DataFrame,
               train_sets: Mapping[str, Sequence[str]] | None = None,
               model: str = "synthetic-model", algorithm: str = "grpo", steps: int = 10,
               group_rate: Mapping[str, float] | None = None, rng: int = 0) -> list[Path]:
    """Run folders ``root/<exp>/<arm>/<seed>/`` with all four files, as ``hscale run`` writes."""
    gen = np.random.default_rng(rng)
    written = []
    keys = ["experiment", "arm", "seed"]
    for (experiment, arm, seed), part in episodes.groupby(keys, observed=True, sort=True):
        folder = Path(root) / str(experiment) / str(arm) / str(seed)
        folder.mkdir(parents=True, exist_ok=True)
        sets = {str(s): list(dict.fromkeys(part.loc[part["setting"] == s, "harness"].astype(str)))
                for s in part["setting"].astype(str).unique()}
        train = (train_sets or {}).get(str(arm), structured_labels())
        manifest = manifest_for(str(experiment), str(arm), int(seed), sets, train, model,
                                algorithm, steps, int(part["run"].nunique()))
        manifest.write(folder)
        write_parquet(folder / EVAL, eval_frame(part))
        rate = (group_rate or {}).get(str(arm), 0.6)
        write_parquet(folder / TRAIN, train_frame(train_rows(steps, rate, gen)))
        write_status(folder, RunState.COMPLETED, manifest.hash, backend="synthetic")
        written.append(folder)
    return written


def pool_episodes(arm: str, seeds: Sequence[int], runs: int, steps: int,
                  gen: np.random.Generator, siblings: int = 3, tasks: int = 8) -> pd.DataFrame:
    """Pool evaluations (setting ``pool``) of ``arm``: the base harness and ``siblings``
    structured configurations on validation tasks at steps 0, steps/2 and steps, each
    sibling best on its own share of the tasks, and the best sibling changing over steps."""
    base, _, train = _paper_sets()
    labels = [base[0], *[h for h in train if h != base[0]][:siblings]]
    index = pd.MultiIndex.from_product(
        [list(seeds), sorted({0, steps // 2, steps}), range(len(labels)), range(tasks),
         range(runs)], names=["seed", "step", "harness", "task", "run"]).to_frame(index=False)
    sibling, task, step = index["harness"], index["task"], index["step"]
    own = (sibling > 0) & (task % siblings == (sibling - 1 + step) % siblings)
    frame = index.assign(
        experiment="demo", arm=arm, benchmark="builtin", setting="pool",
        harness=[labels[i] for i in sibling], task_id=[f"v{j:03d}" for j in task],
        p_true=np.where(own, 0.9, 0.3), turns=3)
    frame["success"] = gen.random(len(frame)) < frame["p_true"]
    frame["reward"] = frame["success"].astype(np.float64)
    return frame[[*EVAL_COLUMNS, "p_true"]]


DEMO_ARMS = {"single-harness": -0.6, "first-order-3": -0.1, "structured-18": 0.3,
             "random-18": 0.1, "full-243": 0.2, "k1": 0.0, "k4": 0.25, "repeat-2": 0.05,
             "random-assignment": 0.15}


def demo_train_sets() -> dict[str, list[str]]:
    """Training harnesses of the demo's arms (random-18 is one fixed draw)."""
    from hscale.design import first_order, full, random_n
    from hscale.harness import factor_space

    space = factor_space()
    held_out = space.parse_labels(default_eval_sets()[Setting.IN_SPACE])
    structured = structured_labels()
    sets = {arm: structured for arm in DEMO_ARMS}
    sets["single-harness"] = [space.label(space.base)]
    sets["first-order-3"] = first_order(space).labels
    sets["random-18"] = random_n(space, 18, seed=0, exclude=held_out).labels
    sets["full-243"] = full(space).labels
    return sets


def demo_like(root: str | Path, tasks: int = 12, seeds: Sequence[int] = (0, 1, 2),
              runs: int = 3, steps: int = 20, rng: int = 0) -> Path:
    """Results shaped like ``hscale run experiments/demo.yaml`` with known truths.

    logit p = arm effect + workflow effect (W: 0, -0.5, +0.5) - 0.3 out-of-space + a task
    effect ~ N(0, 0.8). Returns the experiment folder ``root/demo``.
    """
    gen = np.random.default_rng(rng)
    task_effect = gen.normal(0, 0.8, tasks)

    def prob(grid: pd.DataFrame) -> np.ndarray:
        harness = grid["harness"].astype(str)
        workflow = harness.str.extract(r"W(\d)")[0].astype(float).fillna(0).to_numpy()
        logit = (grid["arm"].map(DEMO_ARMS).to_numpy(dtype=float)
                 + np.array([0.0, -0.5, 0.5])[workflow.astype(int)]
                 - 0.3 * (grid["setting"] == Setting.OUT_OF_SPACE).to_numpy()
                 + task_effect[grid["task_id"].cat.codes.to_numpy()])
        return 1.0 / (1.0 + np.exp(-logit))

    episodes = synthetic_episodes(prob, arms=list(DEMO_ARMS), seeds=seeds, runs=runs,
                                  benchmarks=("builtin",), tasks=tasks, experiment="demo",
                                  step=steps, rng=gen)
    episodes = pd.concat([episodes, pool_episodes("single-harness", seeds, runs, steps, gen)],
                         ignore_index=True)
    # what each episode cost: a call a turn, each call's prompt growing with the history
    # and longer under a sectioned or persona system prompt (S1, S2)
    system = episodes["harness"].astype(str).str.extract(r"S(\d)")[0].astype(float).fillna(0)
    turns = episodes["turns"].to_numpy(dtype=float)
    episodes["model_calls"] = turns
    episodes["prompt_tokens"] = turns * (120 + 30 * system.to_numpy()) + 20 * turns ** 2
    episodes["completion_tokens"] = turns * gen.integers(8, 20, len(episodes))
    rates = {arm: 0.55 + 0.1 * effect for arm, effect in DEMO_ARMS.items()}
    write_runs(root, episodes, demo_train_sets(), model="hscale-tiny", steps=steps,
               group_rate=rates, rng=rng)
    return Path(root) / "demo"
