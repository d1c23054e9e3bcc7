"""The veRL backend's own part of a manifest: ``manifest.json``'s ``verl`` key, which the
generic contract keeps as an extension it does not interpret (hscale.train.contracts.Manifest
.extension); this backend reads and checks it here."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from hscale.errors import HscaleError
from hscale.train.contracts import REPLAN, Manifest

KEY = "verl"


class VerlRecord(BaseModel):
    """veRL settings as planned: budgets measured or given, the mini batch that keeps one
    optimizer update a step (``max_segments`` trained sequences a rollout at most)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rollout: str
    nnodes: int
    gpus_per_node: int | None
    tensor_parallel: int
    prompt_length: int
    response_length: int
    max_segments: int
    segment_mode: str
    checkpoints: str
    overrides: tuple[str, ...]


def verl_record_of(manifest: Manifest) -> VerlRecord | None:
    """The manifest's veRL record, checked; None when it was planned without one."""
    raw = manifest.extension(KEY)
    if raw is None:
        return None
    try:
        return VerlRecord.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise HscaleError(f"manifest of {manifest.arm}: verl.{field}: {err['msg']}",
                          REPLAN) from None
