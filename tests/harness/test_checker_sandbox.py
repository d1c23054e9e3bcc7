"""Reward scripts are untrusted: they must not see the runner's environment, outlive the
check, fork without bound or eat memory, and a failing checker must cost its episode reward 0
with the error recorded, never the run."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

# internal: tests the sandbox's cgroup plumbing
import hscale.harness.tasks._sandbox as sandbox
from hscale.harness import Env, Generation, Harness, Limits, Message, TurnEngine, run_episode
from hscale.harness.tasks import (
    CheckerError,
    ScriptLimits,
    Task,
    containment,
    no_network_prefix,
    run_checker,
)

# internal: tests the checker sandbox's size limit
from hscale.harness.tasks._checkers import ANSWER_ENV_MAX_BYTES

# internal: tests the sandbox's cgroup plumbing
from hscale.harness.tasks._sandbox import _cgroup_parents, cgroup_available, processes_limited

SECRET = "hunter2-do-not-leak"
ALLOWED_ENV = {"PATH", "HOME", "TMPDIR", "PWD", "LANG", "LC_ALL", "WORKSPACE", "FINAL_ANSWER_FILE",
               "FINAL_ANSWER", "TRANSCRIPT_FILE"}
BOMB = 400  # forks the hostile script tries

HOSTILE = '''
import json, os, subprocess, sys, time
EVIDENCE, BOMB = os.environ["WORKSPACE"], {bomb}
found = {{"secret": os.environ.get("HSCALE_TEST_SECRET"), "env": sorted(os.environ)}}
found["child"] = subprocess.Popen(["sleep", "60"]).pid          # a background child
if os.fork() == 0:                                                # a daemon leaving the session
    os.setsid()
    if os.fork() == 0:
        open(EVIDENCE + "/daemon.pid", "w").write(str(os.getpid()))
        time.sleep(1.0)
        open(EVIDENCE + "/daemon-was-here", "w").write("x")
    os._exit(0)
os.wait()
kids = []                                                         # a fork bomb
try:
    for _ in range(BOMB):
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        kids.append(pid)
except OSError as exc:
    found["fork_error"] = type(exc).__name__
found["kids"] = kids
try:                                                              # a memory hog
    hog = bytearray(2 << 30)
    found["memory"] = "allocated"
except MemoryError:
    found["memory"] = "refused"
json.dump(found, open(EVIDENCE + "/found.json", "w"))
hog = bytearray(2 << 30)  # and once more, uncaught: the script fails
print(1.0)
'''


class Says:
    """A policy that answers at once."""

    def __init__(self, text: str) -> None:
        self.text = text

    def generate(self, messages: list[Message]) -> Generation:
        return Generation(self.text)


def _script_task(folder: Path, source: str, name: str = "reward.py") -> Task:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(source)
    return Task(task_id="t", user_query="answer .",
                checker={"kind": "script", "path": str(folder / name)})


def contained() -> bool:
    return containment().strong


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for init."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in "ZX"


@pytest.fixture(params=["prlimit", "preexec_fn"])
def started(request, monkeypatch):
    """How a script gets its limits and cgroup: through ``sh`` and ``prlimit``, which exec it
    (so the runner can vfork), or a ``preexec_fn`` where those two are not installed."""
    if request.param == "prlimit" and sandbox._wrappers() is None:
        pytest.skip("sh or prlimit is not installed here")
    if request.param == "preexec_fn":
        monkeypatch.setattr(sandbox, "_wrappers", lambda: None)
    return request.param


def test_a_hostile_reward_script_gets_nothing_and_costs_only_its_episode(tmp_path,
                                                                         monkeypatch, started):
    monkeypatch.setenv("HSCALE_TEST_SECRET", SECRET)
    bomb = BOMB if processes_limited() else 0  # never set off an unbounded bomb
    task = _script_task(tmp_path / "reward", HOSTILE.format(bomb=bomb))
    with Env(task, root=tmp_path) as env:  # the evidence is in the workspace, read before close
        start = time.monotonic()
        assert env.score("plum") == 0.0
        assert time.monotonic() - start < 9  # well inside the 10 s checker limit
        assert env.checker_error.startswith("checker: exited with 1")
        assert "MemoryError" in env.checker_error

        evidence = env.workspace
        found = json.loads((evidence / "found.json").read_text())
        assert found["secret"] is None and set(found["env"]) <= ALLOWED_ENV
        assert found["memory"] == "refused"
        if bomb:
            assert found["fork_error"] == "BlockingIOError" and len(found["kids"]) < 100
        if contained() or cgroup_available():  # a child that left the session dies too
            time.sleep(1.5)
            assert not (evidence / "daemon-was-here").exists()
        if not contained():  # its PIDs are this machine's: they must be gone
            assert _dead(found["child"]) and all(_dead(pid) for pid in found["kids"])

    # the process goes on: the next episode is scored as usual
    good = _script_task(tmp_path / "good", 'import os\nprint(1.0 if open(os.environ['
                                           '"FINAL_ANSWER_FILE"]).read() == "plum" else 0.0)\n')
    after = run_episode(Says("plum"), Harness.from_names(), good, workspace_root=tmp_path)
    assert (after.reward, after.error) == (1.0, "")


def test_a_failing_reward_script_costs_its_episode_reward_zero(tmp_path):
    task = _script_task(tmp_path / "reward", "import sys\nsys.exit(3)\n")
    episode = run_episode(Says("plum"), Harness.from_names(), task, workspace_root=tmp_path)
    assert (episode.reward, episode.final_answer) == (0.0, "plum")
    assert episode.error == "checker: exited with 3"


@pytest.mark.parametrize("answer", ["plum", "a\x00b", "x" * 200_000, "é\udcff" * 10])
def test_the_final_answer_travels_in_a_file_of_any_size(tmp_path, answer):
    source = ("import os, sys\n"
              "data = open(os.environ['FINAL_ANSWER_FILE'], 'rb').read()\n"
              "inline = os.environb[b'FINAL_ANSWER']\n"
              "ok = data == open(sys.argv[0] + '.want', 'rb').read()\n"
              f"short = len(data) <= {ANSWER_ENV_MAX_BYTES} and b'\\0' not in data\n"
              "ok = ok and inline == (data if short else b'')\n"
              "print(float(ok))\n")
    task = _script_task(tmp_path / "reward", source)
    (tmp_path / "reward" / "reward.py.want").write_bytes(
        answer.encode("utf-8", "surrogateescape"))
    episode = run_episode(Says(answer), Harness.from_names(), task, workspace_root=tmp_path)
    assert (episode.reward, episode.error) == (1.0, "")


def test_the_secret_does_not_reach_a_shell_script(tmp_path, monkeypatch):
    monkeypatch.setenv("HSCALE_TEST_SECRET", SECRET)
    task = _script_task(tmp_path / "reward", 'env | grep -q hunter2 && echo 1.0 || echo 0.0\n'
                        '[ "$HOME" != "$WORKSPACE" ] && [ -d "$HOME" ] || exit 5\n',
                        name="reward.sh")
    with Env(task, root=tmp_path) as env:
        assert env.score("") == 0.0 and env.checker_error == ""


@pytest.mark.parametrize("source, error", [
    ("import sys\nsys.stdout.write('x' * (20 << 20))\n", "checker: exited with 1 (OSError: "
     "[Errno 27] File too large)"),  # Python ignores SIGXFSZ; other programs die of it
    ("import os\nos.kill(os.getpid(), 9)\n", "checker: killed by SIGKILL"),
    ("import time\ntime.sleep(30)\n", "checker: timeout after 0.5 s"),
    ("print('lots')\n", "checker: 'lots' is not a number"),
    ("print(1.5)\n", "checker: reward 1.5 outside [0, 1]"),
    ("", "checker: printed nothing"),
])
def test_a_failing_script_scores_zero_with_a_short_error(tmp_path, source, error):
    engine = TurnEngine(Harness.from_names(), _script_task(tmp_path / "reward", source),
                        workspace_root=tmp_path)
    engine.env.limits = Limits(checker_seconds=0.5)
    engine.submit(Generation("done"))
    episode = engine.finish()
    assert episode.reward == 0.0 and episode.error.startswith(error), episode.error
    assert list(tmp_path.glob("hscale-ws-*")) == []  # the workspace is gone all the same


@pytest.mark.parametrize("checker, error", [
    (lambda ws, ans: 1 / 0, "checker: ZeroDivisionError: division by zero"),
    (lambda ws, ans: time.sleep(5), "checker: timeout after 0.3 s"),
    (lambda ws, ans: "many", "checker: 'many' is not a number"),
])
def test_a_failing_python_checker_scores_zero_with_a_short_error(tmp_path, checker, error):
    task = Task(task_id="t", user_query="answer .", checker=checker)
    engine = TurnEngine(Harness.from_names(), task, workspace_root=tmp_path)
    engine.env.limits = Limits(checker_seconds=0.3)
    engine.submit(Generation("done"))
    episode = engine.finish()
    assert (episode.reward, episode.error) == (0.0, error)


def test_a_policy_error_and_a_checker_error_are_both_kept(tmp_path):
    class Broken:
        def generate(self, messages: list[Message]) -> Generation:
            raise RuntimeError("boom")

    task = Task(task_id="t", user_query="answer .", checker=lambda ws, ans: 1 / 0)
    episode = run_episode(Broken(), Harness.from_names(), task, workspace_root=tmp_path)
    assert episode.error == "RuntimeError: boom; checker: ZeroDivisionError: division by zero"


def test_run_checker_still_raises_for_task_data_checks(tmp_path):
    script = tmp_path / "r.py"
    script.write_text("import sys\nsys.exit(4)\n")
    with pytest.raises(CheckerError, match="exited with 4") as info:
        run_checker({"kind": "script", "path": str(script)}, tmp_path, "")
    assert info.value.short == "checker: exited with 4"


def test_limits_can_be_set_per_call(tmp_path, started):
    script = tmp_path / "r.py"
    script.write_text("x = bytearray(300 << 20)\nprint(1.0)\n")
    spec = {"kind": "script", "path": str(script)}
    assert run_checker(spec, tmp_path, "") == 1.0
    with pytest.raises(CheckerError, match="MemoryError"):
        run_checker(spec, tmp_path, "", limits=ScriptLimits(memory_bytes=200 << 20))


def test_scripts_leave_no_cgroup_behind(tmp_path, started):
    if not cgroup_available():
        pytest.skip("no pids cgroup can be made here")
    script = tmp_path / "r.py"
    script.write_text("print(1.0)\n")
    for _ in range(3):
        assert run_checker({"kind": "script", "path": str(script)}, tmp_path, "") == 1.0
    assert [p for parent in _cgroup_parents()
            for p in parent.glob(f"hscale-check-{os.getpid()}-*")] == []


@pytest.mark.skipif(not no_network_prefix(), reason="unshare cannot make a network namespace")
def test_a_reward_script_has_no_network(tmp_path):
    """Not even this machine's loopback: a server listening here is out of reach."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    source = ("import socket\n"
              "try:\n"
              f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n"
              "    print(1.0)\n"
              "except OSError:\n"
              "    print(0.0)\n")
    try:
        task = _script_task(tmp_path, source)
        assert run_checker(task.checker, tmp_path, "") == 0.0
    finally:
        server.close()
