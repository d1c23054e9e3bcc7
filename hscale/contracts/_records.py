"""The parts of a manifest (:class:`hscale.contracts.Manifest`): one frozen record per
section, so a field read anywhere is a checked attribute, not a string key."""

from __future__ import annotations

import json
import math
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, model_serializer, model_validator


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Trimmed(_Record):
    """A record whose ``LATER`` fields (added after schema 1) are left out when unset, so a
    manifest that lacks them keeps its hash."""

    LATER: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _trim(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        return {k: v for k, v in out.items() if not (k in self.LATER and v is None)}


class LevelRecord(_Trimmed):
    """A level of a described space: its name, the realization it builds and its parameters,
    and the sha256 of its inline text or of the plugin that registered it."""

    LATER: ClassVar[tuple[str, ...]] = ("params", "sha256")

    name: str
    realization: str
    params: dict[str, Any] | None = None
    sha256: str | None = None


class FactorRecord(_Record):
    """A factor of a described space, in label order (a list keeps it through the hash)."""

    factor: str
    component: str
    levels: tuple[LevelRecord, ...]


class PluginRecord(_Trimmed):
    """A plugin as planned (hscale.harness._spaces.Plugin); ``path`` is left out of the hash."""

    LATER: ClassVar[tuple[str, ...]] = ("path",)

    module: str
    sha256: str
    path: str | None = None


class SpaceRecord(_Trimmed):
    """The factor space; ``weights``: factor name -> weight of the weighted Hamming distance
    (hscale.design._weights, mean 1), recorded only when the spec gives unequal weights;
    ``components`` and ``plugins`` for a space given by components (hscale.harness._spaces),
    not for the papers' (whose level names are its realizations)."""

    LATER: ClassVar[tuple[str, ...]] = ("weights", "components", "plugins", "harnesses")

    name: str
    factors: dict[str, tuple[str, ...]]  # factor name -> level (realization) names
    weights: dict[str, float] | None = None
    components: tuple[FactorRecord, ...] | None = None
    plugins: tuple[PluginRecord, ...] | None = None
    # out-of-space harnesses composed in the spec: name -> component -> realization spec
    harnesses: dict[str, dict[str, Any]] | None = None

    def __hash__(self) -> int:  # params are dicts: hash the record's JSON
        return hash(json.dumps(self.model_dump(), sort_keys=True))

    @model_validator(mode="after")
    def _components_match(self) -> SpaceRecord:
        if self.components is not None and [
                (f.factor, tuple(lv.name for lv in f.levels)) for f in self.components] != [
                (name, tuple(levels)) for name, levels in self.factors.items()]:
            raise ValueError("components must list the factors and levels of factors, in "
                             "their order")
        return self

    @model_validator(mode="after")
    def _weights_known(self) -> SpaceRecord:
        unknown = sorted(set(self.weights or ()) - set(self.factors))
        if unknown or any(not 0 < w < math.inf for w in (self.weights or {}).values()):
            raise ValueError(f"weights must be positive, one per factor of the space "
                             f"(unknown: {', '.join(unknown) or 'none'})")
        return self

    def weight_vector(self) -> tuple[float, ...] | None:
        """The weights in factor order (None: plain Hamming distance)."""
        if self.weights is None:
            return None
        return tuple(self.weights.get(name, 1.0) for name in self.factors)


class AssignmentRecord(_Trimmed):
    """How a task's harnesses are chosen (hscale.train.planning); Harness-S fields for rescue;
    ``radius``: adaptive K (locality), recorded only when set."""

    LATER: ClassVar[tuple[str, ...]] = ("radius", "pool_sha256")

    mode: str
    k: int
    pool: tuple[str, ...] | None = None
    router: str | None = None
    group: int = 8
    radius: float | None = None
    pool_sha256: str | None = None  # a frozen pool file's (hscale.train.harness_s._pool)


class AlgorithmRecord(_Record):
    name: str
    tasks_per_step: int
    rollouts: int
    lr: float
    gamma: float
    lam: float
    clip_low: float
    clip_high: float


class BudgetRecord(_Record):
    steps: int
    tasks_per_step: int
    rollouts_per_task: int


class BenchmarkRecord(_Trimmed):
    """Where a run's tasks come from (hscale.harness.benchmark_of reads it): for a data
    benchmark its ``path``, ``split`` rule, report ``label`` and the ``content`` hash of its
    files at planning (checked again when the run reads them), and the spec's ``tools``,
    ``limits`` and ``strict`` where it sets them."""

    LATER: ClassVar[tuple[str, ...]] = ("split", "label", "content", "tools", "limits",
                                        "strict", "max_asset_bytes")

    name: str
    tasks: int
    seed: int
    path: str | None = None
    split: str | float | None = None
    label: str | None = None
    content: str | None = None
    tools: tuple[str, ...] | None = None  # the spec's, when it sets them
    limits: dict[str, int | float] | None = None
    strict: bool | None = None
    max_asset_bytes: int | None = None

    def __hash__(self) -> int:  # limits is a dict: hash the record's JSON (caches key on it)
        return hash(json.dumps(self.model_dump(), sort_keys=True))

    @property
    def column(self) -> str:
        """Its name in eval.parquet's ``benchmark`` column."""
        return self.label or self.name


class EvaluationRecord(_Trimmed):
    """``benchmarks``: those evaluated on (the training benchmark's eval split when unset,
    ``tasks`` of them); ``decodings``: the passes each evaluation plays, recorded only when
    not both (``hscale evaluate --decoding``)."""

    LATER: ClassVar[tuple[str, ...]] = ("benchmarks", "decodings")

    runs: int
    every: int | None = None
    tasks: int
    episodes: int | None = None
    benchmarks: tuple[BenchmarkRecord, ...] | None = None
    decodings: tuple[Literal["greedy", "sampled"], ...] | None = None

    def sources(self, trained: BenchmarkRecord) -> tuple[BenchmarkRecord, ...]:
        """The benchmarks evaluated on, each with the number of eval tasks to use."""
        if self.benchmarks:
            return self.benchmarks
        return (trained.model_copy(update={"tasks": self.tasks}),)


class BlackBoxRecord(_Trimmed):
    """An arm trained through a black-box harness (the spec's ``blackbox:`` section): the
    harness, the method, and for SFT the teacher and the fine-tune's settings (left out for
    RL, which trains with the spec's algorithm)."""

    LATER: ClassVar[tuple[str, ...]] = ("teacher", "episodes", "keep", "batch", "lr",
                                        "lora_rank")

    harness: str
    method: Literal["sft", "rl"]
    teacher: str | None = None
    episodes: int | None = None
    keep: Literal["solved", "all"] | None = None
    batch: int | None = None
    lr: float | None = None
    lora_rank: int | None = None


class VerlRecord(_Record):
    """veRL settings as planned (the spec's ``verl:`` section, hscale.train.backends.verl
    reads it): budgets measured or given, and the mini batch that keeps one optimizer update
    a step (``max_segments`` trained sequences a rollout at most)."""

    rollout: str
    nnodes: int
    gpus_per_node: int | None
    tensor_parallel: int
    prompt_length: int
    response_length: int
    segment_mode: str
    checkpoints: str
    overrides: tuple[str, ...]
    max_segments: int


__all__ = ["AlgorithmRecord", "AssignmentRecord", "BenchmarkRecord", "BlackBoxRecord",
           "BudgetRecord", "VerlRecord",
           "EvaluationRecord", "FactorRecord", "LevelRecord", "PluginRecord", "SpaceRecord"]
