"""A run's lifecycle, recorded in its folder as status.json.

    PLANNED --> RUNNING --> COMPLETED
                   |------> FAILED       (error message kept)
                   '------> INTERRUPTED  (Ctrl-C or a killed runner: resumable)

A RUNNING status left behind by a killed process is treated as INTERRUPTED on the next run.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from hscale.files import atomic_write_text


class RunState(StrEnum):
    PLANNED = "PLANNED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    INTERRUPTED = "INTERRUPTED"


def read_status(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / "status.json"
    if not path.is_file():
        return {"state": RunState.PLANNED.value}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {"state": RunState.INTERRUPTED.value}


def write_status(run_dir: Path, state: RunState, manifest_hash: str, error: str = "",
                 **extra: Any) -> dict[str, Any]:
    previous = read_status(run_dir)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    status = {
        "state": state.value, "manifest_hash": manifest_hash,
        "started_at": previous.get("started_at") or now, "updated_at": now,
        **({"error": error} if error else {}), **extra,
    }
    if state is RunState.COMPLETED:
        status["completed_at"] = now
    atomic_write_text(Path(run_dir) / "status.json", json.dumps(status, indent=2) + "\n")
    return status
