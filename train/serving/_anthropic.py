"""The Anthropic Messages face: ``POST /v1/messages`` (Claude Code adds ``?beta=true``), as
its clients speak it: ``system`` a string or a list of text blocks (and ``role: system``
entries among the messages, which some clients send), content as blocks (``text``,
``tool_use``, ``tool_result``; images, thinking and documents are passed over), ``tools``
with ``input_schema``, ``tool_choice`` ``auto|any|tool|none``; streamed as ``message_start``,
``content_block_*``, ``message_delta``, ``message_stop``. Fields a local model cannot use
(``thinking``, ``context_management``, ``output_config``, ``metadata``, ``cache_control``)
are accepted and ignored; a system prompt, message or tool of the wrong shape is a 400 naming
the field. ``/v1/messages/count_tokens`` counts a request's prompt."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictStr

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
    text_of,
    tool_name,
    tools_of,
    unsent,
)
from hscale.train.serving._wire import Kind, Name, Schema, Wire, check, kinds, text_or

STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


# --- the request's shape (what the real API requires of what is read here) -------------------
class _Text(Wire):
    type: Literal["text"]
    text: StrictStr


class _Sourced(Wire):
    """An image or a document (passed over)."""

    type: StrictStr
    source: dict[str, Any]


class _ToolUse(Wire):
    type: Literal["tool_use"]
    id: StrictStr
    name: Name
    input: dict[str, Any]


class _ToolResult(Wire):
    type: Literal["tool_result"]
    tool_use_id: StrictStr
    content: text_or(kinds({"text": _Text, "image": _Sourced, "document": _Sourced},
                           Kind)) | None = None
    is_error: StrictBool | None = None


class _Message(Wire):
    role: Literal["user", "assistant", "system"]
    content: text_or(kinds({"text": _Text, "image": _Sourced, "document": _Sourced,
                            "tool_use": _ToolUse, "tool_result": _ToolResult}, Kind))


class _Tool(Wire):
    name: Name
    description: StrictStr | None = None
    input_schema: Schema


class _Body(Wire):
    system: text_or(_Text) | None = None
    messages: Annotated[list[_Message], Field(min_length=1)]
    tools: list[kinds({"custom": _Tool}, Kind,
                      lambda tool: tool.get("type") or "custom")] | None = None


def parse(data: Any, session: str = "", counting: bool = False) -> Request:
    """A messages body as a Request (``counting``: for count_tokens, no max_tokens needed)."""
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    check(_Body, data)  # from here on the system prompt, messages and tools have their shape
    check_sampling(data, "messages")
    turns = []
    if data.get("system") is not None:
        turns.append(Turn("system", text_of(data["system"], "system")))
    for message in data["messages"]:
        turns.extend(_message(message))
    max_tokens = data.get("max_tokens")
    if max_tokens is None and not counting:
        raise BadRequest("max_tokens: Field required", "max_tokens")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("stream: must be a boolean", "stream")
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return Request(
        api="messages", turns=turns, tools=_tools(data.get("tools")),
        tool_choice=_choice(data.get("tool_choice")),
        max_tokens=integer(max_tokens, "max_tokens", 256), temperature=number(
            data.get("temperature"), "temperature", 1.0), stream=stream,
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        session=session or str(metadata.get("user_id") or ""))


def _message(message: dict[str, Any]) -> list[Turn]:
    """A message's turns (a checked one): tool results first, as their own turns."""
    role, content = message["role"], message["content"]
    if isinstance(content, str):
        return [Turn(role, content)]
    texts, calls, results = [], [], []
    for block in content:
        kind = block["type"]
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            calls.append(Call(block["id"], block["name"],
                              json.dumps(block["input"], ensure_ascii=False)))
        elif kind == "tool_result":
            body = block.get("content")
            text = body if isinstance(body, str) else text_of(body, "content")
            if block.get("is_error"):
                text = f"error: {text}"
            results.append(Turn("tool", text, call_id=block["tool_use_id"]))
    text = "\n".join(t for t in texts if t)
    if role == "assistant":
        return [Turn("assistant", text, tuple(calls))]
    return results + ([Turn(role, text)] if text or not results else [])


def _tools(raw: Any) -> list[Tool]:
    """Custom tools; server tools (web search, ...) are not the model's to call here."""
    return tools_of(raw, lambda i: f"tools.{i}",
                    lambda t: t if t.get("type") in (None, "custom") else None, "input_schema")


def _choice(raw: Any) -> str:
    if raw is None:
        return "auto"
    if not isinstance(raw, dict):
        raise BadRequest("tool_choice: must be an object, {type: auto|any|tool|none}",
                         "tool_choice")
    kind = raw.get("type")
    if kind in ("auto", "none"):
        return kind
    if kind == "any":
        return "required"
    if kind == "tool":
        return tool_name(raw.get("name"), "tool_choice.name")
    raise BadRequest("tool_choice.type: must be auto, any, tool or none", "tool_choice.type")


# --- replies ----------------------------------------------------------------------------------
def _blocks(reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text or not reply.calls:
        blocks.append({"type": "text", "text": reply.text})
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments_dict()}
               for c in reply.calls]
    return blocks


def _usage(reply: Reply, output: bool = True) -> dict[str, Any]:
    return {"input_tokens": reply.prompt_tokens, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": reply.completion_tokens if output else 0}


def body(request: Request, reply: Reply, message_id: str, model: str) -> dict[str, Any]:
    return {"id": message_id, "type": "message", "role": "assistant", "model": model,
            "content": _blocks(reply), "stop_reason": STOP.get(reply.finish, "end_turn"),
            "stop_sequence": None, "usage": _usage(reply)}


def stream(request: Request, reply: Reply, message_id: str, model: str) -> Iterator[str]:
    out = Stream(request, message_id, model)
    yield from out.start(reply.prompt_tokens)
    yield from out.end(reply)


def _event(kind: str, **fields: Any) -> str:
    payload = {"type": kind, **fields}
    return f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"


class Stream:
    """A reply's events as it is written: ``start``, ``text`` for each new piece of text as it
    is decoded (in a text block opened at the first), ``end`` with the reply (the text not yet
    sent, its tool_use blocks, the stop reason)."""

    def __init__(self, request: Request, message_id: str, model: str) -> None:
        self.request, self.message_id, self.model = request, message_id, model
        self.open = False  # a text block is open

    def start(self, prompt_tokens: int = 0) -> list[str]:
        empty = Reply("", prompt_tokens=prompt_tokens)
        start = {**body(self.request, empty, self.message_id, self.model), "content": [],
                 "stop_reason": None, "usage": _usage(empty, output=False)}
        return [_event("message_start", message=start), _event("ping")]

    def text(self, delta: str) -> list[str]:
        if not delta:
            return []
        out = [] if self.open else [_event("content_block_start", index=0,
                                           content_block={"type": "text", "text": ""})]
        self.open = True
        return [*out, _event("content_block_delta", index=0,
                             delta={"type": "text_delta", "text": delta})]

    def end(self, reply: Reply, sent: str = "") -> list[str]:
        out, blocks = [], _blocks(reply)
        if self.open and blocks[0]["type"] != "text":
            blocks.insert(0, {"type": "text", "text": sent})  # what was sent stays sent
        for index, block in enumerate(blocks):
            if block["type"] == "text":
                opened = self.open
                rest = unsent(block["text"], sent) if opened else block["text"]
                if not opened:
                    out.append(_event("content_block_start", index=index,
                                      content_block={"type": "text", "text": ""}))
                if rest:
                    out.append(_event("content_block_delta", index=index,
                                      delta={"type": "text_delta", "text": rest}))
            else:
                out.append(_event("content_block_start", index=index,
                                  content_block={**block, "input": {}}))
                out.append(_event("content_block_delta", index=index, delta={
                    "type": "input_json_delta",
                    "partial_json": json.dumps(block["input"], ensure_ascii=False)}))
            out.append(_event("content_block_stop", index=index))
        out.append(_event("message_delta", delta={
            "stop_reason": STOP.get(reply.finish, "end_turn"), "stop_sequence": None},
            usage={"output_tokens": reply.completion_tokens}))
        return [*out, _event("message_stop")]

    def failed(self, message: str) -> list[str]:
        """A failure after the stream began (its status is sent): an error event."""
        return [_event("error", error=error(500, message)["error"])]


def error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    kind = {404: "not_found_error", 413: "request_too_large"}.get(
        status, "invalid_request_error" if status < 500 else "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}

