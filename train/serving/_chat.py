"""One conversation, whichever API it came in by: the types the three faces of ``hscale serve``
(OpenAI chat completions, OpenAI responses, Anthropic messages) read requests into and write
replies from, so a model, the batcher and the record see one shape."""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class BadRequest(ValueError):
    """A request its client must fix: answered 400 in the API's own error shape; ``param``
    names the field where the API has such a slot."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class Tool:
    """A function a request offers: name, description, JSON-schema parameters."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Call:
    """A tool call: its id (what the tool's result answers), the tool and its arguments as
    JSON text (as both OpenAI APIs carry them)."""

    id: str
    name: str
    arguments: str

    def arguments_dict(self) -> dict[str, Any]:
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Turn:
    """A message: ``system``, ``user``, ``assistant`` (text and its tool calls) or ``tool``
    (the result of the call ``call_id``)."""

    role: str
    content: str = ""
    calls: tuple[Call, ...] = ()
    call_id: str = ""


@dataclass
class Request:
    """What a client asked for, in any API: the conversation, the tools it offers and how
    the turn is to be generated. ``session`` groups a harness session's requests in the
    record (a header or a metadata field the client sends)."""

    api: str  # "chat" | "responses" | "messages"
    turns: list[Turn]
    tools: list[Tool] = field(default_factory=list)
    tool_choice: str = "auto"  # auto | none | required | the name of one tool
    max_tokens: int = 256
    temperature: float = 1.0
    seed: int | None = None
    stream: bool = False
    model: str | None = None
    logprobs: bool = False
    session: str = ""
    options: dict[str, Any] = field(default_factory=dict)  # what an API's reply echoes

    def record(self) -> dict[str, Any]:
        """The request's fields for a record row."""
        return {"messages": json.dumps([_turn_json(t) for t in self.turns]),
                "tools": json.dumps([t.name for t in self.tools]),
                "tool_specs": json.dumps([{"name": t.name, "description": t.description,
                                           "parameters": t.parameters} for t in self.tools]),
                "params": json.dumps({"api": self.api, "model": self.model,
                                      "max_tokens": self.max_tokens,
                                      "temperature": self.temperature, "seed": self.seed,
                                      "stream": self.stream, "tool_choice": self.tool_choice,
                                      "logprobs": self.logprobs}),
                "session": self.session}


def turns_of(text: str) -> list[Turn]:
    """A recorded ``messages`` field back as turns."""
    return [Turn(t["role"], t.get("content") or "",
                 tuple(Call(c["id"], c["name"], c.get("arguments") or "{}")
                       for c in t.get("tool_calls") or ()), t.get("tool_call_id") or "")
            for t in json.loads(text or "[]")]


def tools_of_record(text: str) -> list[Tool]:
    """A recorded ``tool_specs`` field back as tools."""
    return [Tool(t["name"], t.get("description") or "", t.get("parameters") or {})
            for t in json.loads(text or "[]")]


def _turn_json(turn: Turn) -> dict[str, Any]:
    out: dict[str, Any] = {"role": turn.role, "content": turn.content}
    if turn.calls:
        out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments}
                             for c in turn.calls]
    if turn.call_id:
        out["tool_call_id"] = turn.call_id
    return out


@dataclass
class Reply:
    """The generated turn: text, the tool calls parsed from it, why it ended (``stop``,
    ``length`` or ``tool_calls``), token counts, and the token ids, texts and log-probs
    where the model gives them."""

    text: str
    calls: tuple[Call, ...] = ()
    finish: str = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    tokens: tuple[str, ...] = ()
    prompt_ids: tuple[int, ...] | None = None  # what the model was given, where it says
    by: str = "model"  # or "server": a text the server wrote (the turn limit)

    def record(self) -> dict[str, Any]:
        """The reply's record fields; ids and log-probs as JSON lists, "" where unknown."""
        return {"reply": self.text, "finish_reason": self.finish,
                "tool_calls": json.dumps([{"id": c.id, "name": c.name,
                                           "arguments": c.arguments} for c in self.calls]),
                "token_ids": json.dumps(list(self.token_ids or ())),
                "prompt_ids": "" if self.prompt_ids is None else json.dumps(
                    list(self.prompt_ids)),
                "logprobs": "" if self.logprobs is None else json.dumps(list(self.logprobs)),
                "by": self.by, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


def unsent(text: str, sent: str) -> str:
    """What of a reply's ``text`` a stream that sent ``sent`` of it has yet to send (past
    what they share, should they part: a stream sends only text sure to stay)."""
    if text.startswith(sent):
        return text[len(sent):]
    return text[len(os.path.commonprefix([text, sent])):]


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


# --- field checks shared by the three faces ---------------------------------------------------
MAX_TOKENS_LIMIT = 1 << 16


def number(value: Any, name: str, default: float, low: float = 0.0) -> float:
    if value is None:
        return default
    if not (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value)) or value < low:
        raise BadRequest(f"'{name}' must be a number >= {low:g}", name)
    return float(value)


# the sampling fields each API documents and a local model does not use: accepted when the
# real API would accept them, refused (400, naming the field) where it would not
_RANGES = {"top_p": (0.0, 1.0), "presence_penalty": (-2.0, 2.0),
           "frequency_penalty": (-2.0, 2.0)}
TEMPERATURE_HIGH = {"chat": 2.0, "responses": 2.0, "messages": 1.0}


def check_sampling(data: dict[str, Any], api: str) -> None:
    """The fields of ``data`` a face accepts and ignores, checked as the real API checks
    them: ``top_p`` in [0, 1], the penalties in [-2, 2], ``top_k`` a whole number >= 0,
    ``temperature`` at most 2 (1 for messages), ``stop`` a string or up to 4 strings
    (``stop_sequences`` a list of strings)."""
    for name, (low, high) in _RANGES.items():
        value = data.get(name)
        if value is not None and not (_real(value) and low <= value <= high):
            raise BadRequest(f"'{name}' must be a number in [{low:g}, {high:g}]", name)
    temperature = data.get("temperature")
    if _real(temperature) and temperature > TEMPERATURE_HIGH[api]:
        raise BadRequest(f"'temperature' must be at most {TEMPERATURE_HIGH[api]:g}",
                         "temperature")
    top_k = data.get("top_k")
    if top_k is not None and (not isinstance(top_k, int) or isinstance(top_k, bool)
                              or top_k < 0):
        raise BadRequest("'top_k' must be an integer >= 0", "top_k")
    stop = data.get("stop")
    if stop is not None and not (isinstance(stop, str) or isinstance(stop, list)
                                 and len(stop) <= 4 and all(isinstance(x, str) for x in stop)):
        raise BadRequest("'stop' must be a string or a list of up to 4 strings", "stop")
    sequences = data.get("stop_sequences")
    if sequences is not None and not (isinstance(sequences, list)
                                      and all(isinstance(x, str) for x in sequences)):
        raise BadRequest("'stop_sequences' must be a list of strings", "stop_sequences")


def _real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def integer(value: Any, name: str, default: int | None, low: int = 1,
            high: int = MAX_TOKENS_LIMIT) -> int | None:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise BadRequest(f"'{name}' must be an integer in {low}..{high}", name)
    return value


def seed_of(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest("'seed' must be an integer", "seed")
    return value


def text_of(content: Any, where: str, kinds: tuple[str, ...] = ("text",)) -> str:
    """A message's text: a string, or the text of its parts of ``kinds`` (other parts, such
    as images, are left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif not isinstance(part, dict):
                raise BadRequest(f"{where}: content parts must be objects", where)
            elif part.get("type", "text") in kinds:
                text = part.get("text", "")
                if not isinstance(text, str):
                    raise BadRequest(f"{where}: a text part's text must be a string", where)
                out.append(text)
        return "".join(out)
    raise BadRequest(f"{where}: content must be a string or a list of parts", where)


def tools_of(raw: Any, at: Callable[[int], str], body: Callable[[dict], dict | None],
             schema: str) -> list[Tool]:
    """A request's ``tools`` list: ``body(entry)`` is the object that holds a tool's name,
    description and its ``schema`` field (None: a tool that is not the model's to call, such
    as a hosted web search, passed over); ``at(i)`` names entry i in errors."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest("'tools' must be a list", "tools")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise BadRequest(f"{at(i)} must be an object", at(i))
        found = body(entry)
        if found is None:
            continue
        if not isinstance(found, dict):
            raise BadRequest(f"{at(i)} needs type function and a function object", at(i))
        out.append(Tool(tool_name(found.get("name"), f"{at(i)}.name"),
                        str(found.get("description") or ""),
                        schema_of(found.get(schema), f"{at(i)}.{schema}")))
    return out


def schema_of(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be a JSON schema object", where)
    return value


def tool_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 128:
        raise BadRequest(f"{where} must be a non-empty string", where)
    return value
