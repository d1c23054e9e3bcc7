"""A spec's ``verl:`` section: veRL's side of its runs (hscale.train.planning measures the
budgets left out; hscale.train.backends.verl reads the manifest's record of it)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from hscale.train.spec._space import _Strict

# veRL's logger names (verl.utils.tracking), for both backends' per-step metrics
LOGGERS = ("console", "file", "tensorboard", "mlflow", "wandb", "swanlab", "clearml",
           "trackio", "vemlp_wandb")
SEGMENT_MODES = ("auto", "segments", "last_segment", "full_history")


class VerlSettings(_Strict):
    """veRL's side of a run: the rollout engine, the node shape, token budgets (measured at
    plan time from the harnesses' rendered episodes when not given), the agent loop's segment
    mode, whether a completed run keeps its checkpoints, and raw Hydra overrides."""

    rollout: str = "vllm"  # actor_rollout_ref.rollout.name
    """veRL's rollout engine (`vllm`, `sglang`; `hscale_hf` runs veRL on the CPU)."""
    nnodes: int = Field(1, ge=1)
    """Nodes a run."""
    gpus_per_node: int | None = Field(None, ge=1)  # None: this machine's, on a local launch
    """GPUs a node (a local launch counts this node's when not given)."""
    tensor_parallel: int = Field(1, ge=1)
    """The rollout's tensor-parallel size."""
    prompt_length: int | None = Field(None, ge=16)
    """veRL's prompt budget in tokens (measured at plan time from the rendered episodes when not
    given)."""
    response_length: int | None = Field(None, ge=16)
    """veRL's response budget in tokens (measured at plan time when not given)."""
    segment_mode: Literal["auto", "segments", "last_segment", "full_history"] = "auto"
    """How an episode's context segments become training sequences (`auto` follows the trainer)."""
    checkpoints: Literal["keep", "drop"] = "keep"
    """Keep a completed run's checkpoints, or drop them once its results are in."""
    overrides: list[str] = Field(default_factory=list)
    """Raw Hydra overrides for veRL (`key=value`), applied after hscale's."""

    @field_validator("overrides")
    @classmethod
    def _overrides(cls, value: list[str]) -> list[str]:
        bad = [o for o in value if "=" not in o or not o.split("=", 1)[0].strip("+~")]
        if bad:
            raise ValueError(f"override {bad[0]!r} is not key=value (veRL's Hydra syntax)")
        return value

