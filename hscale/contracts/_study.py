"""``study.json``: what an experiment set out to answer, beside its arm folders
(``runs/<experiment>/study.json``), written when it is planned: its confirmatory hypotheses
and how they are tested, the reference arm, each arm's seeds in the order a staged study adds
them, and when the hypotheses were declared. The report reads it to answer the hypotheses
first; a hypothesis declared after the study's first run started is said to be so.

It is not part of any run's manifest: a hypothesis is about the study, and changing one
re-plans no run.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hscale.contracts._vocabulary import Setting
from hscale.errors import HscaleError
from hscale.files import atomic_write_text

STUDY = "study.json"


class HypothesisRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    arm: str
    than: str
    setting: Literal["in_space", "out_of_space", "base"] = "in_space"
    direction: Literal["higher", "lower", "differs"] = "higher"

    def claim(self) -> str:
        """'structured-18 above single-harness, in-space'."""
        words = {"higher": "above", "lower": "below", "differs": "differs from"}
        where = Setting(self.setting).label
        return f"{self.arm} {words[self.direction]} {self.than}, {where}"


class StudyRecord(BaseModel):
    """study.json: hypotheses (tested by ``procedure`` at family-wise ``alpha``; a staged
    study looks at ``stages`` seeds an arm), ``seeds`` (arm -> its seeds, in order),
    ``reference`` (the arm the report compares with), ``declared`` (ISO time the hypotheses
    were first written as they are)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    hypotheses: list[HypothesisRecord] = Field(default_factory=list)
    procedure: Literal["fixed-sequence", "holm"] = "fixed-sequence"
    alpha: float = 0.05
    stages: list[int] | None = None
    seeds: dict[str, list[int]] = Field(default_factory=dict)
    reference: str | None = None
    declared: str = ""

    def same_claims(self, other: StudyRecord) -> bool:
        keys = ("hypotheses", "procedure", "alpha", "stages")
        return all(getattr(self, k) == getattr(other, k) for k in keys)


def read_study(folder: str | Path) -> StudyRecord | None:
    """``folder/study.json``, or None when there is none; a damaged one is an HscaleError
    naming it."""
    path = Path(folder) / STUDY
    if not path.is_file():
        return None
    try:
        return StudyRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise HscaleError(f"{path}: damaged ({str(exc).splitlines()[0][:120]})",
                          "plan the experiment again (hscale plan SPEC) to rewrite it") \
            from None


def write_study(folder: str | Path, record: StudyRecord) -> StudyRecord:
    """Write ``record`` to ``folder/study.json``, keeping the first declaration time of
    hypotheses that have not changed since (the time says when they were declared)."""
    folder = Path(folder)
    try:
        before = read_study(folder)
    except HscaleError:
        before = None
    declared = before.declared if before is not None and before.same_claims(record) and \
        before.declared else datetime.now(UTC).isoformat(timespec="seconds")
    final = record.model_copy(update={"declared": declared})
    if before != final:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / STUDY, json.dumps(final.model_dump(mode="json"),
                                                     indent=2) + "\n")
    return final
