"""An arm that trains through a black-box harness (the papers' black-box baselines):
``blackbox: {harness: bb/openclaw, method: sft | rl, ...}``.

``sft``: a teacher (``scripted``: the tasks' known solutions; or an endpoint model) plays
``episodes`` training tasks through the harness, its solved episodes' model calls become
examples (hscale.train.blackbox._trajectories), and the policy is fine-tuned on the teacher's tokens
for the spec's ``steps`` (``batch`` examples a step, LoRA of ``lora_rank``, ``lr``).
``rl``: the arm's rollouts are episodes of the harness, trained with the spec's algorithm,
steps and group sizes, like every other arm. Either way the arm is evaluated as the others
are, so its rows sit beside them in the report's tables.
"""

from __future__ import annotations

import difflib
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from hscale.errors import HscaleError
from hscale.registry import UnknownName
from hscale.train.spec._space import _Strict

SFT_ONLY = ("teacher", "episodes", "keep", "batch", "lr", "lora_rank")


class BlackBoxTraining(_Strict):
    harness: str
    """The black-box CLI trained through (`bb/claude-code`, `bb/codex`, `bb/openclaw`)."""
    method: Literal["sft", "rl"]
    """`sft` (fine-tune on a teacher's episodes) or `rl` (the CLI's episodes as rollouts)."""
    teacher: str = "scripted"
    """SFT's teacher: `scripted` (the tasks' known solutions), a model, or an endpoint."""
    episodes: int = Field(32, ge=1, le=100_000)  # sft's data budget: teacher episodes played
    """SFT's data budget: teacher episodes played."""
    keep: Literal["solved", "all"] = "solved"
    """Which teacher episodes' model calls train: `solved` or `all`."""
    batch: int = Field(4, ge=1, le=4096)
    """SFT's batch size."""
    lr: float = Field(2e-4, gt=0, le=1)
    """SFT's learning rate."""
    lora_rank: int = Field(8, ge=0, le=4096)  # 0: every weight
    """SFT's LoRA rank (0: every weight)."""

    @field_validator("harness")
    @classmethod
    def _known(cls, name: str) -> str:
        from hscale.harness import HARNESSES

        try:
            HARNESSES.check(name)
        except HscaleError as exc:
            raise UnknownName(f"unknown black-box harness {name!r}", exc.hint) from None
        return name

    @field_validator("teacher")
    @classmethod
    def _teacher(cls, name: str) -> str:
        from hscale.train.spec._models import is_endpoint, is_local_path
        from hscale.train.spec._presets import PRESETS

        known = ("scripted", "smollm2", *PRESETS)
        if name.strip() and (name in known or is_endpoint(name)  # a malformed URL says so
                             or name.endswith(".pt") or is_local_path(name)):
            return name
        close = difflib.get_close_matches(name, known, n=1)
        raise UnknownName(f"unknown teacher {name!r}", (f"did you mean {close[0]!r}? " if
                          close else "") + "a teacher is scripted (the tasks' solutions), an "
                          "endpoint (http://HOST:PORT/v1), smollm2, an embedded preset ("
                          f"{', '.join(PRESETS)}), a model folder (./path) or a .pt checkpoint")

    @model_validator(mode="after")
    def _sft_fields_for_sft(self) -> BlackBoxTraining:
        given = sorted(self.model_fields_set & set(SFT_ONLY))
        if self.method == "rl" and given:
            raise ValueError(f"{given[0]} is a black-box SFT setting; black-box RL trains "
                             "with the spec's algorithm (drop it, or use method: sft)")
        return self

    def record(self) -> dict[str, Any]:
        """The manifest's ``blackbox`` record: what the run trains through and how."""
        body = self.model_dump()
        return body if self.method == "sft" else {"harness": self.harness, "method": "rl"}
