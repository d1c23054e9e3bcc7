"""The real black-box harnesses (Claude Code, Codex CLI, OpenClaw) through ``hscale serve`` of
the scripted model: they solve built-in and ClawGym-format tasks (reward 1 by each task's own
checker), a model that answers without acting scores 0, the record holds every turn of every
session, and the server's turn bound ends an episode. Each needs its pinned install (``hscale
harness install NAME``; CI installs them); slow, as the CLIs take seconds to start."""

from __future__ import annotations

import json
import shlex
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from hscale.harness import HARNESSES, Served, generate, open_benchmark, run_blackbox
from hscale.train.blackbox import play_clis
from hscale.train.lm import read_record
from hscale.train.serving import ScriptedChat, serve, solution_commands
from tests.harness.helpers import local_http, send_json

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "experiments" / "examples" / "tasks"


def _installed(name: str) -> None:
    if not HARNESSES.get(name).installed():
        pytest.skip(f"{name} is not installed here: hscale harness install {name}")


def _tasks() -> list:
    builtin = generate(4, seed=1)[2:4]  # a calculation written to a file, a recovery
    clawgym = open_benchmark("clawgym", str(EXAMPLES)).tasks(1, 0, "train")
    return [*builtin, *clawgym]


@pytest.mark.parametrize("name", list(HARNESSES))
def test_the_real_cli_solves_tasks_through_hscale_serve(name):
    """Several sessions at once, as an evaluation plays them (hscale.train.blackbox._eval:
    the model served in process, the CLIs side by side)."""
    _installed(name)
    tasks = _tasks()
    model = ScriptedChat({t.user_query: solution_commands(t) for t in tasks})
    episodes: dict[int, object] = {}
    play_clis(model, [(name, task) for task in tasks], episodes.__setitem__,
              concurrency=len(tasks), timeout_s=240)
    assert [episodes[i].reward for i in range(len(tasks))] == [1.0] * len(tasks), [
        (episodes[i].final_answer, episodes[i].error) for i in range(len(tasks))]
    for i, task in enumerate(tasks):
        assert episodes[i].turns == len(solution_commands(task)) + 1, episodes[i].error
        assert episodes[i].termination == "answer" and episodes[i].error == ""


@pytest.mark.parametrize("name", list(HARNESSES))
def test_a_model_that_does_not_act_scores_zero_and_every_turn_is_recorded(name, tmp_path):
    _installed(name)
    task = _tasks()[0]
    record = tmp_path / "record"
    with serve(ScriptedChat(wrong=True), port=0, record=record) as server:
        service = server.service
        served = Served(server.url, "scripted", 32768, service.limit, service.requests)
        wrong = run_blackbox(name, task, served, timeout_s=240)
    assert wrong.reward == 0.0 and wrong.final_answer == "i cannot do this task."
    with serve(ScriptedChat({task.user_query: solution_commands(task)}), port=0,
               record=record) as server:
        service = server.service
        served = Served(server.url, "scripted", 32768, service.limit, service.requests)
        right = run_blackbox(name, task, served, timeout_s=240)
    assert right.reward == 1.0
    rows = read_record(record)
    sessions = rows[rows.session.str.startswith("bb-")].groupby("session", sort=False)
    turns = sorted(len(group) for _, group in sessions)
    assert turns == sorted([wrong.turns, right.turns])
    solved = next(g for _, g in sessions if len(g) == right.turns)
    calls = [json.loads(c) for c in solved.tool_calls]
    assert sum(bool(c) for c in calls) == len(solution_commands(task))  # every call kept
    assert solved.iloc[-1].finish_reason == "stop" and (solved.status == 200).all()
    assert task.final_answer is None or solved.iloc[-1].reply.strip() == task.final_answer


def test_the_servers_turn_bound_ends_an_episode(tmp_path):
    name = "bb/claude-code"
    _installed(name)
    task = _tasks()[0]  # four commands, then the answer
    with serve(ScriptedChat({task.user_query: solution_commands(task)}), port=0) as server:
        service = server.service
        served = Served(server.url, "scripted", 32768, service.limit, service.requests)
        bounded = run_blackbox(name, task, served, timeout_s=240, max_turns=2)
    assert bounded.reward == 0.0 and "turn limit" in bounded.final_answer
    assert bounded.turns == 3  # two answered, the third told the episode is over


class _Hits(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802
        self.hits.append(self.path)
        send_json(self, {"reached": True})

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("name", ["bb/claude-code", "bb/codex"])  # a Node CLI, a Rust one
def test_the_cli_and_its_commands_reach_nothing_but_the_endpoint(name):
    """Another port of this machine's loopback and an outside host are both unreachable
    from the commands the CLI runs, while the endpoint answers every turn (the namespace
    holds the CLI's whole process tree, whatever the CLI)."""
    from hscale.harness import isolation

    # internal: tests the network fence itself
    from hscale.harness._netns import fence
    from hscale.harness.tasks import no_network_prefix

    _installed(name)
    if not no_network_prefix():
        pytest.skip(f"no network namespaces here: {isolation()}")
    assert fence(), isolation()
    probe = ("import socket, sys; s = lambda: socket.socket(); "
             "[print('reached' if (c := s(), c.settimeout(3), c.connect_ex((h, int(p))))[2] "
             "== 0 else 'unreachable', h, p) for h, p in (a.split(':') for a in sys.argv[1:])]")
    task = _tasks()[0]
    with local_http(_Hits) as other:
        command = (f"python3 -c {shlex.quote(probe)} 127.0.0.1:{other.server_port} "
                   "93.184.215.14:80 1.1.1.1:53")
        with serve(ScriptedChat({task.user_query: [command]}), port=0) as server:
            service = server.service
            served = Served(server.url, "scripted", 32768, service.limit, service.requests)
            episode = run_blackbox(name, task, served, timeout_s=240)
    assert episode.turns == 2 and episode.termination == "answer", episode.error
    assert episode.final_answer.count("unreachable") == 3, episode.final_answer
    assert "reached" not in episode.final_answer.replace("unreachable", "")
    assert _Hits.hits == []


class _Upstream(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat server that is not hscale's (as vLLM would be): it calls the
    shell tool of whatever tools a request offers with the command the test set, then
    answers with the tool's output."""

    shell = "printf hello > out.txt && cat out.txt"  # (self.command is the HTTP method)

    def do_GET(self):  # noqa: N802
        self._send({"object": "list", "data": [{"id": "upstream", "max_model_len": 32768}]})

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        messages = body["messages"]
        results = [m for m in messages if m["role"] == "tool"]
        if results:
            text = results[-1]["content"]
            text = text if isinstance(text, str) else "".join(p.get("text", "") for p in text)
            message = {"role": "assistant", "content": text.rsplit("Output:\n", 1)[-1].strip()}
        else:
            name, key, argv = next(_shell_of(body["tools"]))
            value = ["bash", "-lc", self.shell] if argv else self.shell
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": name, "arguments": json.dumps({key: value})}}]}
        self._send({"id": "up", "object": "chat.completion", "model": "upstream",
                    "choices": [{"index": 0, "message": message,
                                 "finish_reason": "tool_calls" if not results else "stop"}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 5}})

    def _send(self, payload):
        send_json(self, payload)

    def log_message(self, *args):
        pass


def _shell_of(tools):
    for tool in sorted(tools, key=lambda t: t["function"]["name"].lower() not in (
            "bash", "exec", "exec_command", "shell")):
        props = (tool["function"].get("parameters") or {}).get("properties") or {}
        for key in ("command", "cmd"):
            if key in props:
                yield tool["function"]["name"], key, props[key].get("type") == "array"


@pytest.mark.parametrize("name", list(HARNESSES))
def test_proxy_mode_runs_each_harness_on_another_server(name):
    """``hscale serve http://...`` in front of a server that is not hscale's: the harness's
    tool call runs in its work folder and the task's checker sees what it wrote."""
    from hscale.harness.tasks import Task

    _installed(name)
    task = Task(task_id="proxy-1", user_query="write hello to out.txt .",
                checker={"kind": "answer", "expected": "hello", "target": "file",
                         "file": "out.txt"})
    with local_http(_Upstream) as upstream, \
            serve(f"http://127.0.0.1:{upstream.server_port}/v1", port=0) as proxy:
        service = proxy.service
        served = Served(proxy.url, "upstream", 32768, service.limit, service.requests)
        episode = run_blackbox(name, task, served, timeout_s=240)
    assert episode.reward == 1.0, (episode.final_answer, episode.error)
    assert episode.final_answer == "hello" and episode.turns == 2
