"""``hscale serve`` at its limits, over a real socket: a body past 32 MiB is a 413 the client
reads (no reset), headers past 32 KiB a 431, a known path under a method it does not take a
405 with ``Allow``; malformed messages are 400s naming the field in each API's shape; and a
malformed endpoint URL, wherever one is taken, is one line (exit 2 from the CLI)."""

from __future__ import annotations

import http.client
import json

import httpx
import pytest

from hscale.errors import HscaleError
from hscale.train.lm import is_endpoint, read_record
from hscale.train.serving import ScriptedChat, serve

# internal: tests the HTTP app and its limits
from hscale.train.serving._app import MAX_BODY, MAX_HEADERS

# internal: tests the server's completer factory
from hscale.train.serving._server import completer_of

from ..cli import assert_user_error, hscale

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    record = tmp_path_factory.mktemp("record")
    with serve(ScriptedChat(), port=0, record=record) as running:
        running.record_dir = record
        yield running


def _post(server, path: str, body: bytes, headers: dict[str, str] | None = None
          ) -> tuple[int, dict[str, str], dict]:
    """POST with http.client as a plain client does (the whole body sent, then the reply)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("POST", path, body=body, headers={
            "Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read())
    finally:
        connection.close()


@pytest.mark.parametrize("content, field", [
    (None, "messages.0.content"),
    ([{"type": "text", "text": "a"}, {"text": "b"}], "messages.0.content.1.type"),
    ([{"type": "text", "text": "a"}, {"type": "text"}], "messages.0.content.1.text"),
    ([{"type": "tool_use", "id": "t", "name": "bash"}], "messages.0.content.0.input"),
    ([{"type": "tool_result", "content": "x"}], "messages.0.content.0.tool_use_id"),
])
def test_a_malformed_message_is_an_anthropic_400_naming_the_field(server, content, field):
    body = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": content}]}
    status, _, reply = _post(server, "/v1/messages", json.dumps(body).encode())
    assert status == 400 and reply["type"] == "error"
    assert reply["error"]["type"] == "invalid_request_error"
    assert reply["error"]["message"].startswith(f"{field}: "), reply


@pytest.mark.parametrize("path, body, field", [
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": None}]},
     "messages[0].content"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [{"text": "a"}]}]},
     "messages[0].content[0].type"),
    ("/v1/chat/completions", {"messages": [{"role": "assistant", "tool_calls": [
        {"id": "c", "function": {"arguments": "{}"}}]}]},
     "messages[0].tool_calls[0].function.name"),
    ("/v1/responses", {"input": [{"role": "user", "content": [{"type": "input_text"}]}]},
     "input[0].content[0].text"),
    ("/v1/responses", {"input": [{"type": "function_call_output", "output": "x"}]},
     "input[0].call_id"),
])
def test_a_malformed_message_is_an_openai_400_naming_the_field(server, path, body, field):
    status, _, reply = _post(server, path, json.dumps(body).encode())
    assert status == 400 and reply["error"]["type"] == "invalid_request_error"
    assert reply["error"]["param"] == field
    assert reply["error"]["message"].startswith(f"{field}: "), reply


def test_a_body_past_the_limit_is_a_413_the_client_reads(server):
    body = b"x" * (33 << 20)
    assert len(body) > MAX_BODY
    # urllib's way: Connection: close, the whole body sent before the reply is read
    for headers in ({"Connection": "close"}, {}):
        status, _, reply = _post(server, "/v1/messages", body, headers)
        assert status == 413 and reply["error"]["type"] == "request_too_large"
        assert str(MAX_BODY) in reply["error"]["message"]
    chunks = (body[i:i + (1 << 20)] for i in range(0, len(body), 1 << 20))  # no length given
    reply = httpx.post(server.url + "/chat/completions", content=chunks, timeout=30)
    assert reply.status_code == 413 and "over" in reply.json()["error"]["message"]
    small = json.dumps({"messages": HELLO, "max_tokens": 4}).encode()
    assert _post(server, "/v1/chat/completions", small)[0] == 200  # still serving


def test_headers_past_the_limit_are_a_431(server):
    body = json.dumps({"messages": HELLO, "max_tokens": 4}).encode()
    status, _, _ = _post(server, "/v1/chat/completions", body, {"X-Pad": "a" * 30_000})
    assert status == 200
    status, headers, reply = _post(server, "/v1/chat/completions", body,
                                   {"X-Pad": "a" * 100_000})
    assert status == 431 and headers["connection"] == "close"
    assert str(MAX_HEADERS) in reply["error"]["message"]
    try:  # past uvicorn's own bound (1 MiB): its 400, or the connection closed under it
        refused = _post(server, "/v1/chat/completions", body, {"X-Pad": "a" * (2 << 20)})[0]
    except (ConnectionError, http.client.HTTPException, json.JSONDecodeError):
        refused = 400
    assert refused in (400, 431)


@pytest.mark.parametrize("path, allow", [
    ("/v1/messages", "POST"), ("/v1/chat/completions", "POST"), ("/v1/responses", "POST"),
    ("/v1/messages/count_tokens", "POST"), ("/v1/models", "GET, HEAD"),
    ("/health", "GET, HEAD"),
])
@pytest.mark.parametrize("method", ["PUT", "DELETE"])
def test_a_known_path_under_another_method_is_a_405_naming_the_allowed(server, path, allow,
                                                                      method):
    reply = httpx.request(method, server.url.removesuffix("/v1") + path, timeout=10)
    assert reply.status_code == 405 and reply.headers["allow"] == allow
    assert "Traceback" not in reply.text and allow in reply.text


def test_an_unknown_path_stays_a_404_and_refusals_are_recorded(server):
    base = server.url.removesuffix("/v1")
    for method in ("GET", "PUT", "DELETE", "POST"):
        assert httpx.request(method, base + "/v1/nowhere", timeout=10).status_code == 404
    httpx.put(base + "/v1/messages", content=b'{"x": 1}', timeout=10)
    rows = read_record(server.record_dir)
    put = rows[(rows.path == "/v1/messages") & (rows.method == "PUT")].iloc[-1]
    assert put.status == 405 and json.loads(put.params)["body"] == '{"x": 1}'
    assert set(rows[rows.path == "/v1/nowhere"].status) == {404}


BAD_URLS = ["http://[::1", "http://h:99999/v1", "http://h:abc/v1", "http:///v1", "http://",
            "ftp://h/v1", "https://a b/v1", "http://h/v1?key=1", "http://[abc]/v1",
            "http://h:0/v1"]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_malformed_endpoint_url_is_one_line_wherever_it_is_taken(url):
    with pytest.raises(HscaleError, match="endpoint") as info:
        is_endpoint(url)
    assert url in info.value.one_line() and info.value.hint
    with pytest.raises(HscaleError):
        completer_of(url)  # hscale serve's proxy mode


@pytest.mark.parametrize("url", ["http://[::1", "http://h:99999/v1", "ftp://h/v1"])
def test_hscale_evaluate_refuses_a_malformed_url_in_one_line(url, tmp_path):
    done = hscale("evaluate", url, "--out", tmp_path / "o")
    assert_user_error(done, f"endpoint {url!r}")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "https://h.example/v1",
                                 "http://[::1]:8000/v1", "HTTP://localhost/v1"])
def test_a_well_formed_url_is_an_endpoint_and_a_name_is_not(url):
    assert is_endpoint(url)
    assert not is_endpoint("hscale-tiny") and not is_endpoint("runs/model.pt")
