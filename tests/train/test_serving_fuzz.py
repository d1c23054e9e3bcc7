"""Hostile request bodies against ``hscale serve``'s three faces and count_tokens (the
Starlette app in process, recording, over the scripted model): every field of a valid body
dropped, nulled, retyped and made huge, bodies that are not JSON or not objects, and
hypothesis' own JSON in their place. Each gets its reply in time; never a 5xx or a
traceback; a 4xx is in the API's own error shape and names the field that was broken; a
field the API requires, dropped, nulled or made a number, is a 400."""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hscale.train.lm import Recorder
from hscale.train.serving import ScriptedChat

# internal: tests the HTTP app and its limits
from hscale.train.serving._app import Service, build_app

# internal: tests the serving engine's parts
from hscale.train.serving._engine import Batcher

# internal: tests the server's completer factory
from hscale.train.serving._server import completer_of

# internal: tests the wire-format path helper
from hscale.train.serving._wire import path as field_path

DEADLINE_S = 10  # a reply slower than this is a hang
TASK = "what is in note.txt?"
BASH = {"type": "object", "properties": {"command": {"type": "string"}}}
HUGE = "x" * 100_000
OTHER_TYPES = (7, "x", [], {}, True)  # what a field is retyped to (those not its own type)


@dataclass(frozen=True)
class Face:
    """An API face: its path, a valid body using what the face reads, the paths the API
    requires (in the body's own coordinates), whether its paths are written ``a[0].b``."""

    name: str
    url: str
    body: dict[str, Any]
    required: frozenset[str]
    indexed: bool

    def error(self, reply: dict[str, Any]) -> tuple[str, str | None]:
        """(message, param) of an error reply in the face's shape."""
        if self.url.startswith("/v1/messages"):
            assert reply["type"] == "error" and set(reply["error"]) == {"type", "message"}
            return reply["error"]["message"], None
        assert set(reply["error"]) == {"message", "type", "param", "code"}, reply
        return reply["error"]["message"], reply["error"]["param"]

    def answered(self, reply: dict[str, Any]) -> None:
        if self.name == "count_tokens":
            assert isinstance(reply["input_tokens"], int), reply
            return
        kind = {"messages": ("type", "message"), "chat": ("object", "chat.completion"),
                "responses": ("object", "response")}[self.name]
        assert reply[kind[0]] == kind[1], reply


MESSAGES = Face("messages", "/v1/messages", {
    "model": "m", "max_tokens": 64, "temperature": 0.5, "stream": False,
    "system": [{"type": "text", "text": "you work in a folder", "cache_control": {
        "type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": TASK},
                                     {"type": "image", "source": {"type": "url",
                                                                  "url": "http://x/a.png"}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "look", "signature": "s"},
            {"type": "tool_use", "id": "tu_1", "name": "bash",
             "input": {"command": "ls"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "tu_1", "is_error": False,
             "content": [{"type": "text", "text": "note.txt"}]},
            {"type": "text", "text": "go on"}]},
        {"role": "assistant", "content": "reading it"},
        {"role": "user", "content": TASK}],
    "tools": [{"name": "bash", "description": "run a command", "input_schema": BASH}],
    "tool_choice": {"type": "tool", "name": "bash"},
    "metadata": {"user_id": "u1"}, "thinking": {"type": "disabled"}},
    frozenset({"max_tokens", "messages", "tools.0.name", "tool_choice.type",
               "tool_choice.name"} | {f"messages.{i}" for i in range(5)}
              | {f"messages.{i}.{k}" for i in range(5) for k in ("role", "content")}
              | {"messages.0.content.0", "messages.0.content.0.type",
                 "messages.0.content.0.text", "messages.0.content.1.type",
                 "messages.0.content.1.source", "messages.1.content.0.type",
                 "messages.1.content.1.type", "messages.1.content.1.id",
                 "messages.1.content.1.name", "messages.1.content.1.input",
                 "messages.2.content.0.tool_use_id", "messages.2.content.0.content.0.type",
                 "messages.2.content.0.content.0.text", "messages.2.content.1.text",
                 "system.0.type", "system.0.text"}),
    indexed=False)

CHAT = Face("chat", "/v1/chat/completions", {
    "model": "m", "max_completion_tokens": 64, "temperature": 0.5, "seed": 3,
    "logprobs": False, "stream": False, "user": "u1", "n": 1,
    "messages": [
        {"role": "developer", "content": [{"type": "text", "text": "you work in a folder"}]},
        {"role": "user", "content": [{"type": "text", "text": TASK},
                                     {"type": "image_url", "image_url": {"url": "http://x"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "note.txt"},
        {"role": "assistant", "content": [{"type": "text", "text": "reading it"},
                                          {"type": "refusal", "refusal": "no"}]},
        {"role": "user", "content": TASK}],
    "tools": [{"type": "function", "function": {"name": "bash", "description": "run",
                                                "parameters": BASH}}],
    "tool_choice": {"type": "function", "function": {"name": "bash"}},
    "stream_options": {"include_usage": True}},
    frozenset({"messages", "tools[0].function", "tools[0].function.name",
               "tool_choice.function", "tool_choice.function.name",
               "messages[2].tool_calls[0].id", "messages[2].tool_calls[0].function",
               "messages[2].tool_calls[0].function.name", "messages[4].content[0].type",
               "messages[4].content[0].text", "messages[4].content[1].refusal",
               "messages[0].content[0].text", "messages[1].content[0].text",
               "messages[1].content[1].type"}
              | {f"messages[{i}]" for i in range(6)} | {f"messages[{i}].role" for i in range(6)}
              | {f"messages[{i}].content" for i in (0, 1, 3, 5)}),
    indexed=True)

RESPONSES = Face("responses", "/v1/responses", {
    "model": "m", "max_output_tokens": 64, "temperature": 0.5, "stream": False,
    "instructions": "you work in a folder", "prompt_cache_key": "s1", "store": False,
    "input": [
        {"type": "message", "role": "developer",
         "content": [{"type": "input_text", "text": "be brief"}]},
        {"role": "user", "content": [{"type": "input_text", "text": TASK},
                                     {"type": "input_image", "image_url": "http://x"}]},
        {"type": "reasoning", "summary": [], "encrypted_content": "abc"},
        {"type": "function_call", "call_id": "call_1", "name": "shell",
         "arguments": "{\"command\": \"ls\"}"},
        {"type": "function_call_output", "call_id": "call_1",
         "output": [{"type": "input_text", "text": "note.txt"}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "reading it", "annotations": []}]},
        {"role": "user", "content": TASK}],
    "tools": [{"type": "function", "name": "shell", "description": "run",
               "parameters": BASH, "strict": False}],
    "tool_choice": {"type": "function", "name": "shell"}},
    frozenset({"input", "tools[0].name", "tool_choice.type", "tool_choice.name",
               "input[3].call_id", "input[3].name", "input[4].call_id", "input[4].output",
               "input[4].output[0].type", "input[4].output[0].text",
               "input[0].content[0].type", "input[0].content[0].text",
               "input[1].content[0].text", "input[1].content[1].type",
               "input[5].content[0].text", "input[2].type"}
              | {f"input[{i}]" for i in range(7)}
              | {f"input[{i}].{k}" for i in (0, 1, 5, 6) for k in ("role", "content")}),
    indexed=True)

COUNT = Face("count_tokens", "/v1/messages/count_tokens", MESSAGES.body,
             MESSAGES.required - {"max_tokens"}, indexed=False)
FACES = [MESSAGES, COUNT, CHAT, RESPONSES]
# not JSON, not an object, nested past the parser, a number past Python's digits
RAW = [b"", b"{", b"{not json", b"\xff\xfe\x00", b"null", b"[]", b'"text"', b"7",
       b"[" * 100_000 + b"]" * 100_000, b'{"a": ' + b"1" * 5000 + b"}",
       b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"]


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Iterator[TestClient]:
    """The app as ``serve`` builds it (scripted model, a record), without a socket."""
    completer = completer_of(ScriptedChat({TASK: ["cat note.txt"]}))
    recorder = Recorder(tmp_path_factory.mktemp("record"))
    service = Service(completer, Batcher(completer, max_batch=1), recorder)  # no gathering
    with TestClient(build_app(service), raise_server_exceptions=False,
                    base_url="http://127.0.0.1") as running:
        yield running
    service.batcher.close()
    recorder.close()


@contextlib.contextmanager
def deadline(seconds: int = DEADLINE_S) -> Iterator[None]:
    """A hang as a failure (SIGALRM interrupts the wait for the app's reply)."""
    def expire(*_: object) -> None:
        raise TimeoutError(f"no reply in {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def send(client: TestClient, face: Face, content: bytes,
         content_type: str | None = "application/json") -> tuple[int, dict[str, Any] | str]:
    """Status and JSON reply (``content_type`` None: the request names none), or the text of
    an event stream when the request asked for one; fails on a hang, a 5xx, a traceback or
    any other reply not JSON."""
    with deadline():
        response = client.post(face.url, content=content, headers={} if content_type is None
                               else {"content-type": content_type})
    assert response.status_code < 500, response.text[:500]
    assert "Traceback" not in response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return response.status_code, response.text
    return response.status_code, response.json()


# --- mutations ----------------------------------------------------------------------------------
def nodes(value: Any, at: tuple = ()) -> Iterator[tuple]:
    """The path of every value below the body (keys and indices)."""
    children = (value.items() if isinstance(value, dict)
                else enumerate(value) if isinstance(value, list) else ())
    for key, child in children:
        yield (*at, key)
        yield from nodes(child, (*at, key))


def mutated(body: dict[str, Any], at: tuple, op: str, new: Any = None) -> dict[str, Any]:
    """A copy of ``body`` with the value at ``at`` dropped (``op`` drop) or replaced."""
    copy = json.loads(json.dumps(body))
    parent = copy
    for key in at[:-1]:
        parent = parent[key]
    if op == "drop":
        del parent[at[-1]]
    else:
        parent[at[-1]] = new
    return copy


def mutations(body: dict[str, Any]) -> Iterator[tuple[tuple, str, Any]]:
    """(path, op, new value): each key dropped, each value nulled, retyped to every other
    JSON type, and each string made 100 KB long."""
    for at in nodes(body):
        old = _get(body, at)
        if isinstance(at[-1], str):
            yield at, "drop", None
        if old is not None:
            yield at, "null", None
        for new in OTHER_TYPES:
            if type(new) is not type(old) and not (isinstance(old, int | float)
                                                   and isinstance(new, int)):
                yield at, f"retype {type(new).__name__}", new
        if isinstance(old, str):
            yield at, "huge", HUGE


def _get(body: Any, at: tuple) -> Any:
    for key in at:
        body = body[key]
    return body


def cases(face: Face) -> list[tuple[tuple, str, Any]]:
    return list(mutations(face.body))


def names_field(message: str, param: str | None, at: tuple, indexed: bool) -> bool:
    """Whether an error's message names the field at ``at``: its path (or one below it, the
    field at fault inside the value), or its parent's path and the field's own name; and
    ``param``, where the API has one, is not another field's."""
    where, parent = field_path(at, indexed), field_path(at[:-1], indexed)
    named = where in message or (bool(parent) and parent in message and str(at[-1]) in message)
    return named and (param is None or where.startswith(param) or param.startswith(where)
                      or param == parent)


@pytest.mark.parametrize("face", FACES, ids=lambda f: f.name)
def test_the_valid_body_is_answered(client, face):
    status, reply = send(client, face, json.dumps(face.body).encode())
    assert status == 200, reply
    face.answered(reply)


@pytest.mark.parametrize("face", FACES, ids=lambda f: f.name)
def test_every_mutation_is_answered_and_a_refusal_names_the_field(client, face):
    problems = []
    for at, op, new in cases(face):
        body = mutated(face.body, at, op, new)
        status, reply = send(client, face, json.dumps(body).encode())
        where = field_path(at, face.indexed)
        if status == 200:
            face.answered(reply)
            if where in face.required and op in ("drop", "null", "retype int"):
                problems.append(f"{where} {op}: answered 200")
            continue
        message, param = face.error(reply)
        if status != 400 or not names_field(message, param, at, face.indexed):
            problems.append(f"{where} {op}: {status} {message!r} (param {param!r})")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("face", FACES, ids=lambda f: f.name)
@pytest.mark.parametrize("raw", RAW, ids=lambda r: repr(r[:12]))
def test_a_body_that_is_not_a_json_object_is_a_400_about_the_body(client, face, raw):
    status, reply = send(client, face, raw)
    message, _ = face.error(reply)
    assert status == 400 and "body" in message, message


@pytest.mark.parametrize("face", FACES, ids=lambda f: f.name)
def test_a_body_a_web_page_could_send_unasked_is_refused(client, face):
    """JSON under application/json (any charset) or under no content type (a non-browser
    client) is read; the types a page may send cross-site without a preflight (text/plain,
    a form) are a 415 naming the type, so no page can make the server spend its model."""
    for kind in ("application/json", "application/json; charset=utf-8", None):
        status, reply = send(client, face, json.dumps(face.body).encode(), kind)
        assert status == 200, (kind, reply)
    for kind in ("text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                 "multipart/form-data; boundary=x"):
        status, reply = send(client, face, json.dumps(face.body).encode(), kind)
        assert status == 415 and kind.split(";")[0] in face.error(reply)[0], (kind, reply)


@pytest.mark.parametrize("face", FACES, ids=lambda f: f.name)
def test_odd_text_and_deep_values_are_answered(client, face):
    """Control characters and a surrogate pair are text; a lone surrogate is not (no
    tokenizer, record or reply can encode it); NaN, Infinity and numbers past a float are
    not JSON (no reply that echoes them could be); values nest deep inside a field."""
    text = json.dumps(face.body).replace("reading it", "\\u0000\\u001b[31m\\ud83d\\ude00")
    status, reply = send(client, face, text.encode())
    assert status == 200, reply
    text = json.dumps(face.body).replace("reading it", "\\ud800 alone")
    status, reply = send(client, face, text.encode())
    assert status == 400 and "body" in face.error(reply)[0] and "surrogate" in \
        face.error(reply)[0]
    deep = json.dumps(face.body).replace('"ls"', "[" * 500 + "]" * 500)
    assert send(client, face, deep.encode())[0] in (200, 400)
    for bad in ("NaN", "Infinity", "1e999"):
        text = json.dumps(face.body).replace('"temperature": 0.5', f'"temperature": {bad}')
        status, reply = send(client, face, text.encode())
        assert status == 400 and "body is not JSON" in face.error(reply)[0]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20)
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


@pytest.mark.parametrize("face", FACES, ids=lambda f: f.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_json_in_any_field_is_answered(client, face, data):
    """Hypothesis' JSON in place of any one field of the valid body, or as the body."""
    at = data.draw(st.sampled_from(list(nodes(face.body))))
    new = data.draw(JSON)
    whole = data.draw(st.booleans())
    status, reply = send(client, face, json.dumps(new if whole else mutated(
        face.body, at, "set", new)).encode())
    if isinstance(reply, str):  # setting "stream" to true asks for events, not JSON
        assert status == 200 and not whole and at == ("stream",) and new is True, at
        assert reply.startswith(("event:", "data:")), reply[:200]
        return
    if status == 200:
        face.answered(reply)
        return
    message, param = face.error(reply)
    assert status == 400
    if not whole:
        assert names_field(message, param, at, face.indexed), (at, message)
