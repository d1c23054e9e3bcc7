"""How a request's tools reach a local model and how its calls come back: through the
model's chat template where it renders ``tools`` (HF ``apply_chat_template(tools=...)``:
:func:`to_template`), else through hscale's tool prompt (:func:`to_messages`).

The tools are described in the system message, one JSON object a line, and the model calls
one by writing ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the convention
of the Hermes and Qwen templates, so a model tuned on either already knows it). Earlier calls
in the conversation are shown the same way, and each tool result as a ``tool`` turn wrapped
in ``<tool_response>``; the parser reads every well-formed block naming an offered tool and
leaves the rest as text; a reply that is nothing but one JSON object naming an offered
tool (the Llama 3.x templates' convention) is a call too. A template's model writes its calls
in its own convention, which for the Hermes and Qwen templates is this one. A model with its
own syntax (the embedded policy, trained under hscale's harnesses) gets the conversation as
it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from hscale.harness import Message
from hscale.train.lm import chat_dicts
from hscale.train.serving._chat import Call, Tool, Turn, new_id

TOOL_PROMPT = """# tools
you can call tools. to call one, write exactly
<tool_call>{{"name": "<tool name>", "arguments": {{<its arguments as JSON>}}}}</tool_call>
and stop; its result comes back in the next message. {choice}
the tools, one a line:
{tools}"""
CHOICES = {"auto": "call a tool when you need one, or answer in plain text.",
           "required": "you must call a tool now.",
           "none": ""}
_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def describe(tools: Sequence[Tool], tool_choice: str) -> str:
    """The system-prompt section for ``tools`` ("" when none are offered or allowed)."""
    if not tools or tool_choice == "none":
        return ""
    offered = [t for t in tools if tool_choice in CHOICES or t.name == tool_choice]
    choice = CHOICES.get(tool_choice, f"you must call {tool_choice} now.")
    lines = [json.dumps({"name": t.name, "description": t.description,
                         "parameters": t.parameters}, ensure_ascii=False) for t in offered]
    return TOOL_PROMPT.format(choice=choice, tools="\n".join(lines))


def to_messages(turns: Sequence[Turn], tools: Sequence[Tool], tool_choice: str,
                own_syntax: bool = False) -> list[Message]:
    """The conversation as chat messages for a ChatModel: system turns joined into one
    system message (with the tool section), assistant calls and tool results in the tool
    prompt's syntax; with ``own_syntax``, every turn's text as it is."""
    system = [t.content for t in turns if t.role == "system" and t.content]
    section = "" if own_syntax else describe(tools, tool_choice)
    head = "\n\n".join([*system, section] if section else system)
    out = [Message("system", head)] if head else []
    for turn in turns:
        if turn.role == "system":
            continue
        if turn.role == "assistant":
            calls = [] if own_syntax else [_call_text(c) for c in turn.calls]
            out.append(Message("assistant", "\n".join(x for x in (turn.content, *calls) if x)))
        elif turn.role == "tool":
            text = turn.content if own_syntax else f"<tool_response>\n{turn.content}\n" \
                                                   "</tool_response>"
            out.append(Message("tool", text))
        else:
            out.append(Message("user", turn.content))
    return out


def to_template(turns: Sequence[Turn], tools: Sequence[Tool], tool_choice: str
                ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the chat as chat-template dicts, the tools as OpenAI function specs) for a model
    whose template renders tools: assistant calls as ``tool_calls`` (arguments as objects),
    results as ``tool`` turns with their call's id and name. A ``required`` or named
    ``tool_choice``, which templates have no field for, is said in the system message;
    ``none`` offers no tools."""
    names = {c.id: c.name for t in turns for c in t.calls}
    system = [t.content for t in turns if t.role == "system" and t.content]
    if tools and tool_choice not in ("auto", "none"):
        system.append(CHOICES.get(tool_choice, f"you must call {tool_choice} now."))
    chat: list[dict[str, Any]] = [{"role": "system", "content": "\n\n".join(system)}] \
        if system else []
    for turn in turns:
        if turn.role == "system":
            continue
        entry: dict[str, Any] = {"role": turn.role, "content": turn.content}
        if turn.role == "assistant" and turn.calls:
            entry["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": c.arguments_dict()}} for c in turn.calls]
        elif turn.role == "tool":
            entry.update(tool_call_id=turn.call_id, name=names.get(turn.call_id, ""))
        chat.append(entry)
    offered = [] if tool_choice == "none" else [
        {"type": "function", "function": {"name": t.name, "description": t.description,
                                          "parameters": t.parameters}}
        for t in tools if tool_choice in CHOICES or t.name == tool_choice]
    return chat, offered


def template_chat(turns: Sequence[Turn], tools: Sequence[Tool], tool_choice: str,
                  template_tools: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(chat-template dicts, tool specs to pass it) for a tokenizer's own template: the
    template's tool fields where it renders tools (:func:`to_template`), else the tool
    prompt's messages (:func:`to_messages`) and no specs."""
    if template_tools:
        return to_template(turns, tools, tool_choice)
    return chat_dicts(to_messages(turns, tools, tool_choice)), []


def _call_text(call: Call) -> str:
    return "<tool_call>" + json.dumps({"name": call.name, "arguments": call.arguments_dict()},
                                      ensure_ascii=False) + "</tool_call>"


def parse_calls(text: str, tools: Sequence[Tool], tool_choice: str = "auto"
                ) -> tuple[str, tuple[Call, ...]]:
    """(the text outside the calls, the calls) of a generated turn: each ``<tool_call>``
    block whose JSON names an offered tool becomes a Call (a fresh id, its arguments as
    JSON text); a malformed block, or one naming no offered tool, stays text."""
    if not tools or tool_choice == "none":
        return text, ()
    names = {t.name for t in tools}
    if "<tool_call>" not in text:  # a bare JSON call as the whole reply, or plain text
        bare = _call_of(text.strip(), names) if text.strip().startswith("{") else None
        return ("", (bare,)) if bare is not None else (text, ())
    calls, kept, last = [], [], 0
    for match in _BLOCK.finditer(text):
        call = _call_of(match.group(1), names)
        if call is None:
            continue
        kept.append(text[last:match.start()])
        last = match.end()
        calls.append(call)
    kept.append(text[last:])
    return "".join(kept).strip(), tuple(calls)


def settled(text: str, tools: Sequence[Tool], tool_choice: str = "auto") -> str:
    """How much of a reply still being written is sure to begin the text ``parse_calls``
    leaves of it, so it can be streamed now: all of it where no tools are offered; else what
    comes before a ``<tool_call>`` (or the start of one) less its trailing white space (a call
    after it strips that), and nothing yet while it could be a bare JSON call or begins with
    white space (which a call later in it would strip)."""
    if not tools or tool_choice == "none":
        return text
    if not text or text[0].isspace() or text[0] == "{":
        return ""
    marker = "<tool_call>"
    cut = text.find(marker)
    if cut < 0:
        cut = next((len(text) - k for k in range(len(marker) - 1, 0, -1)
                    if text.endswith(marker[:k])), len(text))
    return text[:cut].rstrip()


def _call_of(body: str, names: set[str]) -> Call | None:
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):  # some models write the arguments as a JSON string
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return None
    if not isinstance(arguments, dict):
        return None
    return Call(new_id("call_"), value["name"], json.dumps(arguments, ensure_ascii=False))
