"""The OpenAI Chat Completions face: ``POST /v1/chat/completions``, plain or streamed
(``data:`` chunks ending in ``data: [DONE]``), with ``tools``/``tool_choice``, ``tool_calls``
out and ``tool`` results in. Fields the real API has and hscale does not use (``top_p``,
``user``, ``metadata``, ...) are accepted and ignored, as the real API ignores what a model
does not support."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from hscale.train.serving._chat import (
    BadRequest,
    Call,
    Reply,
    Request,
    Tool,
    Turn,
    integer,
    number,
    seed_of,
    text_of,
    tool_name,
    tools_of,
)

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
         "tool": "tool", "function": "tool"}


def parse(data: Any, session: str = "") -> Request:
    """A chat-completions body as a Request; BadRequest names the field."""
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    raw = data.get("messages")
    if not isinstance(raw, list) or not raw:
        raise BadRequest("'messages' must be a non-empty list", "messages")
    turns = [_turn(i, m) for i, m in enumerate(raw)]
    if data.get("n", 1) != 1:
        raise BadRequest("only n = 1 is supported", "n")
    limit = data.get("max_completion_tokens", data.get("max_tokens"))
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
        max_tokens=integer(limit, "max_tokens", 256), temperature=number(
            data.get("temperature"), "temperature", 1.0), seed=seed_of(data.get("seed")),
        stream=stream, model=data.get("model") if isinstance(data.get("model"), str) else None,
        logprobs=logprobs, session=session or str(data.get("user") or ""),
        options={"include_usage": bool(isinstance(options, dict)
                                       and options.get("include_usage"))})


def _turn(index: int, m: Any) -> Turn:
    where = f"messages[{index}]"
    if not isinstance(m, dict) or m.get("role") not in ROLES:
        raise BadRequest(f"{where} needs a role, one of {', '.join(ROLES)}", where)
    role = ROLES[m["role"]]
    content = text_of(m.get("content"), f"{where}.content")
    calls = ()
    if role == "assistant" and m.get("tool_calls"):
        raw = m["tool_calls"]
        if not isinstance(raw, list):
            raise BadRequest(f"{where}.tool_calls must be a list", f"{where}.tool_calls")
        calls = tuple(_call(f"{where}.tool_calls[{k}]", c) for k, c in enumerate(raw))
    call_id = (m.get("tool_call_id") or m.get("name") or "") if role == "tool" else ""
    return Turn(role, content, calls, str(call_id))


def _call(where: str, raw: Any) -> Call:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict):
        raise BadRequest(f"{where} needs a function with a name and arguments", where)
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return Call(str(raw.get("id") or ""), tool_name(function.get("name"), f"{where}.name"),
                arguments)


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
    head = {"id": request_id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "system_fingerprint": None}

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None,
                  **more}
        return _event({**head, "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    if reply.text:
        yield chunk({"content": reply.text},
                    logprobs=_logprobs(reply) if request.logprobs else None)
    for i, call in enumerate(reply.calls):
        yield chunk({"tool_calls": [{"index": i, **_call_json(call)}]})
    yield chunk({}, reply.finish)
    if request.options.get("include_usage"):
        yield _event({**head, "choices": [], "usage": _usage(reply)})
    yield "data: [DONE]\n\n"


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 404: "invalid_request_error",
            413: "invalid_request_error"}.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": param,
                      "code": "not_found" if status == 404 else None}}
