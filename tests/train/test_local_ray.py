"""hscale run --ray-address with the local backend: addresses, and the task's work on a node
that cannot see the run folder (a copy, its files sent back every step, resumable); then,
marked slow, a local CPU Ray head (started here) running two demo arms as Ray tasks with the
rows of the worker pool, a task killed mid-run whose run resumes when run again, and a Ctrl-C
that cancels the tasks it started."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.errors import HscaleError
from hscale.train.planning import factor_space

# internal: tests the Ray jobs/tasks modules
from hscale.train.ray_cluster import _tasks as ray_tasks
from tests.ray_head import RAY_ENV, local_ray_head
from tests.train.test_runner import results, write_spec

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
ARMS = ("single-harness", "structured-18")


# -------------------------------------------------------------------------------- addresses


@pytest.mark.parametrize("address, open_ports, expect", [
    ("head:6379", {6379}, "head:6379"), ("head", {6379}, "head:6379"),
    ("ray://head:10001", {10001}, "ray://head:10001"),
    ("http://head:8265", {6379, 10001}, "head:6379"),
    ("head:8265", {6379}, "head:6379"),  # the port says it is the dashboard
    ("http://head:8265", {10001}, "ray://head:10001"),
    ("local", set(), "local"),
])
def test_addresses_ray_init_takes(monkeypatch, address, open_ports, expect):
    monkeypatch.setattr(ray_tasks, "_reachable", lambda host, port: port in open_ports)
    assert ray_tasks.driver_address(address) == expect


@pytest.mark.parametrize("address, needle, hint", [
    ("http://head:8265", "is a dashboard", "head:PORT"),
    ("head:6379", "no Ray cluster at head:6379", "ray://HEAD:10001"),
    ("ray://head:10001", "no Ray cluster at ray://head:10001", "HEAD:6379"),
    ("  ", "empty", "auto"),
])
def test_addresses_nobody_answers_at_are_one_line_errors(monkeypatch, address, needle, hint):
    monkeypatch.setattr(ray_tasks, "_reachable", lambda host, port: False)
    with pytest.raises(HscaleError, match=needle) as err:
        ray_tasks.driver_address(address)
    assert hint in (err.value.hint or "")


def test_a_closed_port_is_refused_at_once():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    began = time.monotonic()
    with pytest.raises(HscaleError, match=f"no Ray cluster at 127.0.0.1:{port}"):
        ray_tasks.driver_address(f"127.0.0.1:{port}")
    assert time.monotonic() - began < 10  # ray.init itself would wait for minutes


def test_the_mailbox_keeps_only_the_latest_files():
    box = ray_tasks.Mailbox()
    box.put("run", {"step": 1, "files": {"a": b"1"}})
    box.put("run", {"step": 2, "files": {"a": b"2"}})
    taken = box.take("run")
    assert [m["step"] for m in taken] == [1, 2] and "files" not in taken[0]
    assert taken[1]["files"] == {"a": b"2"} and box.take("run") == []


# ------------------------------------------------------------------ a node without the folder


def test_a_task_without_the_folder_trains_a_copy_whose_files_resume(tmp_path):
    """The task cannot see the run folder (no marker): it trains a copy and reports each
    step's files, which the driver writes; it dies after a step; the next task resumes from
    what the driver's folder holds and ends with the rows of an uninterrupted run."""
    pytest.importorskip("torch")
    pytest.importorskip("verl")
    from hscale.train.backends import LocalBackend
    from hscale.train.planning import plan
    from hscale.train.policy import available
    from hscale.train.running import run_experiment

    # the shipped base model: nothing to build
    spec = write_spec(tmp_path, steps=2, arms={"structured-18": {}}, model="hscale-tiny")
    run_experiment(spec, tmp_path / "clean")
    (planned,) = plan(spec, tmp_path / "far")
    run_dir, manifest = planned.path, planned.manifest

    def models() -> dict[str, bytes]:
        return {manifest.model: available(manifest.model).read_bytes()}

    work = LocalBackend().ray_work(run_dir, manifest)

    class NodeDied(Exception):
        pass

    def dies_after_step_1(message: dict) -> None:  # the driver's side, then the node dies
        if "files" in message:
            ray_tasks.write_back(run_dir, message["files"])
            if message["step"] == 1:
                raise NodeDied

    with pytest.raises(NodeDied):
        ray_tasks.execute(str(run_dir), manifest, "token", work, lambda: ray_tasks.folder_files(
            run_dir), models, dies_after_step_1)
    assert pd.read_parquet(run_dir / "train.parquet").step.tolist() == [0]
    heard: list[dict] = []
    files = ray_tasks.execute(str(run_dir), manifest, "token", work,
                              lambda: ray_tasks.folder_files(run_dir), models, heard.append)
    assert heard[0] == {"folder": "copied"} and heard[1]["step"] == 1  # resumed at step 1
    assert files is not None and set(files) >= {"train.parquet", "eval.parquet"}
    ray_tasks.write_back(run_dir, files)
    clean = tmp_path / "clean" / "small" / "structured-18" / "0"
    for got, want in zip(results(run_dir), results(clean), strict=True):
        pd.testing.assert_frame_equal(got, want)


# ----------------------------------------------------------------------------- a real head


@pytest.fixture(scope="module")
def ray_head():
    """A 2-CPU Ray head (no dashboard): its GCS address."""
    with local_ray_head(cpus=2, dashboard=False, wait=120) as address:
        yield address


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    """experiments/demo.yaml with two arms."""
    body = yaml.safe_load((ROOT / "experiments" / "demo.yaml").read_text())
    body["arms"] = {arm: body["arms"][arm] for arm in ARMS}
    body["evaluation"]["base_model"] = False  # the two arms' runs alone
    path = tmp_path_factory.mktemp("spec") / "demo2.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


def hscale_run(spec: Path, out: Path, *extra: str, wait: bool = True):
    """``hscale run SPEC --quick --out OUT ...``: its result, or the process (wait=False),
    which takes Ctrl-C as a terminal's would (a background job's SIGINT may be ignored)."""
    args = [sys.executable, "-m", "hscale.cli", "run", str(spec), "--quick", "--out", str(out),
            *extra]
    env = {**os.environ, **RAY_ENV}
    if wait:
        return subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.fixture(scope="module")
def pool(spec, tmp_path_factory) -> Path:
    """The same two arms run by the worker pool: the rows every Ray run must end with."""
    pytest.importorskip("torch")
    pytest.importorskip("verl")
    out = tmp_path_factory.mktemp("pool")
    run = hscale_run(spec, out, "--workers", "2")
    assert run.returncode == 0, run.stderr[-2000:]
    return out / "demo-quick"


def status(run_dir: Path) -> dict:
    return json.loads((run_dir / "status.json").read_text())


def assert_rows_of_the_pool(runs: Path, pool: Path) -> None:
    for arm in ARMS:
        for got, want in zip(results(runs / arm / "0"), results(pool / arm / "0"), strict=True):
            pd.testing.assert_frame_equal(got, want)


def wait_for_task(run_dir: Path, rows: int, other_than: int | None = None,
                  timeout: float = 120) -> int:
    """The pid of the worker running the run's task, once train.parquet has ``rows`` rows."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError, ValueError):
            pid = status(run_dir).get("ray_pid")
            path = run_dir / "train.parquet"
            # read the bytes once: the writer may replace the file between pyarrow's opens
            done = len(pd.read_parquet(io.BytesIO(path.read_bytes()))) if path.is_file() else 0
            if pid and pid != other_than and done >= rows:
                return pid
        time.sleep(0.05)
    pytest.fail(f"{run_dir}: no task with {rows} rows within {timeout} s")


def gone(pid: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with contextlib.suppress(OSError):  # a zombie has finished too
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
def test_ray_tasks_end_with_the_rows_of_the_worker_pool_through_a_kill_and_a_ctrl_c(
        ray_head, spec, pool, tmp_path):
    """Two runs as Ray tasks; kill -9 one task's worker after a step: that run fails, the
    other completes as a task on the run folder itself. Run again, Ctrl-C once the resumed
    task runs: it is cancelled, its run INTERRUPTED. Run again: every run is COMPLETED with
    the rows of the worker pool."""
    runs = tmp_path / "demo-quick"
    run_dir, other = runs / "structured-18" / "0", runs / "single-harness" / "0"
    proc = hscale_run(spec, tmp_path, "--ray-address", ray_head, wait=False)
    killed = wait_for_task(run_dir, rows=1)
    os.kill(killed, signal.SIGKILL)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 1 and "1 of 2 runs completed" in out, out[-2000:]
    record = status(run_dir)
    assert record["state"] == "FAILED", "the kill should land mid-run"
    assert "resume" in record["error"] and record["ray_pid"] == killed
    assert 1 <= len(pd.read_parquet(run_dir / "train.parquet")) <= 4
    record = status(other)
    assert record["state"] == "COMPLETED" and record["backend"] == "local"
    assert record["ray_address"] == ray_head and record["ray_folder"] == "shared"
    assert isinstance(record["ray_pid"], int) and record["ray_task_id"]
    assert not (other / ray_tasks.MARKER).exists()

    proc = hscale_run(spec, tmp_path, "--ray-address", ray_head, wait=False)
    resumed = wait_for_task(run_dir, rows=1, other_than=killed)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, out[-2000:]
    assert status(run_dir)["state"] == "INTERRUPTED"
    assert gone(resumed), "Ctrl-C should cancel the task it started"
    assert not (run_dir / ray_tasks.MARKER).exists()

    run = hscale_run(spec, tmp_path, "--ray-address", ray_head)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "2 of 2 runs completed" in run.stdout
    assert {status(runs / arm / "0")["state"] for arm in ARMS} == {"COMPLETED"}
    assert_rows_of_the_pool(runs, pool)


@pytest.mark.slow
def test_a_space_with_a_plugin_runs_as_ray_tasks(ray_head, tmp_path):
    """experiments/new-space.yaml (its plugin shipped with the tasks) trains and evaluates
    every run on the cluster, each row a label of the new space."""
    import shutil

    from hscale.contracts import Manifest

    for name in ("new-space.yaml", "new_space_plugin.py"):
        shutil.copy(ROOT / "experiments" / name, tmp_path / name)
    done = hscale_run(tmp_path / "new-space.yaml", tmp_path / "runs", "--ray-address",
                      ray_head)
    assert done.returncode == 0 and "3 of 3 runs completed" in done.stdout, \
        done.stdout[-2000:] + done.stderr[-2000:]
    run_dir = tmp_path / "runs" / "new-space-quick" / "structured-36" / "0"
    rows = pd.read_parquet(run_dir / "eval.parquet")
    space = factor_space(Manifest.read(run_dir))
    assert all(space.contains(h) for h in rows[rows.setting == "in_space"].harness)
    assert status(run_dir)["ray_address"] == ray_head
