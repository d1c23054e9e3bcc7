"""Experiment specs: validated YAML naming a space, a benchmark, an algorithm and the arms.

Arms inherit ``defaults``; unknown keys are refused with the file, the line and a
did-you-mean, so a typo never silently becomes a default. ``sweeps`` declares arms over N and
K compactly (hscale.train.spec._sweeps); they join ``arms`` during validation.
"""

from __future__ import annotations

import re
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
from hscale.registry import UnknownName
from hscale.train.harness_s import ROUTERS
from hscale.train.spec._assignments import ASSIGNMENTS
from hscale.train.spec._benchmark import (
    MAX_SEED,
    NAME,
    Benchmark,
    _named,
)
from hscale.train.spec._blackbox import BlackBoxTraining
from hscale.train.spec._hypotheses import Hypotheses
from hscale.train.spec._registries import BACKENDS
from hscale.train.spec._space import (
    ComposedHarness,
    SpaceSpec,
    _Strict,
    papers_only,
)
from hscale.train.spec._sweeps import SweepError, Sweeps, expand
from hscale.train.spec._verl import LOGGERS, VerlSettings

# Sizes are bounded before any work starts: a typo of 10**9 must not hang the planner.
MAX_STEPS, MAX_TASKS_PER_STEP, MAX_ROLLOUTS = 100_000, 4096, 256
MAX_SCHEDULE_ROWS = 10_000_000  # steps x tasks a step, per run
# folders hscale report writes or reads beside the runs, and the base model's reference arm
RESERVED = ("report", "external", BASE_MODEL_ARM)


class Algorithm(_Strict):
    """GRPO: 16 tasks x 8 rollouts a step; PPO: 128 tasks x 1 rollout, GAE gamma = lam = 1."""

    name: Literal["grpo", "ppo"] = "grpo"
    """`grpo` (group-relative advantages) or `ppo` (a value head and GAE)."""
    tasks_per_step: int | None = Field(None, ge=1, le=MAX_TASKS_PER_STEP)
    """Tasks a training step (default: 16 for GRPO, 128 for PPO)."""
    rollouts: int | None = Field(None, ge=1, le=MAX_ROLLOUTS)
    """Rollouts a task, GRPO's group size (default: 8 for GRPO, 1 for PPO)."""
    lr: float = Field(1e-6, gt=0, le=1)
    """The learning rate."""
    gamma: float = Field(1.0, ge=0, le=1)
    """PPO's discount."""
    lam: float = Field(1.0, ge=0, le=1)
    """PPO's GAE lambda."""
    clip_low: float = Field(0.2, gt=0, le=10)
    """Lower clip range of the policy ratio."""
    clip_high: float = Field(0.28, gt=0, le=10)
    """Upper clip range of the policy ratio (clip-higher)."""

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
    """How a training slot's harness is chosen: `locality` (the anchor and its nearest partners),
    `repeat` (the anchor K times), `random`, or `rescue` (Harness-S: the base harness,
    zero-signal groups rescued under siblings)."""
    k: int = Field(2, ge=1, le=64)
    """Harnesses each task trains under (K)."""
    radius: float | None = Field(None, gt=0, le=1e6)  # adaptive K <= k (hscale.train.planning)
    """Adaptive K: partners within this (weighted) Hamming distance of the anchor, at most `k`."""
    # the siblings' labels, or a frozen pool file (hscale harness evolve; hscale.train.harness_s)
    pool: list[str] | str | None = None
    """A rescue arm's siblings: their labels, or a frozen pool file from `hscale harness evolve`
    (default: the structured array's harnesses)."""
    router: _named(ROUTERS) | None = None
    """A rescue arm's router, which picks the siblings that rescue a zero-signal group."""
    # a rescue group is a GRPO group: 2 rollouts at least
    group: int = Field(8, ge=2, le=MAX_ROLLOUTS)
    """Rollouts of a rescue group (a GRPO group: 2 at least)."""

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
    """The training harness set's recipe."""
    runs: int | None = Field(None, ge=1)
    """Rows of the structured recipe's orthogonal array (N; default the smallest that holds)."""
    n: int | None = Field(None, ge=1)
    """Harnesses the `random` recipe draws."""
    criterion: str = "gwlp"
    """How the structured recipe ranks candidate arrays: `gwlp`, `min_distance` or
    `covering_radius`."""


EVAL_TASKS = 36  # held-out tasks evaluated when a spec names none


class Evaluation(_Strict):
    base: bool = True
    """Evaluate under the base harness (setting `base`)."""
    # the starting model evaluated once a seed (step 0, no training) as the arm
    # ``base-model``: the tables' "base model (no RL)" row and every arm's RL gain
    base_model: bool = True
    """Also evaluate the starting model once a seed, as the arm `base-model`: the tables' "base
    model (no RL)" row and every arm's RL gain."""
    in_space: int = Field(18, ge=0, le=10_000)
    """Held-out in-space harnesses evaluated (a strength-2 array kept away from training); 0 for
    none."""
    # also evaluate the base harness's distance-1 neighbours (setting ``neighbours``); some may
    # be training harnesses of an arm: robustness to one changed component, not held out
    neighbours: bool = False
    """Also evaluate the base harness's distance-1 neighbours (setting `neighbours`)."""
    # presets by name, or harnesses composed from the registry (hscale.train.spec._space)
    out_of_space: list[str | ComposedHarness] = Field(
        default_factory=lambda: ["oos/shell", "oos/actions"])
    """Out-of-space harnesses: presets (`oos/shell`), black-box CLIs (`bb/claude-code`) or
    harnesses composed from the registry."""

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
    """Sampled evaluation runs (a greedy pass is played besides)."""
    every: int | None = Field(None, ge=1, le=MAX_STEPS)
    """Also evaluate every this many training steps (the evaluation curves); default only at the
    end."""
    # held-out tasks of the builtin world's eval split (a data benchmark's: all of them)
    tasks: int = Field(EVAL_TASKS, ge=1, le=100_000)
    """Held-out tasks of the builtin world's eval split (a data benchmark evaluates its whole
    eval split)."""
    # benchmarks evaluated on, each a column of the report; default: the training benchmark's
    # eval split
    benchmarks: list[Benchmark] | None = Field(None, min_length=1, max_length=32)
    """Benchmarks evaluated on, each a column of the report (default: the training benchmark's
    eval split)."""

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
    """Episodes a setting and run, spread over its harnesses (default: every task under every
    harness)."""
    # a rescue arm's sibling pool and base harness evaluated at every checkpoint on the
    # router's validation tasks (training split): Harness-S's pool properties in the report
    pool: bool = False
    """Evaluate a rescue arm's sibling pool and base harness at every checkpoint on the router's
    validation tasks (the report's pool tables)."""


class Arm(_Strict):
    train: TrainSet = TrainSet()
    """The arm's training harness set (a recipe name, or a mapping)."""
    assignment: Assignment = Assignment()
    """How the arm assigns harnesses to training slots."""
    algorithm: Algorithm | None = None
    """The arm's own algorithm settings, in place of the spec's."""
    # trains through a black-box harness (hscale.train.spec._blackbox): train and assignment
    # are then unused (one harness, every task under it)
    blackbox: BlackBoxTraining | None = None
    """Train through a black-box harness (SFT on a teacher's episodes, or RL); `train` and
    `assignment` are then unused."""
    description: str = ""
    """Free text saying what the arm is for."""
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] | None = Field(
        None, min_length=1, max_length=1000)
    """The arm's own seeds, in place of the spec's: more runs where a question needs them
    (`hscale power` plans them)."""

    @field_validator("seeds")
    @classmethod
    def _distinct_arm_seeds(cls, seeds: list[int] | None) -> list[int] | None:
        return _distinct(seeds) if seeds is not None else None

    @field_validator("train", mode="before")
    @classmethod
    def _train_shorthand(cls, value: Any) -> Any:
        return {"recipe": value} if isinstance(value, str) else value


def _distinct(seeds: list[int]) -> list[int]:
    twice = sorted({s for s in seeds if seeds.count(s) > 1})
    if twice:
        raise ValueError(f"seed {twice[0]} is listed twice (two runs would be one)")
    return seeds


class ExperimentSpec(_Strict):
    name: str = Field(pattern=NAME)
    """The experiment's name, its folder under the runs folder."""
    # the papers' space, or one by components and realizations (hscale.train.spec._space)
    space: Annotated[str, AfterValidator(papers_only)] | SpaceSpec = "harness"
    """`harness` (the papers' 3^5 space) or a space of your own: its factors, their components
    and levels."""
    # component -> weight of the weighted Hamming distance (train.spec_weights); missing ones 1
    weights: dict[str, Annotated[float, Field(gt=0, strict=True)]] | None = None
    """Component or factor name -> its weight in the weighted Hamming distance (missing ones 1,
    normalised to mean 1)."""
    benchmark: Benchmark = Benchmark()
    """Where the training tasks (and by default the evaluation's) come from."""
    model: str = "hscale-tiny"
    """The policy: `hscale-tiny` (the embedded CPU policy), a hub id, an alias of the papers'
    models, or a local folder."""
    algorithm: Algorithm = Algorithm()
    """GRPO or PPO settings of every arm that sets none."""
    steps: int = Field(300, ge=1, le=MAX_STEPS)
    """Training steps a run."""
    seeds: list[Annotated[int, Field(ge=0, le=MAX_SEED)]] = Field(
        default_factory=lambda: [0], min_length=1, max_length=1000)
    """The seeds; every arm runs once a seed."""
    backend: _named(BACKENDS) = "local"
    """Who trains: `local` (the embedded trainer), `verl`, or `scripted` (no model: a scripted
    policy through the real harnesses)."""
    evaluation: Evaluation = Evaluation()
    """What every run is evaluated on, and how often."""
    tracking: list[Literal[LOGGERS]] | None = None  # type: ignore[valid-type]
    """veRL's loggers (`console`, `tensorboard`, `wandb`, ...); the file logger is always on."""
    # the share of training groups whose rollouts' transcripts each run keeps
    # (rollouts.parquet; a Harness-S arm also keeps its zero-signal groups and their rescue)
    keep_rollouts: float | None = Field(None, ge=0, le=1)
    """The share of training groups whose rollouts' transcripts each run keeps in
    rollouts.parquet (a Harness-S arm also keeps every zero-signal group and the rollouts that
    rescued it); default none."""
    verl: VerlSettings | None = None
    """veRL's settings: rollout engine, node shape, token budgets, raw overrides."""
    defaults: dict[str, Any] = Field(default_factory=dict)
    """Arm settings every arm inherits (an arm's own keys win)."""
    sweeps: Sweeps | None = None
    """Arms declared compactly over training-set size N and K."""
    arms: dict[str, dict[str, Any] | None] = Field(
        default_factory=dict, max_length=1000,
        json_schema_extra={"shown_default": "required: at least one arm, here or from sweeps"})
    """The arms: name -> its settings (empty: the defaults)."""
    reference: str | None = None
    """The arm every other arm is compared with in the report (default: the structured
    arm)."""
    hypotheses: Hypotheses | None = None
    """The study's confirmatory questions, declared before it runs and tested with the
    family-wise error kept (a list of tests, or a mapping with `procedure`, `alpha`, `tests`
    and `stages`); the report answers them first and labels everything else exploratory."""

    @field_validator("hypotheses", mode="before")
    @classmethod
    def _hypotheses_shorthand(cls, value: Any) -> Any:
        return {"tests": value} if isinstance(value, list) else value
    # arms the sweeps made -> the spec key they came from; notes for the plan
    _swept: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    _notes: list[str] = PrivateAttr(default_factory=list)

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        return _distinct(seeds)

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
        self._check_names()
        return self

    def _check_names(self) -> None:
        """The reference and every hypothesis name arms of this spec."""
        known = list(self.arms)
        candidates = [*known, BASE_MODEL_ARM] if self.evaluation.base_model else known
        named = [(("reference",), self.reference, known)] if self.reference else []
        for i, h in enumerate(self.hypotheses.tests if self.hypotheses else []):
            named += [(("hypotheses", "tests", i, "arm"), h.arm, known),
                      (("hypotheses", "tests", i, "than"), h.than, candidates)]
        for loc, name, among in named:
            if name not in among:
                import difflib

                close = difflib.get_close_matches(name, among, n=1)
                raise SweepError(f"{'.'.join(map(str, loc))}: {name!r} is not an arm of "
                                 "this spec", (f"did you mean {close[0]!r}? " if close else "")
                                 + f"arms: {', '.join(among)}", loc)
        if self.hypotheses:
            for i, h in enumerate(self.hypotheses.tests):
                if h.arm == h.than:
                    raise SweepError(f"hypotheses.tests.{i}: {h.arm} is compared with itself",
                                     "name another arm in than:",
                                     ("hypotheses", "tests", i, "than"))

    def arm_seeds(self, arm: Arm) -> list[int]:
        """The seeds an arm runs: its own, else the spec's."""
        return list(arm.seeds) if arm.seeds is not None else list(self.seeds)

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
