"""``hscale serve`` as an ASGI app (Starlette, run by uvicorn): three API faces over one
batcher, every request recorded.

Routes: ``POST /v1/chat/completions``, ``/v1/responses``, ``/v1/messages`` (and
``/v1/messages/count_tokens``), the same without ``/v1``; ``GET /v1/models`` (with the
model's context length), ``/health``, ``HEAD /`` and ``GET /``. Anything else is a 404 (a
known path asked with another method a 405 naming the methods it takes) in the shape of the
API its path resembles, recorded like every other request; so are a body past MAX_BODY (413)
and headers past MAX_HEADERS (431), the body read to its end first so that a client still
sending hears the reply rather than a reset. A row (request,
reply, tool calls, token ids, the client's session) is on disk before its reply is sent, so
SIGTERM or SIGKILL of the server loses no answered request (hscale.train.lm._record). Binds to
loopback unless told otherwise: the endpoint has no authentication, so it answers only
requests whose Host names this machine and that come from no other site's page
(hscale.web.LocalOnly: a DNS-rebinding or cross-site request is a recorded 403, a page's
text/plain or form body a 415).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request as HTTPRequest
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from hscale.errors import HscaleError
from hscale.train.lm import Recorder
from hscale.train.serving import _anthropic as anthropic
from hscale.train.serving import _openai_chat as openai_chat
from hscale.train.serving import _responses as responses
from hscale.train.serving._chat import BadRequest, Reply, new_id
from hscale.train.serving._engine import Batcher, Completer
from hscale.train.serving._live import Live
from hscale.train.serving._tool_prompt import to_messages
from hscale.web import LocalOnly

MAX_BODY = 32 << 20  # bytes of one request's body; past them a 413
MAX_DRAIN = 4 * MAX_BODY  # bytes of a refused body read and dropped; past them, a reset
MAX_HEADERS = 32 << 10  # bytes of one request's headers; past them a 431
TURN_LIMIT = "(the turn limit of this episode is reached)"
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # the escape of a surrogate, paired or not
FACES = {"chat": (openai_chat, "chatcmpl-"), "responses": (responses, "resp_"),
         "messages": (anthropic, "msg_")}
# headers harnesses name their session by (Claude Code, Codex CLI, OpenClaw, hscale's own)
SESSION_HEADERS = ("x-hscale-session", "x-claude-code-session-id", "session_id",
                   "x-session-id", "x-openclaw-session")


class _TooLarge(ValueError):
    pass


class Service:
    """The state routes share: the completer, its batcher, the record."""

    def __init__(self, completer: Completer, batcher: Batcher, recorder: Recorder | None,
                 verbose: bool = False) -> None:
        self.completer, self.batcher, self.recorder = completer, batcher, recorder
        self.verbose, self.started = verbose, int(time.time())
        self.limits: dict[str, int] = {}  # session -> requests the model answers
        self.temperatures: dict[str, float] = {}  # session -> the decoding it gets
        self.counts: Counter[str] = Counter()  # session -> requests made
        self._calls: dict[str, list[dict[str, Any]]] = {}  # session -> its calls, in brief
        self._seen: dict[str, list[Any]] = {}  # session -> the messages of its last call

    def limit(self, session: str, requests: int, temperature: float | None = None) -> None:
        """Answer ``session``'s requests past ``requests`` with a final text, no tool call:
        a black-box harness then ends its episode (its turn bound). With ``temperature``,
        its requests are decoded so whatever the harness asks (an evaluation's greedy
        pass is greedy under every CLI)."""
        self.limits[session] = requests
        if temperature is not None:
            self.temperatures[session] = temperature

    def live(self, request: Any) -> bool:
        """Whether a request streams its text as it is decoded (the scheduler's; a request
        for log-probs gets its text with them at the end)."""
        return bool(request.stream and not request.logprobs
                    and getattr(self.batcher, "streams", False))

    def requests(self, session: str) -> int:
        return self.counts[session]

    def record(self, row: dict[str, Any]) -> None:
        if self.recorder is not None:
            self.recorder.add(row)
        if row.get("session"):
            self._calls.setdefault(row["session"], []).append(self._brief(row))

    def calls(self, session: str) -> list[dict[str, Any]]:
        """A session's calls so far, in brief (an episode's transcript keeps them), and
        forgotten here: what each added to the conversation, the reply, its tool calls,
        tokens and seconds. The record keeps every field."""
        self._seen.pop(session, None)
        return self._calls.pop(session, [])

    def _brief(self, row: dict[str, Any]) -> dict[str, Any]:
        try:
            messages = json.loads(row.get("messages") or "[]")
            calls = json.loads(row.get("tool_calls") or "[]")
        except ValueError:
            messages, calls = [], []
        before = self._seen.get(row["session"], [])
        shared = len(before) if messages[:len(before)] == before else 0
        self._seen[row["session"]] = messages
        return {"status": row.get("status"), "api": row.get("api"),
                "prompt_tokens": row.get("prompt_tokens"),
                "completion_tokens": row.get("completion_tokens"),
                "seconds": row.get("seconds"), "finish_reason": row.get("finish_reason"),
                "resent": shared, "new": messages[shared:], "reply": row.get("reply", ""),
                "tool_calls": calls, "error": row.get("error", "")}

    def row(self, http: HTTPRequest, api: str, request_id: str) -> dict[str, Any]:
        return {"time": datetime.now(UTC), "request_id": request_id, "path": http.url.path,
                "method": http.method, "api": api, "status": 200,
                "model": self.completer.name, "messages": "", "params": "", "tools": "",
                "tool_specs": "", "reply": "", "tool_calls": "", "token_ids": "",
                "prompt_ids": "", "logprobs": "", "by": "", "finish_reason": "",
                "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0, "error": "",
                "session": _session(http)}


def _session(http: HTTPRequest) -> str:
    return next((http.headers[h] for h in SESSION_HEADERS if h in http.headers), "")


async def _body(http: HTTPRequest) -> Any:
    declared = http.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        if not _waits(http):
            await _drain(http)
        raise _TooLarge(f"body of {declared} bytes; at most {MAX_BODY}")
    data = bytearray()
    async for chunk in http.stream():
        data += chunk
        if len(data) > MAX_BODY:
            await _drain(http)
            raise _TooLarge(f"body over {MAX_BODY} bytes")
    try:
        value = json.loads(bytes(data), parse_constant=_not_json, parse_float=_finite)
    except RecursionError:
        raise BadRequest("body is JSON nested too deeply") from None
    except ValueError as exc:  # not UTF-8, not JSON, an integer past Python's 4300 digits
        raise BadRequest(f"body is not JSON: {exc}") from None
    if _SURROGATE.search(data) and not _unicode(value):
        raise BadRequest("body is not JSON text: a string holds a lone surrogate "
                         "(\\ud800-\\udfff unpaired), which no UTF-8 text can hold")
    return value


def _not_json(text: str) -> Any:
    raise ValueError(f"{text} is not a JSON number")


def _finite(text: str) -> float:
    """A JSON number as a float; past a float's range it is refused, as NaN and Infinity
    are: no reply that echoes it could be written as JSON."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is past a float's range")
    return value


def _unicode(value: Any) -> bool:
    """Whether every string of a JSON value is Unicode text (no lone surrogate): what a
    tokenizer, the record and the reply can encode."""
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


async def _drain(http: HTTPRequest, keep: int = 0) -> bytes:
    """Read the rest of a body and drop it but for its first ``keep`` bytes: a client still
    sending a body the server refuses then reads the refusal, where a reply sent before the
    body ends meets a reset. Past MAX_DRAIN bytes the rest is left (the connection closes)."""
    head, read, more = bytearray(), 0, True
    while more and read <= MAX_DRAIN:
        message = await http.receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        head += chunk[:keep - len(head)]
        read, more = read + len(chunk), message.get("more_body", False)
    return bytes(head)


def _waits(http: HTTPRequest) -> bool:
    """Whether the client waits for ``100 Continue`` before it sends the body: a request
    refused before the body is read then gets none to drain."""
    return http.headers.get("expect", "").lower() == "100-continue"


def _endpoint(api: str, counting: bool = False):
    face, prefix = FACES[api]

    async def answer(http: HTTPRequest) -> Response:
        service: Service = http.app.state.service
        began, request_id = time.perf_counter(), new_id(prefix)
        row = service.row(http, api, request_id)
        status, payload, parsed, reply = 200, {}, None, None
        try:
            data = await _body(http)
            parsed = (anthropic.parse(data, row["session"], counting=True) if counting
                      else face.parse(data, row["session"]))
            if row["session"] in service.temperatures:  # the decoding the session is given
                parsed = replace(parsed, temperature=service.temperatures[row["session"]])
            row.update(parsed.record())
            if counting:
                payload = {"input_tokens": _count(service, parsed)}
            else:
                service.counts[row["session"]] += 1
                if service.counts[row["session"]] > service.limits.get(row["session"], 1 << 62):
                    reply = Reply(TURN_LIMIT, by="server")
                else:
                    live = Live(asyncio.get_running_loop()) if service.live(parsed) else None
                    waiter = asyncio.wrap_future(service.batcher.submit(parsed, live)
                                                 if live else service.batcher.submit(parsed))
                    try:
                        if live is not None and await live.started():
                            return _streamed(service, face, parsed, live, waiter, row, began)
                        reply = await waiter
                    except asyncio.CancelledError:  # the server stops under this request
                        waiter.cancel()
                        row.update(status=503, error="the server stopped first",
                                   seconds=time.perf_counter() - began)
                        service.record(row)
                        return JSONResponse(face.error(503, "the server is stopping"),
                                            status_code=503)
                row.update(reply.record())
        except BadRequest as exc:
            status, payload = 400, face.error(400, str(exc), exc.param)
        except _TooLarge as exc:
            status, payload = 413, face.error(413, str(exc))
        except HscaleError as exc:  # the model's own refusals (a prompt past its context)
            status, payload = 400, face.error(400, exc.one_line())
        except Exception as exc:  # noqa: BLE001 -- a model failure is a 500, not a traceback
            message = f"{type(exc).__name__}: {exc}"
            print(f"hscale serve: {request_id} failed: {message}", file=sys.stderr)
            status, payload = 500, face.error(500, f"the model failed: {message}")
        row.update(status=status, seconds=time.perf_counter() - began,
                   error=_message(payload) if status != 200 else "")
        service.record(row)  # on disk before the reply is sent
        if status != 200 or counting:
            return JSONResponse(payload, status_code=status)
        model = service.completer.name
        if parsed.stream:
            return StreamingResponse(face.stream(parsed, reply, request_id, model),
                                     media_type="text/event-stream",
                                     headers={"Cache-Control": "no-cache"})
        return JSONResponse(face.body(parsed, reply, request_id, model))

    return answer


def _streamed(service: Service, face: Any, request: Any, live: Live, waiter: asyncio.Future,
              row: dict[str, Any], began: float) -> StreamingResponse:
    """A reply streamed as it is decoded: its text as it comes, then, once its row is on
    disk, the rest (the text held back, the calls, the finish). A failure after the start is
    an error event; a client that leaves frees its row (and its row says so)."""
    out = face.Stream(request, row["request_id"], service.completer.name)

    async def events() -> AsyncIterator[str]:
        sent, recorded = "", False
        try:
            for event in out.start(live.prompt_tokens):
                yield event
            while (delta := await live.next()) is not None:
                sent += delta
                for event in out.text(delta):
                    yield event
            try:
                reply = await waiter
            except Exception as exc:  # noqa: BLE001 -- the status is sent: an error event
                message = f"the model failed: {type(exc).__name__}: {exc}"
                row.update(status=500, error=message, seconds=time.perf_counter() - began)
                service.record(row)
                recorded = True
                for event in out.failed(message):
                    yield event
                return
            row.update(reply.record(), seconds=time.perf_counter() - began)
            service.record(row)  # on disk before the reply ends
            recorded = True
            for event in out.end(reply, sent):
                yield event
        finally:
            waiter.cancel()
            if not recorded:
                row.update(status=499, error="the client left before the reply ended",
                           seconds=time.perf_counter() - began)
                service.record(row)

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})


def _message(payload: dict[str, Any]) -> str:
    error = payload.get("error")
    return str(error.get("message", "")) if isinstance(error, dict) else ""


def _count(service: Service, request: Any) -> int:
    model = getattr(service.completer, "model", None)
    if getattr(service.completer, "template_tools", False):
        prompt = service.completer.template_prompt(request)
        if isinstance(prompt, BadRequest):
            raise prompt
        return len(prompt)
    count = getattr(model, "prompt_tokens", None)
    messages = to_messages(request.turns, request.tools, request.tool_choice)
    if callable(count):
        return int(count(messages))
    return sum(len(m.content) for m in messages) // 4 + 1  # proxy: an estimate


async def _models(http: HTTPRequest) -> Response:
    service: Service = http.app.state.service
    context = service.completer.context
    entry = {"id": service.completer.name, "object": "model", "created": service.started,
             "owned_by": "hscale", "type": "model", "display_name": service.completer.name,
             "created_at": datetime.fromtimestamp(service.started, UTC).isoformat()}
    if context:
        entry.update(context_length=context, max_model_len=context)
    return JSONResponse({"object": "list", "data": [entry], "has_more": False,
                         "first_id": entry["id"], "last_id": entry["id"]})


async def _health(http: HTTPRequest) -> Response:
    return JSONResponse({"status": "ok", "model": http.app.state.service.completer.name})


async def _root(http: HTTPRequest) -> Response:
    if http.method == "HEAD":
        return Response(status_code=200)
    return await _health(http)


def _api_of(path: str) -> str:
    """The API whose error shape a path that no route answers gets."""
    return ("messages" if "/messages" in path else "responses" if "/responses" in path
            else "chat")


async def _refuse(http: HTTPRequest, status: int, message: str,
                  headers: dict[str, str] | None = None) -> Response:
    """An error no route answers, in the shape of the API the path resembles; recorded with
    the start of what was sent, its body read to the end first."""
    service: Service = http.app.state.service
    api = _api_of(http.url.path)
    body = b"" if _waits(http) else await _drain(http, keep=4096)
    row = service.row(http, api, new_id("req_"))
    row.update(status=status, error=message,
               params=json.dumps({"body": body.decode(errors="replace")}))
    service.record(row)
    return JSONResponse(FACES[api][0].error(status, message), status_code=status,
                        headers=headers)


async def _unrouted(http: HTTPRequest, exc: Exception) -> Response:
    """The router's 404 (no such path) and 405 (a path asked with a method it does not
    take: ``Allow`` names those it takes)."""
    where = f"{http.method} {http.url.path}"
    if not isinstance(exc, HTTPException) or exc.status_code != 405:
        return await _refuse(http, 404, f"no such path {where}")
    allow = ", ".join(sorted((exc.headers or {}).get("Allow", "").split(", ")))
    return await _refuse(http, 405, f"method not allowed: {where}; it takes {allow}",
                         {"Allow": allow})


class _HeaderLimit:
    """A 431 for a request whose headers pass MAX_HEADERS bytes, before any route (uvicorn's
    h11 bounds only a header block that arrives in pieces, at its
    h11_max_incomplete_event_size)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        size = sum(len(k) + len(v) + 4 for k, v in scope.get("headers", ()))
        if scope["type"] != "http" or size <= MAX_HEADERS:
            await self.app(scope, receive, send)
            return
        http = HTTPRequest(scope, receive)
        response = await _refuse(http, 431, f"request headers of {size} bytes; at most "
                                            f"{MAX_HEADERS}", {"Connection": "close"})
        await response(scope, receive, send)


async def _refused(http: HTTPRequest, status: int, message: str) -> Response:
    """hscale.web.LocalOnly's refusal (a foreign Host or Origin, a page's simple body), in
    the API's shape and recorded like every request: the record shows who tried."""
    return await _refuse(http, status, message)


def build_app(service: Service, hosts: tuple[str, ...] = ()) -> Starlette:
    """The app behind hscale.web.LocalOnly (``hosts``: names besides localhost and IP
    addresses a request's Host may give)."""
    routes = [Route("/", _root, methods=["GET", "HEAD"]),
              Route("/health", _health), Route("/v1/health", _health),
              Route("/v1/models", _models), Route("/models", _models)]
    for api, paths in (("chat", ("/v1/chat/completions", "/chat/completions")),
                       ("responses", ("/v1/responses", "/responses")),
                       ("messages", ("/v1/messages", "/messages"))):
        routes += [Route(p, _endpoint(api), methods=["POST"]) for p in paths]
    routes += [Route(p, _endpoint("messages", counting=True), methods=["POST"])
               for p in ("/v1/messages/count_tokens", "/messages/count_tokens")]
    guard = Middleware(LocalOnly, json_api=True, hosts=hosts, refuse=_refused,
                       host_hint=", or start hscale serve with --allow-host NAME")
    app = Starlette(routes=routes, middleware=[guard, Middleware(_HeaderLimit)],
                    exception_handlers={404: _unrouted, 405: _unrouted})
    app.state.service = service
    return app
