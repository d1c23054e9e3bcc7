"""Reward scripts run as root must not get out: every route a tester used, in each strong
containment this machine gives (bubblewrap and the kernel calls), must fail, and the runner
must not share a script's fate."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from hscale.harness import Env, Limits
from hscale.harness.tasks import Task

# internal: tests the jail's escape probe
from hscale.harness.tasks._jail import probe

from ..cli import hscale

SECRET = "hunter2-do-not-leak"


@pytest.fixture(params=["bubblewrap", "namespaces"])
def jail(request, monkeypatch):
    """The containment under test, as HSCALE_CONTAINMENT chooses it."""
    if probe(request.param).kind != request.param:
        pytest.skip(f"{request.param} containment does not work here: {probe().line}")
    monkeypatch.setenv("HSCALE_CONTAINMENT", request.param)
    return request.param


def _score(tmp_path: Path, source: str, answer: str = "", seconds: float = 10) -> tuple[
        float, str, Path]:
    """The reward a shell reward script gives, its short error, and its (still open)
    workspace's path; the workspace is gone once the test's tmp_path is."""
    folder = tmp_path / "reward"
    folder.mkdir(exist_ok=True)
    (folder / "reward.sh").write_text(source)
    task = Task(task_id="t", user_query="q", checker={"kind": "script",
                                                      "path": str(folder / "reward.sh")})
    env = Env(task, root=tmp_path)
    env.limits = Limits(checker_seconds=seconds)
    return env.score(answer), env.checker_error, env.workspace


def _running(token: str) -> list[int]:
    """This machine's processes whose command line holds ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid():
            try:
                if token.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    found.append(int(name))
            except OSError:
                pass
    return found


def test_no_other_process_environment_is_readable(jail, tmp_path):
    holder = subprocess.Popen(["sleep", "30"], env={**os.environ, "API_KEY": SECRET})
    try:
        reward, error, _ = _score(tmp_path, f"""
for f in /proc/$PPID/environ /proc/1/environ /proc/{holder.pid}/environ /proc/*/environ; do
  grep -qa {SECRET} "$f" 2>/dev/null && {{ echo 1.0; exit 0; }}
done
[ -e /proc/{os.getpid()} ] && {{ echo 0.5; exit 0; }}
echo 0.0
""")
    finally:
        holder.kill()
        holder.wait()
    assert (reward, error) == (0.0, "")


def test_a_script_sees_no_process_of_the_machine(jail, tmp_path):
    reward, error, _ = _score(tmp_path, """
n=$(ls -d /proc/[0-9]* | wc -l)
[ "$n" -le 8 ] && echo 0.0 || echo 1.0
""")
    assert (reward, error) == (0.0, "")


@pytest.mark.parametrize("route", ["setsid", "cgroup", "nohup"])
def test_nothing_outlives_its_check(jail, tmp_path, route):
    token = f"hscale-escape-{uuid.uuid4().hex[:8]}"
    leave = {"setsid": "setsid sh -c 'exec -a {t} sleep 30' </dev/null >/dev/null 2>&1 &",
             "nohup": "nohup sh -c 'exec -a {t} sleep 30' </dev/null >/dev/null 2>&1 &",
             "cgroup": ("for f in /sys/fs/cgroup/cgroup.procs /sys/fs/cgroup/*/cgroup.procs; "
                        "do echo $$ > $f 2>/dev/null; done; "
                        "setsid sh -c 'exec -a {t} sleep 30' </dev/null >/dev/null 2>&1 &")}
    reward, error, workspace = _score(tmp_path, leave[route].format(t=token) + "\n"
                                      "( sleep 1; echo late > \"$WORKSPACE/late\" ) &\n"
                                      "echo 1.0\n")
    assert (reward, error) == (1.0, "")
    assert _running(token) == []
    time.sleep(1.5)
    assert not (workspace / "late").exists()


def test_no_network_not_even_the_runners_namespace(jail, tmp_path):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    try:
        reward, error, _ = _score(tmp_path, f"""
reach() {{ timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/{port}" 2>/dev/null; }}
reach && {{ echo 1.0; exit 0; }}
for ns in /proc/$PPID/ns/net /proc/1/ns/net /proc/{os.getpid()}/ns/net; do
  nsenter --net=$ns true 2>/dev/null && {{ echo 0.9; exit 0; }}
  nsenter --net=$ns bash -c "exec 3<>/dev/tcp/127.0.0.1/{port}" 2>/dev/null \
    && {{ echo 0.8; exit 0; }}
done
unshare --net true 2>/dev/null && {{ echo 0.7; exit 0; }}
timeout 3 bash -c "exec 3<>/dev/tcp/1.1.1.1/53" 2>/dev/null && {{ echo 0.6; exit 0; }}
echo 0.0
""")
    finally:
        server.close()
    assert (reward, error) == (0.0, "")


def test_a_script_cannot_stop_or_kill_the_runner(jail, tmp_path):
    start = time.monotonic()
    reward, error, _ = _score(tmp_path, f"""
kill -STOP $PPID 2>/dev/null; kill -STOP {os.getpid()} 2>/dev/null; kill -STOP {os.getppid()} \
  2>/dev/null; kill -STOP 1 2>/dev/null; kill -STOP -1 2>/dev/null
echo 1.0
""", seconds=5)
    assert time.monotonic() - start < 8  # neither hung nor stopped: the watchdog ends it
    assert error in ("", "checker: timeout after 5 s")
    assert reward in (0.0, 1.0)


def test_writes_outside_the_workspace_fail(jail, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    reward, error, workspace = _score(tmp_path, f"""
echo x > {outside}/file 2>/dev/null
echo x > "$(dirname "$0")/planted" 2>/dev/null
echo x > /tmp/hscale-escape-{os.getpid()} 2>/dev/null
mount -t tmpfs none {outside} 2>/dev/null
echo x > "$WORKSPACE/mine" && echo 1.0
""")
    assert (reward, error) == (1.0, "")
    assert list(outside.iterdir()) == [] and not (tmp_path / "reward" / "planted").exists()
    assert not Path(f"/tmp/hscale-escape-{os.getpid()}").exists()
    assert (workspace / "mine").read_text() == "x\n"


def test_doctor_names_the_containment(jail):
    done = hscale("doctor", env={"HSCALE_CONTAINMENT": jail})
    assert done.returncode == 0
    line = next(line for line in done.stdout.splitlines() if line.startswith("reward scripts"))
    assert ("bubblewrap" if jail == "bubblewrap" else "kernel namespaces") in line
    assert "own PID, network" in line


def test_doctor_warns_when_there_is_no_containment():
    done = hscale("doctor", env={"HSCALE_CONTAINMENT": "limits"})
    assert "reward scripts: resource limits, a session and a pids cgroup only" in done.stdout
