"""``hscale serve``: the embedded policy behind an OpenAI-compatible endpoint gives hscale's own
HTTP client the same episodes as the model in process; every request is recorded; bad requests
are 400s with a JSON error; only loopback unless asked; the command stops cleanly on Ctrl-C."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("torch")

from hscale.errors import HscaleError  # noqa: E402
from hscale.harness import (  # noqa: E402
    EPISODE_TURNS,
    BuiltinWorld,
    Generation,
    Message,
    OpenAIChatPolicy,
    harness_named,
    run_episode,
)
from hscale.train.lm import EmbeddedChat, read_record  # noqa: E402
from hscale.train.serving import serve  # noqa: E402

LABELS = ["S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1", "oos/shell"]
HELLO = [{"role": "system", "content": "you do file tasks with tools"},
         {"role": "user", "content": "read a.txt"}]


@pytest.fixture(scope="module")
def chat() -> EmbeddedChat:
    return EmbeddedChat.preset("hscale-tiny")


class InProcess:
    """EmbeddedChat greedy as a harness policy, as the embedded sampler shows it the view (its
    own tool role)."""

    def __init__(self, chat: EmbeddedChat) -> None:
        self.chat = chat

    def generate(self, messages: list[Message]) -> Generation:
        return self.chat.generate([messages], greedy=True, max_new_tokens=256)[0]


def post(url: str, body: bytes | dict) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url + "/chat/completions", data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_endpoint_gives_the_in_process_episodes(chat, tmp_path):
    tasks = BuiltinWorld().tasks(4, 0, "eval")
    local, remote = InProcess(chat), []
    with serve(chat, port=0, record=tmp_path / "record") as server:
        assert server.url == f"http://127.0.0.1:{server.port}/v1"
        client = OpenAIChatPolicy(server.url, "hscale-tiny", temperature=0.0, tool_role="tool")
        for label in LABELS:
            for task in tasks:
                expected = run_episode(local, harness_named(label), task, EPISODE_TURNS)
                got = run_episode(client, harness_named(label), task, EPISODE_TURNS)
                assert got.error == "", got.error
                assert [(m.role, m.content) for m in got.messages] == \
                       [(m.role, m.content) for m in expected.messages]
                assert (got.reward, got.turns, got.termination) == \
                       (expected.reward, expected.turns, expected.termination)
                for g, e in zip(got.generations, expected.generations, strict=True):
                    assert g.logprobs == pytest.approx(e.logprobs, abs=1e-5)
                remote.append(got)
    assert {ep.reward for ep in remote} == {0.0, 1.0}  # the comparison covers both outcomes
    import pandas as pd

    record = pd.read_parquet(tmp_path / "record")
    assert len(record) == sum(len(ep.generations) for ep in remote)
    assert sorted(record["reply"]) == sorted(g.text for ep in remote for g in ep.generations)
    assert (record["status"] == 200).all() and (record["completion_tokens"] > 0).all()


def test_every_request_is_recorded_with_its_messages(chat, tmp_path):
    folder = tmp_path / "record"
    with serve(chat, port=0, record=folder) as server:
        for k in range(3):
            status, reply = post(server.url, {"messages": HELLO[:k + 1] if k < 2 else HELLO,
                                              "temperature": 0, "max_tokens": 4 + k})
            assert status == 200
            assert reply["usage"]["completion_tokens"] <= 4 + k
            assert len(read_record(folder)) == k + 1  # on disk as soon as it is answered
        assert post(server.url, b"{not json")[0] == 400
        assert post(server.url, {"temperature": 0})[0] == 400
        assert len(read_record(folder)) == 5
    import pandas as pd

    assert [p.name.split("-")[0] for p in folder.iterdir()] == ["requests"]  # compacted
    record = pd.read_parquet(folder).sort_values("time").reset_index(drop=True)
    pd.testing.assert_frame_equal(record, read_record(folder))
    assert list(record["status"]) == [200, 200, 200, 400, 400]
    assert json.loads(record["messages"][2]) == HELLO
    assert json.loads(record["messages"][0]) == HELLO[:1]
    assert json.loads(record["params"][1])["max_tokens"] == 5
    assert record["request_id"].is_unique and (record["seconds"] > 0).all()
    assert "JSON" in record["error"][3] and "messages" in record["error"][4]
    assert record["messages"][4] == ""


def test_a_reply_has_the_fields_clients_read(chat):
    with serve(chat, port=0) as server:
        status, reply = post(server.url, {"model": "x", "messages": HELLO, "temperature": 0,
                                          "max_tokens": 3, "logprobs": True})
        assert status == 200
        choice = reply["choices"][0]
        assert choice["finish_reason"] == "length"  # cut at 3 tokens
        assert reply["usage"] == {"prompt_tokens": chat.prompt_tokens(
            [Message(m["role"], m["content"]) for m in HELLO]), "completion_tokens": 3,
            "total_tokens": reply["usage"]["prompt_tokens"] + 3}
        assert "".join(t["token"] for t in choice["logprobs"]["content"]) == \
               choice["message"]["content"]
        status, full = post(server.url, {"messages": HELLO, "temperature": 0})
        assert full["choices"][0]["finish_reason"] == "stop"
        assert full["choices"][0]["logprobs"] is None
        # sampled with a seed: reproducible
        body = {"messages": HELLO, "temperature": 1.0, "seed": 5, "max_tokens": 20}
        assert post(server.url, body)[1]["choices"] == post(server.url, body)[1]["choices"]
        with urllib.request.urlopen(server.url + "/models", timeout=10) as response:
            assert json.load(response)["data"][0]["id"] == "hscale-tiny"
        health = server.url.removesuffix("/v1") + "/health"
        with urllib.request.urlopen(health, timeout=10) as response:
            assert json.load(response)["status"] == "ok"


@pytest.mark.parametrize("body", [
    b"{not json", b"[1, 2]", b"{}", json.dumps({"messages": []}).encode(),
    json.dumps({"messages": "hello"}).encode(),
    json.dumps({"messages": [{"role": "wizard", "content": "hi"}]}).encode(),
    json.dumps({"messages": HELLO, "temperature": -1}).encode(),
    json.dumps({"messages": HELLO, "max_tokens": 0}).encode(),
    json.dumps({"messages": HELLO, "stream": "yes"}).encode(),
    json.dumps({"messages": HELLO, "seed": "x"}).encode(),
    b"[" * 100_000 + b"]" * 100_000,  # nested past the parser's recursion limit
    b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
])
def test_bad_requests_are_400_with_a_json_error(chat, body):
    with serve(chat, port=0) as server:
        status, reply = post(server.url, body)
        assert status == 400
        assert reply["error"]["type"] == "invalid_request_error"
        assert "Traceback" not in reply["error"]["message"]
        assert post(server.url + "/nowhere", {"messages": HELLO})[0] == 404
        assert post(server.url, {"messages": HELLO, "max_tokens": 2})[0] == 200  # still serving


def test_only_loopback_unless_asked(chat):
    with pytest.raises(HscaleError, match="not a loopback"):
        serve(chat, host="0.0.0.0", port=0)
    with serve(chat, host="localhost", port=0) as server:
        assert post(server.url, {"messages": HELLO, "max_tokens": 2})[0] == 200


def test_batched_generation_is_each_conversation_alone(chat):
    tasks = BuiltinWorld().tasks(3, 0, "eval")
    from hscale.harness import TurnEngine

    views = [TurnEngine(harness_named(label), task, EPISODE_TURNS).view()
             for label in LABELS for task in tasks]
    batch = chat.generate(views, max_new_tokens=32)
    alone = [chat.generate([view], max_new_tokens=32)[0] for view in views]
    assert [g.token_ids for g in batch] == [g.token_ids for g in alone]
    rendered = chat.render(views[0])
    assert rendered.startswith("<system>") and rendered.endswith("<eos><assistant>")


def test_a_preset_not_built_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setenv("HSCALE_CACHE", str(tmp_path))
    with pytest.raises(HscaleError) as info:
        EmbeddedChat.preset("hscale-test")  # never shipped
    assert "hscale model build hscale-test" in info.value.one_line()


def _start(record):
    proc = subprocess.Popen([sys.executable, "-m", "hscale.cli", "serve", "hscale-tiny",
                             "--port", "0", "--record", str(record)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline, line = time.monotonic() + 60, ""
    while not line and time.monotonic() < deadline and proc.poll() is None:
        if select.select([proc.stdout], [], [], 1)[0]:
            line = proc.stdout.readline()
    assert line.startswith("serving hscale-tiny at http://127.0.0.1:"), \
        line + proc.stderr.read() if proc.poll() is not None else line
    return proc, line.split(" at ")[1].split()[0]


def _hang_up(url: str) -> None:
    """A client that sends a request and leaves before the reply."""
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(url)
    body = json.dumps({"messages": HELLO, "max_tokens": 64}).encode()
    with socket.create_connection((where.hostname, where.port)) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/json\r\nContent-Length: " + str(len(body)).encode()
                     + b"\r\n\r\n" + body)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL],
                         ids=["ctrl-c", "sigterm", "kill-9"])
def test_the_command_keeps_every_answered_request_however_it_stops(tmp_path, stop):
    record = tmp_path / "rec"
    proc, url = _start(record)
    try:
        with urllib.request.urlopen(url + "/models", timeout=10) as response:
            assert json.load(response)["data"][0]["id"] == "hscale-tiny"
        answered = [post(url, {"messages": HELLO, "max_tokens": 2, "seed": k})
                    for k in range(12)]
        assert [status for status, _ in answered] == [200] * 12
        for _ in range(3):
            _hang_up(url)
        assert post(url, b"[" * 100_000)[0] == 400
        time.sleep(0.5)
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rows = read_record(record)
    ids = {reply["id"] for _, reply in answered}
    assert ids <= set(rows["request_id"]) and len(rows) >= 13
    assert "Traceback" not in err and "BrokenPipe" not in err and "ConnectionReset" not in err
    if stop == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
        assert len(list(record.glob("_requests-*.jsonl"))) == 1
        proc, _ = _start(record)  # the next server compacts what the killed one left
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
        assert len(read_record(record)) == len(rows)
    else:
        assert proc.returncode == 0, err
        assert "stopped" in out
    assert list(record.glob("_requests-*")) == []
    import pandas as pd

    assert len(pd.read_parquet(record)) == len(rows)
