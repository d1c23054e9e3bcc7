"""A study's confirmatory hypotheses, as a spec declares them (``hypotheses:``): which arm
is claimed above (or below) which, where, and how the family-wise error is kept. The plan
records them in study.json (hscale.contracts.StudyRecord) before any run, and the report
answers them first (hscale.analysis._hypotheses)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from hscale.train.spec._space import _Strict


class Hypothesis(_Strict):
    arm: str
    """The arm the hypothesis is about."""
    than: str
    """The arm it is compared with (`base-model`: the starting model, no RL)."""
    setting: Literal["in_space", "out_of_space", "base"] = "in_space"
    """Where: the held-out in-space harnesses, the out-of-space ones, or the base harness."""
    direction: Literal["higher", "lower", "differs"] = "higher"
    """What is claimed: `arm` has the higher (or lower) Pass@1, tested one-sided; `differs`,
    two-sided."""


class Hypotheses(_Strict):
    procedure: Literal["fixed-sequence", "holm"] = "fixed-sequence"
    """How the family-wise error is kept: `fixed-sequence` tests each at the full alpha in
    the order listed, stopping at the first not confirmed; `holm` tests them together."""
    alpha: float = Field(0.05, gt=0, le=0.2)
    """The family-wise error rate of the confirmatory tests."""
    tests: list[Hypothesis] = Field(min_length=1, max_length=20)
    """The hypotheses, in the order a fixed sequence tests them."""
    stages: list[Annotated[int, Field(ge=2, le=1000)]] | None = Field(
        None, min_length=2, max_length=6)
    """Seeds an arm of a hypothesis runs by each look, increasing (e.g. [3, 6, 10]): the
    study grows stage by stage, each look tested at an O'Brien-Fleming-type boundary, and an
    arm stops gaining seeds once every hypothesis it is in is settled."""

    @field_validator("stages")
    @classmethod
    def _increasing(cls, stages: list[int] | None) -> list[int] | None:
        if stages is not None and any(b <= a for a, b in zip(stages, stages[1:], strict=False)):
            raise ValueError(f"stages {stages}: the seeds at each look must increase")
        return stages
