"""Experiment specs: validated YAML naming a space, a benchmark, an algorithm and the arms.

Arms inherit ``defaults``; unknown keys are refused with the file, the line and a
did-you-mean, so a typo never silently becomes a default. ``sweeps`` declares arms over N and
K compactly (hscale.train.spec._sweeps); they join ``arms`` during validation.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from hscale.contracts import BASE_MODEL_ARM
from hscale.design import RECIPES
from hscale.errors import HscaleError
from hscale.harness import BENCHMARKS
from hscale.registry import Registry, UnknownName
from hscale.train.backends import BACKENDS
from hscale.train.harness_s import ROUTERS
from hscale.train.planning import ASSIGNMENTS
from hscale.train.spec._blackbox import BlackBoxTraining
from hscale.train.spec._space import (
    ComposedHarness,
    SpaceSpec,
    _Strict,
    papers_only,
)
from hscale.train.spec._sweeps import SweepError, Sweeps, expand
from hscale.train.spec._verl import LOGGERS, VerlSettings


def _named(registry: Registry) -> Any:
    """A string field whose value must be a name in ``registry`` (read at validation time, so
    a user's registered entry is accepted everywhere at once)."""
    return Annotated[str, AfterValidator(registry.validator())]


# Sizes are bounded before any work starts: a typo of 10**9 must not hang the planner.
MAX_STEPS, MAX_TASKS_PER_STEP, MAX_ROLLOUTS = 100_000, 4096, 256
MAX_TASKS, MAX_SEED = 1_000_000, 2**63 - 1
MAX_SCHEDULE_ROWS = 10_000_000  # steps x tasks a step, per run
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"  # experiment and arm names become folder names
# folders hscale report writes or reads beside the runs, and the base model's reference arm
RESERVED = ("report", "external", BASE_MODEL_ARM)


BUILTIN_TASKS = 200  # training tasks of the builtin world when a spec names none


class Benchmark(_Strict):
    """Where tasks come from (harness.task_sources): ``name`` is a registered kind, ``path`` the
    files of a data kind (relative to the spec's folder), ``tasks`` how many of the split to
    use (all of a data benchmark's when left out), ``split`` how its tasks divide into train
    and eval, ``label`` its column in the report (default: the name, or the path's stem)."""

    name: _named(BENCHMARKS) = "builtin"
    tasks: int | None = Field(None, ge=1, le=MAX_TASKS)
    seed: int = Field(0, ge=0, le=MAX_SEED)
    path: str | None = None
    split: Literal["recorded", "train", "eval"] | Annotated[float, Field(gt=0, lt=1)] = \
        "recorded"
    label: str | None = Field(None, pattern=NAME)
    # the episodes' tools and limits (hscale.harness.tasks._task.LIMIT_BOUNDS) in place of the
    # format's; strict: a task that cannot be loaded stops the run instead of being left out
    tools: tuple[str, ...] | None = None
    limits: dict[str, int | float] | None = None
    strict: bool = False
    max_asset_bytes: int | None = Field(None, ge=1, le=1 << 30)  # pinchbench, jobbench files

    @model_validator(mode="after")
    def _known_tools_and_limits(self) -> Benchmark:
        from hscale.harness.tasks import limits_problem, tools_problem

        problem = ((self.tools is not None and tools_problem(self.tools))
                   or (self.limits is not None and limits_problem(self.limits)))
        if problem:
            raise ValueError(problem)
        return self

    @model_validator(mode="after")
    def _path_for_data(self) -> Benchmark:
        from hscale.harness import FILE_KINDS

        if self.name in FILE_KINDS and not self.path:
            raise ValueError(f"a {self.name} benchmark reads files: give its path")
        if self.name == "builtin" and (self.path or self.split != "recorded"):
            raise ValueError("the builtin world takes no path or split (its splits are "
                             "disjoint by construction)")
        if self.max_asset_bytes and self.name not in ("pinchbench", "jobbench"):
            raise ValueError("max_asset_bytes is for pinchbench and jobbench assets")
        if self.name == "builtin" and (self.tools or self.limits or self.strict):
            raise ValueError("the builtin world takes no tools, limits or strict (its "
                             "tasks are made for its five tools)")
        return self

    @property
    def column(self) -> str:
        """The benchmark's name in eval.parquet and the report's columns."""
        if self.label:
            return self.label
        return self.name if not self.path else (Path(self.path).stem or self.name)


class Algorithm(_Strict):
    """GRPO: 16 tasks x 8 rollouts a step; PPO: 128 tasks x 1 rollout, GAE gamma = lam = 1."""

    name: Literal["grpo", "ppo"] = "grpo"
    tasks_per_step: int | None = Field(None, ge=1, le=MAX_TASKS_PER_STEP)
    rollouts: int | None = Field(None, ge=1, le=MAX_ROLLOUTS)
    lr: float = Field(1e-6, gt=0, le=1)
    gamma: float = Field(1.0, ge=0, le=1)
    lam: float = Field(1.0, ge=0, le=1)
    clip_low: float = Field(0.2, gt=0, le=10)
    clip_high: float = Field(0.28, gt=0, le=10)

    @model_validator(mode="after")
    def _shapes(self) -> Algorithm:
        defaults = {"grpo": (16, 8), "ppo": (128, 1)}[self.name]
        object.__setattr__(self, "tasks_per_step", self.tasks_per_step or defaults[0])
        object.__setattr__(self, "rollouts", self.rollouts or defaults[1])
        if self.name == "grpo" and self.rollouts < 2:
            raise ValueError("GRPO needs at least 2 rollouts a task (a group's baseline)")
        return self


class Assignment(_Strict):
    mode: _named(ASSIGNMENTS) = "locality"
    k: int = Field(2, ge=1, le=64)
    radius: float | None = Field(None, gt=0, le=1e6)  # adaptive K <= k (hscale.train.planning)
    # the siblings' labels, or a frozen pool file (hscale harness evolve; hscale.train.harness_s)
    pool: list[str] | str | None = None
    router: _named(ROUTERS) | None = None
    # a rescue group is a GRPO group: 2 rollouts at least
    group: int = Field(8, ge=2, le=MAX_ROLLOUTS)

    @field_validator("pool")
    @classmethod
    def _some_sibling(cls, pool: list[str] | str | None) -> list[str] | str | None:
        if pool is not None and not pool:
            raise HscaleError("an empty pool: a rescue arm with no sibling rescues nothing",
                              "list siblings' labels, name a pool file (hscale harness "
                              "evolve), or leave pool out for the structured OA's harnesses")
        return pool

    @model_validator(mode="after")
    def _adaptive(self) -> Assignment:
        if self.pool is not None and self.mode != "rescue":
            raise HscaleError("pool is a rescue arm's sibling pool", "give mode: rescue, or "
                              "drop pool")

        if self.radius is not None and not ASSIGNMENTS.get(self.mode).by_distance:
            raise ValueError(f"radius (adaptive K) needs locality assignment, not {self.mode}")
        return self


class TrainSet(_Strict):
    """A harness-set recipe: single, first_order, structured, random, full."""

    recipe: _named(RECIPES) = "structured"
    runs: int | None = Field(None, ge=1)
    n: int | None = Field(None, ge=1)
    criterion: str = "gwlp"


EVAL_TASKS = 36  # held-out tasks evaluated when a spec names none


class Evaluation(_Strict):
    base: bool = True
    # the starting model evaluated once a seed (step 0, no training) as the arm
    # ``base-model``: the tables' "base model (no RL)" row and every arm's RL gain
    base_model: bool = True
    in_space: int = Field(18, ge=0, le=10_000)
    # also evaluate the base harness's distance-1 neighbours (setting ``neighbours``); some may
    # be training harnesses of an arm: robustness to one changed component, not held out
    neighbours: bool = False
    # presets by name, or harnesses composed from the registry (hscale.train.spec._space)
    out_of_space: list[str | ComposedHarness] = Field(
        default_factory=lambda: ["oos/shell", "oos/actions"])

    @field_validator("out_of_space")
    @classmethod
    def _known_harnesses(cls, names: list[str | ComposedHarness]
                         ) -> list[str | ComposedHarness]:
        from hscale.harness import (  # real CLIs
            HARNESSES,
            PRESETS,  # oos/...
            is_blackbox,
        )
        given = [n if isinstance(n, str) else n.name for n in names]
        twice = sorted({n for n in given if given.count(n) > 1})
        if twice:
            raise ValueError(f"out-of-space harness {twice[0]} is listed twice")
        for name in (n for n in names if isinstance(n, str)):
            try:
                (HARNESSES if is_blackbox(name) else PRESETS).check(name)
            except HscaleError as exc:
                raise UnknownName(f"unknown out-of-space harness {name!r}", exc.hint) from None
        return names
    runs: int = Field(3, ge=1, le=100)
    every: int | None = Field(None, ge=1, le=MAX_STEPS)
    # held-out tasks of the builtin world's eval split (a data benchmark's: all of them)
    tasks: int = Field(EVAL_TASKS, ge=1, le=100_000)
    # benchmarks evaluated on, each a column of the report; default: the training benchmark's
    # eval split
    benchmarks: list[Benchmark] | None = Field(None, min_length=1, max_length=32)

    @field_validator("benchmarks")
    @classmethod
    def _distinct_columns(cls, benches: list[Benchmark] | None) -> list[Benchmark] | None:
        columns = [b.column for b in benches or []]
        twice = sorted({c for c in columns if columns.count(c) > 1})
        if twice:
            raise ValueError(f"two evaluation benchmarks are both called {twice[0]!r} (one "
                             "column of the report each)")
        return benches
    # episodes per setting and run; None: every task x harness
    episodes: int | None = Field(None, ge=1, le=100_000)
    # a rescue arm's sibling pool and base harness evaluated at every checkpoint on the
    # router's validation tasks (training split): Harness-S's pool properties in the report
    pool: bool = False


class Arm(_Strict):
    train: TrainSet = TrainSet()
    assignment: Assignment = Assignment()
    algorithm: Algorithm | None = None
    # trains through a black-box harness (hscale.train.spec._blackbox): train and assignment
    # are then unused (one harness, every task under it)
    blackbox: BlackBoxTraining | None = None
    description: str = ""

    @field_validator("train", mode="before")
    @classmethod
    def _train_shorthand(cls, value: Any) -> Any:
        return {"recipe": value} if isinstance(value, str) else value


class ExperimentSpec(_Strict):
    name: str = Field(pattern=NAME)
    # the papers' space, or one by components and realizations (hscale.train.spec._space)
    space: Annotated[str, AfterValidator(papers_only)] | SpaceSpec = "harness"
    # component -> weight of the weighted Hamming distance (train.spec_weights); missing ones 1
    weights: dict[str, Annotated[float, Field(gt=0, strict=True)]] | None = None
    benchmark: Benchmark = Benchmark()
    model: str = "hscale-tiny"
    algorithm: Algorithm = Algorithm()
    steps: int = Field(300, ge=1, le=MAX_STEPS)
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] = Field(
        default_factory=lambda: [0], min_length=1, max_length=1000)
    backend: _named(BACKENDS) = "local"
    evaluation: Evaluation = Evaluation()
    tracking: list[Literal[LOGGERS]] | None = None  # type: ignore[valid-type]
    verl: VerlSettings | None = None
    defaults: dict[str, Any] = Field(default_factory=dict)
    sweeps: Sweeps | None = None
    arms: dict[str, dict[str, Any] | None] = Field(default_factory=dict, max_length=1000)
    # arms the sweeps made -> the spec key they came from; notes for the plan
    _swept: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    _notes: list[str] = PrivateAttr(default_factory=list)

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        twice = sorted({s for s in seeds if seeds.count(s) > 1})
        if twice:
            raise ValueError(f"seed {twice[0]} is listed twice (two runs would be one)")
        return seeds

    @field_validator("arms")
    @classmethod
    def _arm_names(cls, arms: dict[str, Any]) -> dict[str, Any]:
        for name in arms:
            if not isinstance(name, str) or not re.fullmatch(NAME, name):
                raise ValueError(f"arm name {name!r} is not a folder name (letters, digits, "
                                 "_ . -; at most 64, starting with a letter or digit)")
            if name in RESERVED:
                raise ValueError(f"arm name {name!r} is reserved: hscale writes folders "
                                 f"called {', '.join(RESERVED)} beside the arms")
        return arms

    @model_validator(mode="after")
    def _expand_sweeps(self) -> ExperimentSpec:
        """Swept arms join ``arms``, so every reader of the spec sees them; ``sweeps`` is
        then emptied, so a dumped spec validates again to the same arms."""
        if self.sweeps is not None:
            levels = self.space if isinstance(self.space, str) else self.space.level_counts()
            found = expand(self.sweeps, self.arms, levels, NAME, RESERVED)
            object.__setattr__(self, "arms", {**self.arms, **found.arms})
            object.__setattr__(self, "sweeps", None)
            self._swept, self._notes = found.origin, found.notes
        if not self.arms:
            raise SweepError("an experiment needs at least one arm",
                             "list arms under arms:, or declare sweeps:", ("arms",))
        return self

    @property
    def swept(self) -> dict[str, tuple[str, ...]]:
        """Arms made by sweeps -> the spec key each came from (("sweeps", "size"), ...)."""
        return dict(self._swept)

    @property
    def sweep_notes(self) -> list[str]:
        """What expanding the sweeps skipped, and why."""
        return list(self._notes)

    def resolved_arms(self) -> dict[str, Arm]:
        """Every arm with ``defaults`` merged under it (arm keys win, nested dicts merge)."""
        out = {}
        for name, body in self.arms.items():
            merged = _merge(self.defaults, body or {})
            out[name] = Arm.model_validate(merged)
        return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out
