"""The OpenAI Responses face: ``POST /v1/responses``, as Codex CLI speaks it. The input is a
string or a list of items (messages with a ``developer``, ``system``, ``user`` or
``assistant`` role, ``function_call`` and ``function_call_output`` items; reasoning and other
items are passed over); ``instructions`` is the system message; tools are flat
``{type: function, name, parameters}``. Streamed as the typed events its clients read
(``response.created`` ... ``response.output_item.done`` ... ``response.completed``). The
server keeps no state: ``previous_response_id`` is refused (send the whole input). An item or
tool of the wrong shape is a 400 whose ``param`` names the field (``input[0].content[1].text``)."""

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
    new_id,
    number,
    text_of,
    tool_name,
    tools_of,
    unsent,
)
from hscale.train.serving._wire import Kind, Name, Schema, Wire, check, either, kinds, text_or

ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}
TEXT_PARTS = ("input_text", "output_text", "text", "summary_text")


# --- the input's shape (what the real API requires of what is read here) ----------------------
class _Text(Wire):
    type: Literal[TEXT_PARTS]
    text: StrictStr


class _Refusal(Wire):
    type: Literal["refusal"]
    refusal: StrictStr


_PARTS = text_or(kinds({**dict.fromkeys(TEXT_PARTS, _Text), "refusal": _Refusal}, Kind))


class _Message(Wire):
    type: Literal["message"] = "message"
    role: Literal[tuple(ROLES)]
    content: _PARTS


class _FunctionCall(Wire):
    type: Literal["function_call"]
    call_id: StrictStr
    name: Name
    arguments: either("must be a JSON string or an object", str=StrictStr,
                      dict=dict[str, Any]) = "{}"


class _Output(Wire):
    type: Literal["function_call_output"]
    call_id: StrictStr
    output: _PARTS


class _Tool(Wire):
    type: Literal["function"]
    name: Name
    description: StrictStr | None = None
    parameters: Schema | None = None


def _item_kind(item: dict[str, Any]) -> Any:
    """An item's type; one without is a message where it has a role or content (as the API
    reads it)."""
    return item.get("type", "message" if "role" in item or "content" in item else None)


class _Body(Wire):
    instructions: _PARTS | None = None
    tools: list[kinds({"function": _Tool}, Kind)] | None = None
    input: either("must be a string or a non-empty list of items", str=StrictStr,
                  list=Annotated[list[kinds({
                      "message": _Message, "function_call": _FunctionCall,
                      "function_call_output": _Output}, Kind, _item_kind)],
                      Field(min_length=1)])


def parse(data: Any, session: str = "") -> Request:
    if not isinstance(data, dict):
        raise BadRequest("body must be a JSON object")
    if data.get("previous_response_id"):
        raise BadRequest("previous_response_id is not supported: this server stores no "
                         "responses; send the whole conversation as input",
                         "previous_response_id")
    check(_Body, data, indexed=True)  # from here on instructions, input and tools have their shape
    check_sampling(data, "responses")
    turns = []
    instructions = data.get("instructions")
    if instructions is not None:
        turns.append(Turn("system", text_of(instructions, "instructions", TEXT_PARTS)))
    raw = data["input"]
    if isinstance(raw, str):
        turns.append(Turn("user", raw))
    else:
        for item in raw:
            turns.extend(_item(item))
    if not any(t.role != "system" for t in turns):
        raise BadRequest("'input' holds no message to answer", "input")
    stream = data.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("'stream' must be true or false", "stream")
    return Request(
        api="responses", turns=_merge_calls(turns), tools=_tools(data.get("tools")),
        tool_choice=_choice(data.get("tool_choice")),
        max_tokens=integer(data.get("max_output_tokens"), "max_output_tokens", 256),
        temperature=number(data.get("temperature"), "temperature", 1.0), stream=stream,
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        session=session or str(data.get("prompt_cache_key") or data.get("user") or ""))


def _item(item: dict[str, Any]) -> list[Turn]:
    """A (checked) input item's turns."""
    kind = item.get("type", "message")
    if kind == "message":
        return [Turn(ROLES[item["role"]], text_of(item["content"], "content", TEXT_PARTS))]
    if kind == "function_call":
        arguments = item.get("arguments", "{}")
        return [Turn("assistant", calls=(Call(
            item["call_id"], item["name"],
            arguments if isinstance(arguments, str) else json.dumps(arguments)),))]
    if kind == "function_call_output":
        output = item["output"]
        text = output if isinstance(output, str) else text_of(output, "output", TEXT_PARTS)
        return [Turn("tool", text, call_id=item["call_id"])]
    return []  # reasoning, web search calls, ...: nothing a local model reads


def _merge_calls(turns: list[Turn]) -> list[Turn]:
    """An assistant message and the function calls after it are one assistant turn (the
    Responses API lists them as separate items)."""
    out: list[Turn] = []
    for turn in turns:
        last = out[-1] if out else None
        if (turn.role == "assistant" and turn.calls and last is not None
                and last.role == "assistant"):
            out[-1] = Turn("assistant", last.content, last.calls + turn.calls)
        else:
            out.append(turn)
    return out


def _tools(raw: Any) -> list[Tool]:
    """Function tools; hosted ones (web search, ...) are not the model's to call here."""
    return tools_of(raw, lambda i: f"tools[{i}]",
                    lambda t: t if t.get("type") == "function" else None, "parameters")


def _choice(raw: Any) -> str:
    if raw is None:
        return "auto"
    if raw in ("auto", "none", "required"):
        return raw
    if not isinstance(raw, dict):
        raise BadRequest("'tool_choice' must be auto, none, required or a function",
                         "tool_choice")
    if raw.get("type") != "function":
        raise BadRequest("'tool_choice.type' must be function", "tool_choice.type")
    return tool_name(raw.get("name"), "tool_choice.name")


# --- replies ----------------------------------------------------------------------------------
def _items(reply: Reply) -> list[dict[str, Any]]:
    items = []
    if reply.text or not reply.calls:
        items.append({"type": "message", "id": new_id("msg_"), "status": "completed",
                      "role": "assistant", "content": [
                          {"type": "output_text", "text": reply.text, "annotations": []}]})
    for call in reply.calls:
        items.append({"type": "function_call", "id": new_id("fc_"), "call_id": call.id,
                      "name": call.name, "arguments": call.arguments, "status": "completed"})
    return items


def _response(request: Request, reply: Reply | None, response_id: str, model: str,
              items: list[dict[str, Any]], created: int) -> dict[str, Any]:
    done = reply is not None
    cut = done and reply.finish == "length"
    usage = None if not done else {
        "input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0}}
    return {"id": response_id, "object": "response", "created_at": created,
            "status": ("incomplete" if cut else "completed") if done else "in_progress",
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
            "model": model, "output": items, "parallel_tool_calls": True,
            "tool_choice": request.tool_choice if request.tool_choice in
            ("auto", "none", "required") else {"type": "function", "name": request.tool_choice},
            "tools": [{"type": "function", "name": t.name, "description": t.description,
                       "parameters": t.parameters, "strict": False} for t in request.tools],
            "temperature": request.temperature, "max_output_tokens": request.max_tokens,
            "usage": usage, "store": False}


def body(request: Request, reply: Reply, response_id: str, model: str) -> dict[str, Any]:
    return _response(request, reply, response_id, model, _items(reply), int(time.time()))


def stream(request: Request, reply: Reply, response_id: str, model: str) -> Iterator[str]:
    out = Stream(request, response_id, model)
    yield from out.start()
    yield from out.end(reply)


class Stream:
    """A reply's events as it is written: ``start``, ``text`` for each new piece of text as it
    is decoded (in a message item added at the first), ``end`` with the reply (the text not
    yet sent, its function calls, the final response)."""

    def __init__(self, request: Request, response_id: str, model: str) -> None:
        self.request, self.response_id, self.model = request, response_id, model
        self.created, self.n = int(time.time()), 0
        self.item: dict[str, Any] | None = None  # the message item text went out in

    def _event(self, kind: str, **fields: Any) -> str:
        self.n += 1
        payload = {"type": kind, "sequence_number": self.n - 1, **fields}
        return f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"

    def start(self, prompt_tokens: int = 0) -> list[str]:
        started = _response(self.request, None, self.response_id, self.model, [],
                            self.created)
        return [self._event("response.created", response=started),
                self._event("response.in_progress", response=started)]

    def _open(self, item: dict[str, Any]) -> list[str]:
        empty = {"type": "output_text", "text": "", "annotations": []}
        self.item = item
        return [self._event("response.output_item.added", output_index=0,
                            item={**item, "status": "in_progress", "content": []}),
                self._event("response.content_part.added", item_id=item["id"],
                            output_index=0, content_index=0, part=empty)]

    def _delta(self, index: int, text: str) -> str:
        assert self.item is not None
        return self._event("response.output_text.delta", item_id=self.item["id"],
                           output_index=index, content_index=0, delta=text, logprobs=[])

    def text(self, delta: str) -> list[str]:
        if not delta:
            return []
        out = [] if self.item is not None else self._open(_items(Reply(""))[0])
        return [*out, self._delta(0, delta)]

    def end(self, reply: Reply, sent: str = "") -> list[str]:
        out, items = [], _items(reply)
        if self.item is not None:  # the message item already out keeps its id
            message = {**self.item, "content": [{"type": "output_text", "text": reply.text,
                                                  "annotations": []}]}
            items = [message, *(i for i in items if i["type"] != "message")]
        for index, item in enumerate(items):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                rest = text if self.item is None else unsent(text, sent)
                if self.item is None:
                    out += self._open(item)
                if rest:
                    out.append(self._delta(index, rest))
                out.append(self._event("response.output_text.done", item_id=item["id"],
                                       output_index=index, content_index=0, text=text,
                                       logprobs=[]))
                out.append(self._event("response.content_part.done", item_id=item["id"],
                                       output_index=index, content_index=0,
                                       part=item["content"][0]))
            else:
                out.append(self._event("response.output_item.added", output_index=index,
                                       item={**item, "status": "in_progress", "arguments": ""}))
                out.append(self._event("response.function_call_arguments.delta",
                                       item_id=item["id"], output_index=index,
                                       delta=item["arguments"]))
                out.append(self._event("response.function_call_arguments.done",
                                       item_id=item["id"], output_index=index,
                                       arguments=item["arguments"]))
            out.append(self._event("response.output_item.done", output_index=index, item=item))
        final = _response(self.request, reply, self.response_id, self.model, items,
                          self.created)
        kind = "response.incomplete" if final["status"] == "incomplete" else \
            "response.completed"
        return [*out, self._event(kind, response=final)]

    def failed(self, message: str) -> list[str]:
        """A failure after the stream began (its status is sent): an error event."""
        return [self._event("error", code=None, message=message, param=None)]


def error(status: int, message: str, param: str | None = None) -> dict[str, Any]:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}
