"""The OpenAI Chat Completions face: ``POST /v1/chat/completions``, plain or streamed
(``data:`` chunks ending in ``data: [DONE]``), with ``tools``/``tool_choice``, ``tool_calls``
out and ``tool`` results in. Fields the real API has and hscale does not use (``top_p``,
``user``, ``metadata``, ...) are accepted and ignored, as the real API ignores what a model
does not support. A message or tool of the wrong shape is a 400 whose ``param`` names the
field (``messages[0].content[1].text``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import Field, StrictStr

from hscale.train.serving._chat import (
    BadRequest,
    Call,
    Reply,
    Request,
    Tool,
    Turn,
    check_sampling,
    integer,
    number,
    seed_of,
    text_of,
    tool_name,
    tools_of,
    unsent,
)
from hscale.train.serving._wire import Kind, Name, Schema, Wire, check, either, kinds, text_or

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool", "function": "tool"}


# --- the messages' shape (what the real API requires of what is read here) --------------------
class _Text(Wire):
    type: Literal["text"]
    text: StrictStr


class _Refusal(Wire):
    type: Literal["refusal"]
    refusal: StrictStr


class _Function(Wire):
    name: Name
    arguments: either("must be a JSON string or an object", str=StrictStr,
                      dict=dict[str, Any]) = "{}"


class _Call(Wire):
    id: StrictStr
    type: Literal["function"] = "function"
    function: _Function


class _Prompt(Wire):  # system, developer
    role: StrictStr
    content: text_or(_Text)


class _User(Wire):
    role: StrictStr
    content: text_or(kinds({"text": _Text}, Kind))


class _Assistant(Wire):
    role: StrictStr
    content: text_or(kinds({"text": _Text, "refusal": _Refusal}, Kind)) | None = None
    tool_calls: list[_Call] | None = None


class _Result(Wire):  # hscale's own client sends no tool_call_id
    role: StrictStr
    content: text_or(_Text)
    tool_call_id: StrictStr | None = None
    name: StrictStr | None = None


class _FunctionResult(Wire):  # the deprecated function role
    role: StrictStr
    name: StrictStr
    content: StrictStr | None = None


class _Role(Wire):
    role: Literal[tuple(ROLES)]


class _FunctionSpec(Wire):
    name: Name
    description: StrictStr | None = None
    parameters: Schema | None = None


class _Tool(Wire):
    type: Literal["function"] = "function"
    function: _FunctionSpec


class _Body(Wire):
    messages: Annotated[list[kinds({
        "system": _Prompt, "developer": _Prompt, "user": _User, "assistant": _Assistant,
        "tool": _Result, "function": _FunctionResult}, _Role, lambda m: m.get("role"))],
                        Field(min_length=1)]
    tools: list[_Tool] | None = None


def parse(data: Any, session: str = "") -> Request:
    """A chat-completions body as a Request; BadRequest names the field."""
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    check(_Body, data, indexed=True)  # from here on the messages and tools have their shape
    check_sampling(data, "chat")
    turns = [_turn(m) for m in data["messages"]]
    if data.get("n", 1) != 1:
        raise BadRequest("only n = 1 is supported", "n")
    cap = "max_completion_tokens" if "max_completion_tokens" in data else "max_tokens"
    logprobs = data.get("logprobs", False)
    if not isinstance(logprobs, bool):
        raise BadRequest("'logprobs' must be true or false", "logprobs")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("'stream' must be true or false", "stream")
    options = data.get("stream_options") or {}
    return Request(
        api="chat", turns=turns, tools=_tools(data.get("tools")),
        tool_choice=_choice(data.get("tool_choice")),
        max_tokens=integer(data.get(cap), cap, 256), temperature=number(
            data.get("temperature"), "temperature", 1.0), seed=seed_of(data.get("seed")),
        stream=stream, model=data.get("model") if isinstance(data.get("model"), str) else None,
        logprobs=logprobs, session=session or str(data.get("user") or ""),
        options={"include_usage": bool(isinstance(options, dict)
                                       and options.get("include_usage"))})


def _turn(m: dict[str, Any]) -> Turn:
    """A (checked) message as a turn."""
    role = ROLES[m["role"]]
    calls = tuple(_call(c) for c in m.get("tool_calls") or ()) if role == "assistant" else ()
    call_id = (m.get("tool_call_id") or m.get("name") or "") if role == "tool" else ""
    return Turn(role, text_of(m.get("content"), "content"), calls, call_id)


def _call(raw: dict[str, Any]) -> Call:
    arguments = raw["function"].get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return Call(raw["id"], raw["function"]["name"], arguments)


def _tools(raw: Any) -> list[Tool]:
    return tools_of(raw, lambda i: f"tools[{i}]", lambda t: t.get("function", False),
                    "parameters")


def _choice(raw: Any) -> str:
    if raw is None:
        return "auto"
    if raw in ("auto", "none", "required"):
        return raw
    if isinstance(raw, dict) and isinstance(raw.get("function"), dict):
        return tool_name(raw["function"].get("name"), "tool_choice.function.name")
    raise BadRequest("'tool_choice' must be auto, none, required or a function", "tool_choice")


# --- replies ----------------------------------------------------------------------------------
def _message(reply: Reply) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": reply.text or
                           (None if reply.calls else "")}
    if reply.calls:
        out["tool_calls"] = [_call_json(c) for c in reply.calls]
    return out


def _call_json(call: Call) -> dict[str, Any]:
    return {"id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments}}


def _usage(reply: Reply) -> dict[str, int]:
    return {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens}


def _logprobs(reply: Reply) -> dict[str, Any] | None:
    if reply.logprobs is None:
        return None
    tokens = list(reply.tokens) + [""] * (len(reply.logprobs) - len(reply.tokens))
    return {"content": [{"token": t, "logprob": float(lp), "bytes": list(t.encode()),
                         "top_logprobs": []} for t, lp in zip(tokens, reply.logprobs,
                                                              strict=True)]}


def body(request: Request, reply: Reply, request_id: str, model: str) -> dict[str, Any]:
    """The ``chat.completion`` object."""
    choice = {"index": 0, "message": _message(reply), "finish_reason": reply.finish,
              "logprobs": _logprobs(reply) if request.logprobs else None}
    return {"id": request_id, "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [choice], "usage": _usage(reply),
            "system_fingerprint": None}


def stream(request: Request, reply: Reply, request_id: str, model: str) -> Iterator[str]:
    """The ``chat.completion.chunk`` events of the reply, as the real API sends them."""
    out = Stream(request, request_id, model)
    yield from out.start()
    yield from out.end(reply)


class Stream:
    """A reply's chunks as it is written: ``start``, ``text`` for each new piece of text as
    it is decoded, ``end`` with the reply (the text not yet sent, its calls, the finish)."""

    def __init__(self, request: Request, request_id: str, model: str) -> None:
        self.request = request
        self.head = {"id": request_id, "object": "chat.completion.chunk",
                     "created": int(time.time()), "model": model, "system_fingerprint": None}

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None,
                  **more}
        return _event({**self.head, "choices": [choice]})

    def start(self, prompt_tokens: int = 0) -> list[str]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def text(self, delta: str) -> list[str]:
        return [self._chunk({"content": delta})] if delta else []

    def end(self, reply: Reply, sent: str = "") -> list[str]:
        out, rest = [], unsent(reply.text, sent)
        if rest:
            out.append(self._chunk({"content": rest}, logprobs=_logprobs(reply)
                                   if self.request.logprobs else None))
        for i, call in enumerate(reply.calls):
            out.append(self._chunk({"tool_calls": [{"index": i, **_call_json(call)}]}))
        out.append(self._chunk({}, reply.finish))
        if self.request.options.get("include_usage"):
            out.append(_event({**self.head, "choices": [], "usage": _usage(reply)}))
        return [*out, "data: [DONE]\n\n"]

    def failed(self, message: str) -> list[str]:
        """A failure after the stream began (its status is sent): an error event."""
        return [_event(error(500, message))]


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": param,
                      "code": "not_found" if status == 404 else None}}
