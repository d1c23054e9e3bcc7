"""Where task workspaces go: ``$HSCALE_WORKSPACES``, else a memory-backed /dev/shm with room,
else the system's temporary folder."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

MEMORY_FOLDER = Path("/dev/shm")
MEMORY_ROOM = 1 << 30  # free bytes /dev/shm must have to hold workspaces


@cache
def default_root() -> str | None:
    """Where workspaces go when no root is given: ``$HSCALE_WORKSPACES``, else a memory-backed
    /dev/shm where the system has one (an episode creates, reads and deletes its folder; on a
    disk that costs several times the episode's own work), else the system's temporary
    folder (None)."""
    chosen = os.environ.get("HSCALE_WORKSPACES")
    if chosen:
        return chosen
    try:
        room = os.statvfs(MEMORY_FOLDER)
    except OSError:
        return None
    # a container's /dev/shm may be 64 MB: use it only with room for many checkers' output
    if room.f_bavail * room.f_frsize >= MEMORY_ROOM and os.access(MEMORY_FOLDER,
                                                                  os.W_OK | os.X_OK):
        return str(MEMORY_FOLDER)
    return None
