"""Any ChatModel behind an OpenAI-compatible chat-completions endpoint, so tools that speak that
API (hscale's own ``OpenAIChatPolicy``, other harnesses, agent frameworks) can drive it.

Standard library only (``http.server``): no web framework to install. Model calls are serialised
by a lock (one batch at a time; the models here are small or batch internally). Binds to
loopback unless told otherwise: the endpoint has no authentication.

Every request (good or bad) can be recorded (:mod:`hscale.train.lm.record`): its row is on
disk before its reply is sent, so SIGTERM or SIGKILL of the server loses no answered request.
Read them back with ``hscale.train.lm.record.read_record(folder)``.
"""

from __future__ import annotations

import ipaddress
import json
import math
import socket
import socketserver
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.harness.engine import Generation
from hscale.harness.types import Message
from hscale.train.lm.base import MAX_NEW_TOKENS, ChatModel
from hscale.train.lm.record import Recorder

MAX_BODY = 32 << 20  # bytes of one request
MAX_TOKENS_LIMIT = 1 << 16
ROLES = ("system", "user", "assistant", "tool")


class BadRequest(ValueError):
    """A request the client must fix: HTTP 400 with this message."""


# --- requests -----------------------------------------------------------------------------
def parse_request(body: bytes) -> tuple[list[Message], dict[str, Any]]:
    """(messages, params) of a chat-completions body; BadRequest says what is wrong."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"body is not JSON: {exc}") from None
    except RecursionError:
        raise BadRequest("body is JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    raw = data.get("messages")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("'messages' must be a non-empty list")
    messages = [_message(i, m) for i, m in enumerate(raw)]
    if data.get("stream"):
        raise BadRequest("streaming is not supported; send stream: false")
    if data.get("n", 1) != 1:
        raise BadRequest("only n = 1 is supported")
    temperature = data.get("temperature", 1.0)
    if not _number(temperature) or temperature < 0:
        raise BadRequest("'temperature' must be a number >= 0")
    limit = data.get("max_completion_tokens", data.get("max_tokens"))
    limit = MAX_NEW_TOKENS if limit is None else limit
    if not _integer(limit) or not 1 <= limit <= MAX_TOKENS_LIMIT:
        raise BadRequest(f"'max_tokens' must be an integer in 1..{MAX_TOKENS_LIMIT}")
    seed = data.get("seed")
    if seed is not None and not _integer(seed):
        raise BadRequest("'seed' must be an integer")
    logprobs = data.get("logprobs", False)
    if not isinstance(logprobs, bool):
        raise BadRequest("'logprobs' must be true or false")
    params = {"model": data.get("model"), "temperature": float(temperature),
              "max_tokens": int(limit), "seed": seed, "logprobs": logprobs}
    return messages, params


def _message(index: int, m: Any) -> Message:
    if not isinstance(m, dict) or m.get("role") not in ROLES:
        raise BadRequest(f"messages[{index}] needs a role, one of {', '.join(ROLES)}")
    content = m.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        if not all(isinstance(p, dict) and isinstance(p.get("text", ""), str) for p in content):
            raise BadRequest(f"messages[{index}].content parts must be objects with text")
        content = "".join(p.get("text", "") for p in content if p.get("type", "text") == "text")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise BadRequest(f"messages[{index}].content must be a string")
    return Message(m["role"], content)


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _integer(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


# --- replies ------------------------------------------------------------------------------
def finish_reason(gen: Generation) -> str:
    """``stop`` when the model ended its turn (it has the end token's log-prob), else
    ``length``; without log-probs, ``stop``."""
    if gen.logprobs is None or gen.token_ids is None:
        return "stop"
    return "stop" if len(gen.logprobs) > len(gen.token_ids) else "length"


def completion(model: ChatModel, request_id: str, messages: Sequence[Message],
               gen: Generation, logprobs: bool) -> dict[str, Any]:
    """The chat-completions reply for one generation."""
    reason = finish_reason(gen)
    count = getattr(model, "prompt_tokens", None)
    prompt = int(count(messages)) if callable(count) else 0
    done = len(gen.token_ids) if gen.token_ids is not None else len(gen.logprobs or ())
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": gen.text},
                              "finish_reason": reason, "logprobs": None}
    if logprobs:
        choice["logprobs"] = {"content": _logprob_entries(model, gen, reason)}
    return {"id": request_id, "object": "chat.completion", "created": int(time.time()),
            "model": model.name, "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": done,
                      "total_tokens": prompt + done}}


def _logprob_entries(model: ChatModel, gen: Generation, reason: str) -> list[dict[str, Any]]:
    """One entry per generated token, plus the end-of-turn token's when the model chose it
    (hscale's Generation convention, which its client keeps)."""
    if gen.logprobs is None:
        return []
    text = getattr(model, "token_text", None)
    ids = list(gen.token_ids or ())
    out = []
    for k, lp in enumerate(gen.logprobs):
        if k < len(ids):
            token = text(ids[k]) if callable(text) else str(ids[k])
        else:
            token = "<eos>" if reason == "stop" else ""
        out.append({"token": token, "logprob": float(lp), "bytes": list(token.encode()),
                    "top_logprobs": []})
    return out


# --- the server ---------------------------------------------------------------------------
class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 -- http.server's naming
        path = self.path.split("?")[0].rstrip("/")
        name = self.server.model.name
        if path in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [
                {"id": name, "object": "model", "created": self.server.started,
                 "owned_by": "hscale"}]})
        elif path in ("/health", "/v1/health"):
            self._send(200, {"status": "ok", "model": name})
        else:
            self._error(404, f"no such path {path or '/'}", "not_found_error")

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?")[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._drain()
            self._error(404, f"no such path {path or '/'}", "not_found_error")
            return
        began = time.perf_counter()
        request_id = f"chatcmpl-{uuid.uuid4().hex}"
        row: dict[str, Any] = {
            "time": datetime.now(UTC), "request_id": request_id, "path": path, "status": 200,
            "model": self.server.model.name, "messages": "", "params": "", "reply": "",
            "finish_reason": "", "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
            "error": ""}
        status, payload = 200, {}
        try:
            messages, params = parse_request(self._body())
            row["messages"] = json.dumps([{"role": m.role, "content": m.content}
                                          for m in messages])
            row["params"] = json.dumps(params)
            payload = self.server.complete(request_id, messages, params)
        except (BadRequest, HscaleError) as exc:  # the model's own refusals are the client's too
            status, message = 400, exc.one_line() if isinstance(exc, HscaleError) else str(exc)
            payload = _error_body(status, message, "invalid_request_error")
        except _TooLarge as exc:
            status, payload = 413, _error_body(413, str(exc), "invalid_request_error")
        except Exception as exc:  # noqa: BLE001 -- a model failure is a 500, never a traceback
            message = f"{type(exc).__name__}: {exc}"
            print(f"hscale serve: {request_id} failed: {message}", file=sys.stderr)
            status, payload = 500, _error_body(500, f"the model failed: {message}",
                                               "server_error")
        else:
            choice, usage = payload["choices"][0], payload["usage"]
            row.update(reply=choice["message"]["content"], finish_reason=choice["finish_reason"],
                       prompt_tokens=usage["prompt_tokens"],
                       completion_tokens=usage["completion_tokens"])
        row.update(status=status, error="" if status == 200 else payload["error"]["message"],
                   seconds=time.perf_counter() - began)
        if self.server.recorder is not None:  # on disk before the reply is sent
            self.server.recorder.add(row)
        self._send(status, payload)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise BadRequest("chunked bodies are not supported; send Content-Length")
        try:
            size = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self.close_connection = True
            raise BadRequest("a Content-Length header is required") from None
        if size < 0 or size > MAX_BODY:
            self.close_connection = True
            raise _TooLarge(f"body of {size} bytes; at most {MAX_BODY}")
        return self.rfile.read(size)

    def _drain(self) -> None:
        try:
            size = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            size = -1
        if 0 <= size <= MAX_BODY:
            self.rfile.read(size)
        else:
            self.close_connection = True

    def _error(self, status: int, message: str, kind: str) -> None:
        self._send(status, _error_body(status, message, kind))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except ConnectionError:  # the client hung up: nobody to answer (its row is recorded)
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if self.server.verbose:
            super().log_message(format, *args)


class _TooLarge(ValueError):
    pass


def _error_body(status: int, message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": status}}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: ChatModel, recorder: Recorder | None,
                 verbose: bool, family: int) -> None:
        self.address_family = family
        self.model, self.recorder, self.verbose = model, recorder, verbose
        self.started = int(time.time())
        self.lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-request is no error of the server's; anything else is
        printed as socketserver does."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def server_bind(self) -> None:
        # HTTPServer's own looks the host's FQDN up (a DNS query that can hang offline)
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def complete(self, request_id: str, messages: list[Message], params: dict[str, Any]
                 ) -> dict[str, Any]:
        greedy = params["temperature"] == 0
        with self.lock:
            gen = self.model.generate([messages], greedy=greedy,
                                      max_new_tokens=params["max_tokens"], seed=params["seed"])[0]
        return completion(self.model, request_id, messages, gen, params["logprobs"])


class ChatServer:
    """A running server: ``url`` is the base URL (ending in ``/v1``); ``shutdown()`` stops it
    and writes the record's last part. A context manager."""

    def __init__(self, httpd: _HTTPServer, host: str) -> None:
        self._httpd = httpd
        self.host = host
        self.port = httpd.server_address[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/v1"
        self._thread = threading.Thread(target=httpd.serve_forever, name="hscale-serve",
                                        daemon=True)
        self._thread.start()
        self._closed = False

    @property
    def model(self) -> ChatModel:
        return self._httpd.model

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
        if self._httpd.recorder is not None:
            self._httpd.recorder.close()

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def serve(model: ChatModel, host: str = "127.0.0.1", port: int = 8000,
          record: str | Path | None = None, allow_remote: bool = False,
          verbose: bool = False) -> ChatServer:
    """Start serving ``model`` in a background thread (port 0 picks a free port)."""
    family = _family(host, allow_remote)
    recorder = Recorder(record) if record is not None else None
    try:
        httpd = _HTTPServer((host, port), model, recorder, verbose, family)
    except OSError as exc:
        if recorder is not None:
            recorder.close()
        raise HscaleError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                          "pick another --port (0 picks a free one)") from None
    return ChatServer(httpd, host)


def _family(host: str, allow_remote: bool) -> int:
    """The address family for ``host``; HscaleError unless it is loopback or remote is allowed."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise HscaleError(f"cannot resolve host {host!r}: {exc.strerror}",
                          "use 127.0.0.1") from None
    addresses = {info[4][0].split("%")[0] for info in infos}
    if not allow_remote and not all(ipaddress.ip_address(a).is_loopback for a in addresses):
        raise HscaleError(f"{host} is not a loopback address: the endpoint has no "
                          "authentication", "use 127.0.0.1, or pass --allow-remote")
    return infos[0][0]


__all__ = ["ChatServer", "completion", "parse_request", "serve"]
