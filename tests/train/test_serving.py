"""``hscale serve``'s three faces through the official clients: OpenAI chat completions
(plain, streamed, with tools), the Responses API (plain and streamed, function calls) and
Anthropic messages (streamed, tool use); errors in each API's own shape; the record; concurrent
sessions batched; proxy mode in front of an OpenAI-compatible server that is not hscale's."""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler

import pytest

from hscale.harness import Generation
from hscale.train.lm import read_record
from hscale.train.serving import ScriptedChat, serve
from tests.harness.helpers import local_http, send_json

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

BASH = {"type": "object", "properties": {"command": {"type": "string"}},
        "required": ["command"]}
TASK = "what is in note.txt?"
MODEL = ScriptedChat({TASK: ["cat note.txt"]})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    record = tmp_path_factory.mktemp("record")
    with serve(MODEL, port=0, record=record) as running:
        running.record_dir = record
        yield running


def _openai(server):
    return openai.OpenAI(base_url=server.url, api_key="none", max_retries=0)


def _anthropic(server):
    return anthropic.Anthropic(base_url=server.url.removesuffix("/v1"), api_key="none",
                               max_retries=0)


def test_chat_completions_call_a_tool_and_read_its_result(server):
    client = _openai(server)
    tools = [{"type": "function", "function": {"name": "bash", "description": "run a command",
                                               "parameters": BASH}}]
    first = client.chat.completions.create(model="m", messages=[
        {"role": "system", "content": "you work in a folder"},
        {"role": "user", "content": TASK}], tools=tools, max_tokens=64)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls
    assert call.function.name == "bash" and json.loads(call.function.arguments) == {
        "command": "cat note.txt"}
    second = client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": TASK}, choice.message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "a heron"}], tools=tools)
    assert second.choices[0].message.content == "a heron"
    assert second.choices[0].finish_reason == "stop" and second.usage.prompt_tokens > 0
    plain = client.chat.completions.create(model="m", messages=[{"role": "user",
                                                                 "content": "hi"}])
    assert plain.choices[0].message.tool_calls is None  # no tools offered: text only


def test_chat_completions_stream_their_tool_calls(server):
    client = _openai(server)
    tools = [{"type": "function", "function": {"name": "bash", "parameters": BASH}}]
    chunks = list(client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": TASK}], tools=tools, stream=True,
        stream_options={"include_usage": True}))
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or ()]
    assert [c.function.name for c in calls] == ["bash"]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].usage is not None and chunks[-1].choices == []


def test_the_responses_api_calls_functions_plain_and_streamed(server):
    client = _openai(server)
    tools = [{"type": "function", "name": "shell", "description": "run",
              "parameters": {"type": "object", "properties": {
                  "command": {"type": "array", "items": {"type": "string"}}}}}]
    first = client.responses.create(model="m", instructions="you are a coding agent",
                                    input=[{"role": "developer", "content": "be brief"},
                                           {"role": "user", "content": TASK}], tools=tools)
    [call] = [item for item in first.output if item.type == "function_call"]
    assert json.loads(call.arguments) == {"command": ["bash", "-lc", "cat note.txt"]}
    with client.responses.stream(model="m", tools=tools, input=[
            {"role": "user", "content": TASK},
            {"type": "function_call", "call_id": call.call_id, "name": "shell",
             "arguments": call.arguments},
            {"type": "function_call_output", "call_id": call.call_id,
             "output": "a heron"}]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert final.output_text == "a heron" and final.status == "completed"
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds


def test_anthropic_messages_stream_tool_use_and_take_tool_results(server):
    client = _anthropic(server)
    tools = [{"name": "Bash", "description": "run a command", "input_schema": BASH}]
    system = [{"type": "text", "text": "you are claude code", "cache_control":
               {"type": "ephemeral"}}]
    with client.messages.stream(model="m", max_tokens=64, system=system, tools=tools,
                                messages=[{"role": "user", "content": TASK}]) as stream:
        first = stream.get_final_message()
    assert first.stop_reason == "tool_use"
    [use] = [b for b in first.content if b.type == "tool_use"]
    assert use.name == "Bash" and use.input == {"command": "cat note.txt"}
    second = client.messages.create(model="m", max_tokens=64, system=system, tools=tools,
                                    messages=[
        {"role": "user", "content": TASK},
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                      "content": [{"type": "text", "text": "a heron"}]}]}])
    assert second.stop_reason == "end_turn" and second.content[0].text == "a heron"
    assert client.messages.count_tokens(model="m", messages=[
        {"role": "user", "content": TASK}]).input_tokens > 0


def test_bad_requests_get_each_apis_own_error(server):
    with pytest.raises(openai.BadRequestError) as info:
        _openai(server).chat.completions.create(model="m", messages=[])
    assert info.value.body["type"] == "invalid_request_error"
    with pytest.raises(openai.BadRequestError):
        _openai(server).responses.create(model="m", input="x", previous_response_id="r1")
    with pytest.raises(anthropic.BadRequestError) as info:
        _anthropic(server).messages.create(model="m", max_tokens=10, messages=[])
    assert info.value.body["error"]["type"] == "invalid_request_error"
    with pytest.raises(anthropic.NotFoundError):
        _anthropic(server).models.retrieve("nothing/here/at/all")


def test_every_request_is_recorded_unknown_paths_too(server):
    base = server.url.removesuffix("/v1")
    urllib.request.urlopen(urllib.request.Request(base + "/", method="HEAD"), timeout=10)
    request = urllib.request.Request(base + "/v1/nowhere", data=b'{"x": 1}',
                                     headers={"x-hscale-session": "s-42",
                                              "content-type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 404
    _openai(server).chat.completions.create(
        model="m", messages=[{"role": "user", "content": TASK}], extra_headers={
            "x-hscale-session": "s-7"},
        tools=[{"type": "function", "function": {"name": "bash", "parameters": BASH}}])
    rows = read_record(server.record_dir)
    lost = rows[rows.path == "/v1/nowhere"].iloc[-1]
    assert lost.status == 404 and lost.session == "s-42"
    assert json.loads(lost.params)["body"] == '{"x": 1}'
    called = rows[rows.session == "s-7"].iloc[-1]
    assert json.loads(called.tool_calls)[0]["name"] == "bash"
    assert json.loads(called.tools) == ["bash"] and json.loads(called.token_ids)
    assert called.api == "chat" and called.finish_reason == "tool_calls"


def test_concurrent_sessions_share_one_generate():
    gate, entered = threading.Event(), threading.Event()

    class Slow(ScriptedChat):
        def generate(self, conversations, *args, **kwargs):
            entered.set()
            gate.wait(10)  # the first batch holds the model while the others queue
            return super().generate(conversations, *args, **kwargs)

    with serve(Slow(), port=0) as running:
        client = _openai(running)

        def ask(k: int) -> str:
            return client.chat.completions.create(model="m", messages=[
                {"role": "user", "content": f"hello {k}"}]).choices[0].message.content

        with ThreadPoolExecutor(8) as pool:
            first = pool.submit(ask, 0)
            entered.wait(10)
            rest = [pool.submit(ask, k) for k in range(1, 8)]
            while running.service.batcher._queue.qsize() < 7:
                threading.Event().wait(0.01)
            gate.set()
            answers = [f.result(timeout=30) for f in [first, *rest]]
    assert len(answers) == 8 and running.batches == [1, 7]


class _Upstream(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that is not hscale's: a tool call, then the result."""

    def do_GET(self):  # noqa: N802
        self._send({"object": "list", "data": [{"id": "up-model", "max_model_len": 8192}]})

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        last = body["messages"][-1]
        if last["role"] == "tool":
            message = {"role": "assistant", "content": f"it says {last['content']}"}
            finish = "stop"
        else:
            name = body["tools"][0]["function"]["name"]
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_up1", "type": "function", "function": {
                    "name": name, "arguments": json.dumps({"command": "ls"})}}]}
            finish = "tool_calls"
        self._send({"id": "x", "object": "chat.completion", "choices": [
            {"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3}})

    def _send(self, payload):
        send_json(self, payload)

    def log_message(self, *args):
        pass


def test_proxy_mode_gives_another_server_the_anthropic_and_responses_faces():
    with local_http(_Upstream) as upstream, \
            serve(f"http://127.0.0.1:{upstream.server_port}/v1", port=0) as proxy:
        client = _anthropic(proxy)
        tools = [{"name": "Bash", "input_schema": BASH}]
        first = client.messages.create(model="up-model", max_tokens=50, tools=tools,
                                       messages=[{"role": "user", "content": "list"}])
        [use] = [b for b in first.content if b.type == "tool_use"]
        assert use.input == {"command": "ls"} and first.usage.input_tokens == 11
        second = client.messages.create(model="up-model", max_tokens=50, tools=tools,
                                        messages=[
            {"role": "user", "content": "list"},
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id,
                                          "content": "a.txt"}]}])
        assert second.content[0].text == "it says a.txt"
        sent = upstream.bodies[-1]["messages"]
        assert sent[-2]["tool_calls"][0]["id"] == use.id == "call_up1"
        assert sent[-1] == {"role": "tool", "content": "a.txt", "tool_call_id": use.id}
        response = _openai(proxy).responses.create(model="up-model", input="list", tools=[
            {"type": "function", "name": "shell", "parameters": BASH}])
        assert [i.type for i in response.output] == ["function_call"]
        assert _openai(proxy).models.list().data[0].id == "up-model"


def test_a_request_for_more_tokens_than_the_model_holds_is_cut_to_fit():
    """Claude Code asks for 32,000 new tokens; a small local model gets at most the server's
    --max-new-tokens and half its context, and the reply still comes."""
    asked = []

    class Small(ScriptedChat):
        context = 1000

        def generate(self, conversations, greedy=True, max_new_tokens=256, seed=None):
            asked.append(max_new_tokens)
            return super().generate(conversations, greedy, max_new_tokens, seed)

    with serve(Small(), port=0, max_new_tokens=700) as running:
        with _anthropic(running).messages.stream(  # the client streams a request this long
                model="m", max_tokens=32000, messages=[{"role": "user", "content": "hi"}]
        ) as stream:
            assert stream.get_final_message().stop_reason == "end_turn"
        _openai(running).chat.completions.create(
            model="m", max_tokens=300, messages=[{"role": "user", "content": "hi"}])
    assert asked == [500, 300]


def test_a_prompt_the_model_cannot_hold_is_a_400_of_its_own():
    """A model that cannot fit a prompt (HFChat gives an empty turn) answers that request
    400 in its API's shape; the other requests of the batch are answered."""
    class Tight(ScriptedChat):
        context = 64

        def generate(self, conversations, greedy=True, max_new_tokens=256, seed=None):
            gens = super().generate(conversations, greedy, max_new_tokens, seed)
            return [Generation("", (), ()) if len(c[-1].content) > 100 else g
                    for c, g in zip(conversations, gens, strict=True)]

    with serve(Tight(), port=0) as running:
        with pytest.raises(anthropic.BadRequestError, match="does not fit scripted's context"):
            _anthropic(running).messages.create(model="m", max_tokens=10, messages=[
                {"role": "user", "content": "x" * 200}])
        ok = _openai(running).chat.completions.create(model="m", messages=[
            {"role": "user", "content": "hi"}])
        assert ok.choices[0].message.content


def test_an_upstream_refusal_is_that_requests_alone():
    class Refusing(_Upstream):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body["messages"][-1]["content"] == "refuse":
                send_json(self, {"error": {"message": "no"}}, status=400)
            else:
                send_json(self, {"choices": [{"message": {"role": "assistant",
                                                          "content": "fine"}}]})

    with local_http(Refusing) as upstream, \
            serve(f"http://127.0.0.1:{upstream.server_port}/v1", port=0) as proxy:
        client = _openai(proxy)
        with ThreadPoolExecutor(2) as pool:
            bad = pool.submit(client.chat.completions.create, model="up-model",
                              messages=[{"role": "user", "content": "refuse"}])
            good = pool.submit(client.chat.completions.create, model="up-model",
                               messages=[{"role": "user", "content": "hello"}])
            assert good.result(timeout=30).choices[0].message.content == "fine"
            with pytest.raises(openai.BadRequestError, match="answered 400"):
                bad.result(timeout=30)


def test_a_server_stopped_under_a_request_records_it_and_its_batcher_survives(
        tmp_path, monkeypatch):
    """The CLI of a timed-out episode is gone, its request still generating: stopping the
    server cancels it cleanly (a 503 in the record) and the batcher neither crashes nor
    generates a request whose client is gone."""
    import time

    # internal: tests the server's completer factory
    import hscale.train.serving._server as server_module

    monkeypatch.setattr(server_module, "GRACE_S", 0.5)
    crashes = []
    monkeypatch.setattr(threading, "excepthook", crashes.append)

    class Slow(ScriptedChat):
        def generate(self, conversations, **kwargs):
            time.sleep(2.0)
            return super().generate(conversations, **kwargs)

    record = tmp_path / "record"
    with serve(Slow(), port=0, record=record) as running:
        url = running.url
        threads = [threading.Thread(target=lambda: _quietly(send_json_to, url), daemon=True)
                   for _ in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.3)
    time.sleep(2.5)  # the batch in hand finishes after the stop
    assert crashes == []
    rows = read_record(record)
    assert set(rows.status) <= {200, 503} and (rows.status == 503).any()


def send_json_to(url):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(f"{url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(request, timeout=10).read()


def _quietly(call, *args):
    with contextlib.suppress(OSError):
        call(*args)
