"""The shell tool ``run``: a command in, its exit code and bounded output out, contained as a
reward script is; shown and parsed by every tool interface under its own name and syntax,
and only for tasks whose benchmark gives it (the built-in world keeps its five tools)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

# internal: tests the sandbox's cgroup plumbing
import hscale.harness.tasks._sandbox as sandbox
from hscale.errors import HscaleError
from hscale.harness import (
    Env,
    Generation,
    Harness,
    Settings,
    ToolCall,
    TurnEngine,
    open_benchmark,
    run_episode,
)

# internal: tests the runner's limits and hashing
from hscale.harness._task_sources import RUNNER_LIMITS, RUNNER_TOOLS

# internal: tests against the canonical tool tables
from hscale.harness._types import BUILTIN_TOOLS, CANONICAL_TOOLS
from hscale.harness.tasks import Task, containment

SECRET = "hscale-shell-secret-7f3a"
EVERY = tuple(CANONICAL_TOOLS)
INTERFACES = ["json_call", "xml_call", "python_call", "shell", "action_lines"]


class ReplayPolicy:
    """A policy that writes the given turns, in order."""

    def __init__(self, turns: list[str]) -> None:
        self.turns = list(turns)

    def generate(self, messages) -> Generation:
        return Generation(self.turns.pop(0))


def _task(tools=EVERY, limits=None, checker=None, files=None) -> Task:
    return Task(task_id="shell-1", user_query="run the script .",
                input_files=files or {"a.txt": "hello\n", "add.py": "print(2 + 3)\n"},
                checker=checker or {"kind": "answer", "expected": "5"}, tools=tools,
                limits=limits or {})


def _run(env: Env, command: str) -> str:
    result = env.execute(ToolCall("run", {"command": command}))
    assert result.ok, result
    return result.output


def test_a_command_runs_in_the_workspace_and_shows_its_exit_and_output(tmp_path):
    with Env(_task(), root=tmp_path) as env:
        assert _run(env, "python3 add.py") == "exit 0\n5"
        assert _run(env, "cat a.txt; echo oops >&2; exit 3") == "exit 3\nhello\noops"
        assert _run(env, "python3 -c 'print(1)' > out.txt") == "exit 0"
        assert env.execute(ToolCall("read", {"path": "out.txt"})).output == "1\n"
        assert _run(env, "ls") == "exit 0\na.txt\nadd.py\nout.txt"
        assert not env.execute(ToolCall("run", {"command": "  "})).ok


def test_output_is_the_end_of_each_stream_in_the_tasks_window(tmp_path):
    with Env(_task(limits={"max_output_chars": 100}), root=tmp_path) as env:
        result = env.execute(ToolCall("run", {"command": "seq 1 1000; echo boom >&2"}))
        assert result.output.startswith("exit 0\n[") and "characters cut]" in result.output
        assert "\n1000\n" in result.output and result.output.endswith("\nboom")
        assert len(result.output) <= 100 and not result.truncated
        both = env.execute(ToolCall("run", {"command": "seq 1 1000; seq 5001 6000 >&2"}))
        assert not both.truncated and len(both.output) <= 100
        assert "\n1000\n" in both.output and both.output.endswith("\n6000")


def test_a_command_that_floods_the_workspace_empties_it(tmp_path):
    with Env(_task(limits={"max_entries": 50}), root=tmp_path) as env:
        flood = env.execute(ToolCall("run", {"command": "mkdir d && touch d/{1..200}"}))
        assert not flood.ok and "filled the workspace past its limits" in flood.error
        assert list(env.workspace.iterdir()) == []


def test_the_shell_is_refused_where_nothing_contains_it(tmp_path, monkeypatch):
    monkeypatch.setenv("HSCALE_CONTAINMENT", "limits")
    with Env(_task(), root=tmp_path) as env:
        result = env.execute(ToolCall("run", {"command": "echo hi > x.txt"}))
        assert not result.ok and "contained shell" in result.error
        assert not (env.workspace / "x.txt").exists()


@pytest.mark.skipif(not containment().mounts, reason="no mount namespace with bubblewrap here")
def test_a_link_left_at_reward_never_leads_the_runner_outside(tmp_path):
    """The runner copies reward/ into the workspace outside the jail: a link the agent made
    there is removed, not followed."""
    task_dir = tmp_path / "task" / "reward"
    task_dir.mkdir(parents=True)
    (task_dir / "reward.sh").write_text("echo 1.0\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    task = _task(checker={"kind": "script", "path": str(task_dir / "reward.sh"),
                          "mount": "/root/.openclaw/workspace"})
    with Env(task, root=tmp_path / "ws") as env:
        _run(env, f"ln -s {outside} reward")
        assert env.score("") == 1.0 and env.checker_error == ""
        assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
        (env.workspace / "reward").rename(env.workspace / "gone")
        _run(env, f"mkdir reward && ln -s {outside}/keep.txt reward/reward.sh")
        assert env.score("") == 1.0
    assert (outside / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("text", ["$ tail -c +\u00b2 a.txt", "$ tail -c +" + "9" * 5000 + " a.txt",
                                  "$ tail -c +\u0663 a.txt"])
def test_odd_digits_in_a_read_window_are_a_parse_error(text):
    harness = Harness.from_names({"tool_interface": "shell"})
    harness.start("q", EVERY)
    assert harness.parse(text).__class__.__name__ == "ParseError"


def test_a_call_the_workflow_does_not_run_is_not_in_the_transcript(tmp_path):
    from hscale.harness import harness_named

    engine = TurnEngine(harness_named("S0-T0-O0-C0-W1"), _task(), max_turns=6,
                        workspace_root=tmp_path)
    early = engine.harness.format_call(ToolCall("read", {"path": "a.txt"}))
    assert engine.take(Generation(early)) is None  # the plan comes first: nothing runs
    assert "tool_call" not in engine.transcript[-1]
    engine.env.close()


def test_a_template_writes_any_tool_and_a_set_without_read_is_described(tmp_path):
    from hscale.harness import harness_named

    template = harness_named("S0-T0-O0-C0-W0")
    run = ToolCall("run", {"command": "ls"})
    assert template.format_call(run)  # scripted policies write with the template
    harness = template.fresh()
    harness.start("q", ("write", "run"))
    assert "write_file" in harness.render_system() and "read_file" not in harness.render_system()



def test_a_command_gets_a_scrubbed_environment_and_no_network(tmp_path, monkeypatch):
    monkeypatch.setenv("HSCALE_SHELL_SECRET", SECRET)
    with Env(_task(), root=tmp_path) as env:
        shown = _run(env, "env")
        assert SECRET not in shown and "HSCALE_SHELL_SECRET" not in shown
        probe = ("python3 -c 'import socket; s = socket.socket(); s.settimeout(2); "
                 "s.connect((\"1.1.1.1\", 80)); print(\"connected\")'")
        assert "connected" not in _run(env, probe)


@pytest.mark.skipif(not containment().strong, reason="no containment of its own here")
def test_a_command_cannot_write_outside_the_workspace(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    with Env(_task(), root=tmp_path / "ws") as env:
        out = _run(env, f"touch {outside}/x 2>/dev/null; echo $?")
        assert out == "exit 0\n1" and not (outside / "x").exists()


def _descendants(leader: int) -> dict[int, str]:
    """pid -> command name of every process below ``leader``."""
    parent, name = {}, {}
    for entry in Path("/proc").iterdir():
        try:
            comm, _, rest = (entry / "stat").read_text().partition(") ")
            parent[int(entry.name)] = int(rest.split()[1])
            name[int(entry.name)] = comm.partition(" (")[2]
        except (OSError, ValueError, IndexError):
            continue
    below, grew = {leader}, True
    while grew:
        more = {pid for pid, ppid in parent.items() if ppid in below} - below
        below |= more
        grew = bool(more)
    return {pid: name[pid] for pid in below - {leader}}


def test_a_command_stopped_at_its_limit_shows_what_it_wrote_by_then_and_no_more(tmp_path,
                                                                               monkeypatch):
    kill_all = sandbox._kill_all

    def sleep_first(leader: int, group) -> None:  # as on a loaded machine: the kill reaches
        for pid, name in _descendants(leader).items():  # a shell's child before the shell
            if name == "sleep":
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.3)
        kill_all(leader, group)

    monkeypatch.setattr(sandbox, "_kill_all", sleep_first)
    with Env(_task(limits={"run_seconds": 1}), root=tmp_path) as env:
        # the loop's shell reports its killed sleep ("Killed") before its own kill
        command = "echo started; (while true; do sleep 0.2; done) ; echo never"
        assert _run(env, command) == "timeout after 1 s\nstarted"


def test_a_command_is_stopped_at_its_limit_with_everything_it_started(tmp_path):
    with Env(_task(limits={"run_seconds": 1}), root=tmp_path) as env:
        start = time.monotonic()
        beat = "(while true; do echo . >> beat.txt; sleep 0.1; done &) ; sleep 30"
        assert _run(env, beat) == "timeout after 1 s" and time.monotonic() - start < 10
        beats = env.workspace / "beat.txt"
        time.sleep(0.3)
        seen = beats.stat().st_size
        time.sleep(0.5)  # a heart still beating would have written 5 more lines
        assert seen > 0 and beats.stat().st_size == seen


def test_a_task_without_the_tool_cannot_run_commands(tmp_path):
    task = _task(tools=BUILTIN_TOOLS)
    with Env(task, root=tmp_path) as env:
        result = env.execute(ToolCall("run", {"command": "ls"}))
    assert not result.ok and result.error == ("unknown tool run ; tools are list , read , "
                                              "write , search , calc")


@pytest.mark.parametrize("interface", INTERFACES)
def test_every_interface_shows_and_parses_the_shell_for_a_task_that_has_it(interface,
                                                                          tmp_path):
    harness = Harness.from_names({"tool_interface": interface})
    task = _task()
    call = ToolCall("run", {"command": "python3 add.py"})
    engine = TurnEngine(harness, task, max_turns=4, workspace_root=tmp_path)
    own = engine.harness.tool_interface.format_call(call)
    assert engine.harness.tool_interface.spec("run").name in engine.view()[0].content
    engine.submit(Generation(own))
    engine.submit(Generation("5"))
    episode = engine.finish()
    assert [c for c, _ in episode.tool_calls] == [call]
    assert episode.tool_calls[0][1].output == "exit 0\n5" and episode.reward == 1.0
    # the same turns under the built-in world's tools: the call is no tool at all
    plain = run_episode(ReplayPolicy([own, "5"]), harness, _task(tools=BUILTIN_TOOLS),
                        max_turns=4)
    assert plain.tool_calls == [] and plain.parse_errors == 1


CHECK_TRANSCRIPT = """import json, os
turns = json.load(open(os.environ["TRANSCRIPT_FILE"]))
ran = [t for t in turns if t.get("tool_call", {}).get("name") == "run"]
shown = [t for t in turns if t["role"] == "tool" and t["name"] == "run" and t["ok"]]
print(1.0 if ran and shown and shown[0]["content"] == "exit 0\\n5" and
      turns[0] == {"role": "user", "content": "run the script ."} else 0.0)
"""


def test_the_checker_reads_the_episodes_transcript(tmp_path):
    (tmp_path / "reward.py").write_text(CHECK_TRANSCRIPT)
    task = _task(checker={"kind": "script", "path": str(tmp_path / "reward.py")})
    harness = Harness.from_names({})
    run = harness.fresh()
    run.start(task.user_query, task.tools)
    call = run.tool_interface.format_call(ToolCall("run", {"command": "python3 add.py"}))
    episode = run_episode(ReplayPolicy([call, "5"]), harness, task, max_turns=4)
    assert episode.reward == 1.0 and episode.error == ""
    silent = run_episode(ReplayPolicy(["5"]), harness, task, max_turns=4)
    assert silent.reward == 0.0


def test_real_formats_give_the_runners_tools_and_a_spec_replaces_them(tmp_path):
    folder = tmp_path / "tasks"
    task = _task(tools=BUILTIN_TOOLS)
    from hscale.harness.tasks import write_tasks

    write_tasks([task], folder.with_suffix(".jsonl"))
    own = open_benchmark("jsonl", str(folder.with_suffix(".jsonl"))).all_tasks()[0]
    assert own.tools == BUILTIN_TOOLS and own.limits == {}  # hscale's own lists keep theirs
    real = Path(__file__).resolve().parents[3] / "shared" / "realtasks" / "pinchbench"
    if real.is_dir():
        first = open_benchmark("pinchbench", str(real / "tasks")).all_tasks()[0]
        assert first.tools == RUNNER_TOOLS and first.limits == RUNNER_LIMITS
    chosen = Settings(tools=("read", "run"), limits=(("max_turns", 5),))
    mine = open_benchmark("jsonl", str(folder.with_suffix(".jsonl")), settings=chosen)
    assert mine.all_tasks()[0].tools == ("read", "run")
    assert mine.all_tasks()[0].limits == {"max_turns": 5}
    engine = TurnEngine(Harness.from_names({}), mine.all_tasks()[0], max_turns=30,
                        workspace_root=tmp_path)
    assert engine.max_turns == 5
    engine.env.close()


@pytest.mark.parametrize("bad, word", [({"tools": ("read", "sudo")}, "unknown tool 'sudo'"),
                                       ({"tools": ()}, "non-empty"),
                                       ({"limits": {"max_turn": 3}}, "unknown limit"),
                                       ({"limits": {"max_turns": 0}}, "from 1 to 200"),
                                       ({"limits": {"run_seconds": True}}, "run_seconds")])
def test_bad_tools_and_limits_are_one_line(bad, word):
    with pytest.raises(HscaleError, match=word):
        Task(task_id="t", user_query="q", checker={"kind": "answer", "expected": "x"}, **bad)


def test_a_spec_sets_a_benchmarks_tools_and_limits_or_is_refused_in_one_line(tmp_path):
    from tests.cli import hscale

    rows = tmp_path / "tasks.jsonl"
    from hscale.harness.tasks import write_tasks

    write_tasks([Task(task_id=f"t{i}", user_query=f"say {i} .", split="eval" if i % 3
                      else "train", checker={"kind": "answer", "expected": str(i)})
                 for i in range(9)], rows)
    spec = tmp_path / "spec.yaml"
    body = ("name: tools\nbackend: scripted\nsteps: 1\n"
            "benchmark: {{name: jsonl, path: tasks.jsonl, tools: {tools}, limits: {limits}}}\n"
            "arms:\n  one: {{train: single, assignment: {{mode: repeat, k: 1}}}}\n")
    spec.write_text(body.format(tools="[read, run]", limits="{max_turns: 4}"))
    out = tmp_path / "runs"
    assert hscale("plan", spec, "--out", out).returncode == 0
    manifest = json.loads(next(out.rglob("manifest.json")).read_text())
    assert manifest["benchmark"]["tools"] == ["read", "run"]
    assert manifest["benchmark"]["limits"] == {"max_turns": 4}
    spec.write_text(body.format(tools="[read, sudo]", limits="{max_turns: 4}"))
    bad = hscale("validate", spec)
    assert bad.returncode == 2 and "unknown tool 'sudo'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and os.fspath(spec) in bad.stderr


def test_a_long_file_is_read_in_windows_that_say_where_to_go_on(tmp_path):
    text = "".join(f"line {i}\n" for i in range(2000))
    task = _task(files={"log.txt": text}, limits={"max_output_chars": 500})
    seen, offset = [], "0"
    with Env(task, root=tmp_path) as env:
        while True:
            result = env.execute(ToolCall("read", {"path": "log.txt", "offset": offset}))
            assert result.ok and not result.truncated and len(result.output) <= 500
            body, _, note = result.output.partition("\n[cut at ")
            seen.append(body)
            if not note:
                break
            offset = note.split("with offset ")[1].split()[0]
        assert "".join(seen) == text and len(seen) > 20
        first = env.execute(ToolCall("read", {"path": "log.txt"})).output
        assert first.startswith("line 0\n") and "read log.txt with offset" in first
        assert env.execute(ToolCall("read", {"path": "log.txt", "offset": "99999"})).output == \
            f"log.txt has {len(text)} characters"
        assert not env.execute(ToolCall("read", {"path": "log.txt", "offset": "-3"})).ok
    builtin = _task(tools=BUILTIN_TOOLS, files={"log.txt": text})
    with Env(builtin, root=tmp_path) as env:  # the built-in world's read: as it always was
        plain = env.execute(ToolCall("read", {"path": "log.txt"}))
        assert plain.truncated and plain.output == text[:400] + "\n[cut : output too long]"


def test_a_spec_sets_the_asset_limit_of_a_real_pinchbench_set(tmp_path):
    from hscale.contracts import BenchmarkRecord
    from hscale.train.spec import load_spec

    real = Path(__file__).resolve().parents[3] / "shared" / "realtasks" / "pinchbench"
    if not real.is_dir():
        pytest.skip(f"no real PinchBench tasks at {real}")
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: assets\nbackend: scripted\nsteps: 1\nbenchmark: {{name: pinchbench, "
                    f"path: {real / 'tasks'}, split: eval, max_asset_bytes: 4096}}\n"
                    "arms:\n  one: {train: single, assignment: {mode: repeat, k: 1}}\n")
    source = open_benchmark("pinchbench", str(real / "tasks"), "eval",
                            settings=Settings(max_asset_bytes=4096))
    kept, left = len(source.all_tasks()), source.left_out
    assert left and kept + len(left) == 22  # the tasks with larger assets are left out
    assert all("4096" in problem for _, problem in left), left
    assert Settings.of(load_spec(spec).benchmark).max_asset_bytes == 4096  # the spec's route
    record = BenchmarkRecord(name="pinchbench", tasks=kept, seed=0, path=str(real / "tasks"),
                             split="eval", max_asset_bytes=4096)
    assert Settings.of(record) == Settings(max_asset_bytes=4096)  # and the manifest's


@pytest.mark.parametrize("mount", ["/", "/etc", "/proc/self", "relative/dir", "/a/../etc"])
def test_a_script_cannot_be_shown_the_workspace_over_a_system_folder(mount):
    from hscale.harness.tasks import check_spec

    with pytest.raises(HscaleError, match="outside the system's"):
        check_spec({"kind": "script", "path": "/t/reward.sh", "mount": mount})
