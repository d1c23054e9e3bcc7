"""``status.json``: a run's state, written by the runner alone (and by
hscale.analysis._synthetic, which fakes finished runs)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from hscale.contracts._manifest import STATUS, Manifest
from hscale.files import atomic_write_text


class RunState(StrEnum):
    """A run's lifecycle, recorded in its folder as status.json::

        PLANNED --> RUNNING --> COMPLETED
                       |------> FAILED       (error message kept)
                       '------> INTERRUPTED  (Ctrl-C or a killed runner: resumable)

    A RUNNING status left behind by a killed process is treated as INTERRUPTED.
    """

    PLANNED = "PLANNED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    INTERRUPTED = "INTERRUPTED"

    @property
    def is_terminal(self) -> bool:
        """The run ended (successfully or not); a re-run starts it again only if FAILED."""
        return self in (RunState.COMPLETED, RunState.FAILED)


class Status(BaseModel):
    """status.json: the state, the manifest it belongs to, timestamps, the error when FAILED,
    and fields a backend adds (e.g. ``ray_job_id``)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    state: RunState = RunState.PLANNED
    manifest_hash: str = ""
    backend: str = ""
    started_at: str = ""
    updated_at: str = ""
    completed_at: str = ""
    error: str = ""

    def is_done(self, manifest: Manifest) -> bool:
        """COMPLETED for this very manifest: nothing left to run."""
        return self.state is RunState.COMPLETED and self.manifest_hash == manifest.hash

    def extra_fields(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def inspect_status(run_dir: str | Path) -> tuple[Status | None, str | None]:
    """The run's status.json as this contract reads it: ``(status, None)``; ``(None, None)``
    when there is none; ``(None, why)`` when it is damaged (the runner then treats the run
    as INTERRUPTED, a report names it)."""
    path = Path(run_dir) / STATUS
    if not path.is_file():
        return None, None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"corrupt ({type(exc).__name__}: {exc})"
    if not isinstance(raw, dict):
        return None, "corrupt (expected a JSON object)"
    try:
        return Status.model_validate(raw), None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        return None, f"corrupt ({field}: {err['msg']})"


def read_status(run_dir: str | Path) -> Status:
    """The run's status; PLANNED when there is none, INTERRUPTED when it is unreadable."""
    status, problem = inspect_status(run_dir)
    if problem is not None:
        return Status(state=RunState.INTERRUPTED)
    return status or Status()


def write_status(run_dir: str | Path, state: RunState, manifest_hash: str, *,
                 error: str = "", **fields: Any) -> Status:
    """Record ``state`` (the runner's job alone); ``started_at`` survives state changes."""
    previous = read_status(run_dir)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    status = Status(state=state, manifest_hash=manifest_hash,
                    started_at=previous.started_at or now, updated_at=now,
                    completed_at=now if state is RunState.COMPLETED else "", error=error,
                    **fields)
    body = {k: v for k, v in status.model_dump(mode="json").items() if v != ""}
    atomic_write_text(Path(run_dir) / STATUS, json.dumps(body, indent=2) + "\n")
    return status
