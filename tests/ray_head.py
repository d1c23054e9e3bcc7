"""A Ray head that a test starts and stops itself: in its own temp dir and process group,
stopped by its pid (never ``ray stop``, which would stop every Ray on the machine), token
authentication off (Ray 2.60 turns it on by default)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def local_ray_head(cpus: int = 1, gpus: int = 0, dashboard: bool = True,
                   env: Mapping[str, str] | None = None, wait: float = 180.0,
                   both: bool = False) -> Iterator[Any]:
    """Yields the dashboard's URL (the job API) when ``dashboard``, else the GCS address
    ``127.0.0.1:PORT``; with ``both``, (the GCS address, the dashboard's URL); ``gpus``
    declares logical GPUs (veRL on the CPU takes one as its device slot)."""
    temp = Path(tempfile.mkdtemp(prefix="hsray", dir="/tmp"))  # Ray's socket paths are short
    ray_bin = Path(sys.executable).with_name("ray")
    env = {**os.environ, **RAY_ENV, **(env or {}),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    log = open(temp / "head.log", "w")  # noqa: SIM115 -- closed at teardown
    deadline = time.monotonic() + wait
    head = None
    try:
        # Ray gives its raylet a fixed 30 s to register; on two loaded cores it sometimes
        # does not, and the head exits: a second start, within the same wait, is the fix.
        for attempt in range(2):
            port, web = free_port(), free_port()
            head = subprocess.Popen(
                [str(ray_bin) if ray_bin.exists() else "ray", "start", "--head", "--block",
                 f"--port={port}", f"--num-cpus={cpus}",
                 *([f"--num-gpus={gpus}"] if gpus else []),
                 f"--include-dashboard={str(dashboard).lower()}", "--dashboard-host=127.0.0.1",
                 f"--dashboard-port={web}", f"--ray-client-server-port={free_port()}",
                 f"--dashboard-agent-listen-port={free_port()}",
                 f"--temp-dir={temp / f'ray{attempt}'}", "--disable-usage-stats"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            address = f"http://127.0.0.1:{web}" if dashboard else f"127.0.0.1:{port}"
            if _came_up(head, address if dashboard else None, temp / "head.log", deadline):
                break
            stop_head(head)
            said = (temp / "head.log").read_text()
            if attempt or time.monotonic() > deadline or "timed out during startup" not in said:
                pytest.fail(f"the Ray head did not come up (exit {head.poll()}):\n"
                            f"{said[-3000:]}")
        yield (f"127.0.0.1:{port}", address) if both else address
    finally:
        if head is not None:
            stop_head(head)
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def _came_up(head: subprocess.Popen, dashboard: str | None, log: Path,
             deadline: float) -> bool:
    """Whether the head answers before it exits or the deadline passes."""
    while not _up(dashboard, log):
        if head.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _up(dashboard: str | None, log: Path) -> bool:
    if dashboard is None:
        return "Ray runtime started" in log.read_text()
    with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(
            f"{dashboard}/api/version", timeout=2) as reply:
        return bool(json.load(reply).get("ray_version"))
    return False


def stop_head(head: subprocess.Popen) -> None:
    """SIGTERM to ``ray start --block`` shuts down the node it started; then the group."""
    if head.poll() is None:
        head.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            head.wait(60)
    with contextlib.suppress(ProcessLookupError, PermissionError):  # stragglers of our group
        os.killpg(head.pid, signal.SIGKILL)
