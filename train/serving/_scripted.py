"""A scripted chat model for checking the serving path without a capable LLM: it reads the
tools a request offers (from the tool prompt's section of the system message), picks the
shell tool, runs a known solution's commands through it one per turn, then answers with the
last command's output. With ``wrong=True`` it answers without acting, as a model that
fails would."""

from __future__ import annotations

import json
import re
import shlex
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from hscale.harness import Generation, Message
from hscale.harness.tasks import Task
from hscale.train.lm import MAX_NEW_TOKENS

SHELL_NAMES = ("bash", "shell", "exec", "exec_command", "shell_command", "run", "run_command",
               "terminal")
COMMAND_KEYS = ("command", "cmd", "script", "input")
_RESPONSE = re.compile(r"<tool_response>\n?(.*?)\n?</tool_response>", re.DOTALL)


class ScriptedChat:
    """``solutions``: a task's query (any part of it that the user message holds) -> the
    shell commands that solve it; a query it does not know gets ``default``."""

    name = "scripted"
    context = 1 << 17

    def __init__(self, solutions: Mapping[str, Sequence[str]] | None = None,
                 default: Sequence[str] = ("echo hscale",), wrong: bool = False) -> None:
        self.solutions = {k: list(v) for k, v in (solutions or {}).items()}
        self.default, self.wrong = list(default), wrong

    def generate(self, conversations: Sequence[Sequence[Message]],
                 greedy: bool | Sequence[bool] = True, max_new_tokens: int = MAX_NEW_TOKENS,
                 seed: int | Sequence[int] | None = None) -> list[Generation]:
        out = []
        for messages in conversations:
            text = self._turn(list(messages))
            ids = _word_ids(text)
            prompt = [i for m in messages for i in _word_ids(f"{m.role} {m.content}")]
            out.append(Generation(text, ids, (-0.5,) * (len(ids) + 1), tuple(prompt)))
        return out

    def _turn(self, messages: list[Message]) -> str:
        system = next((m.content for m in messages if m.role == "system"), "")
        tools = _offered(system)
        # one task a session: the first user message that holds a known query (harnesses
        # add context messages before it, Codex CLI, or after tool results, OpenClaw), and
        # every tool result since
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        found = next(((i, v) for i in users for k, v in self.solutions.items()
                      if k in messages[i].content), None)
        start, commands = found or (users[0] if users else 0, self.default)
        results = [m.content for m in messages[start:] if m.role == "tool"]
        shell = _shell(tools)
        if self.wrong or shell is None or len(results) >= len(commands):
            if self.wrong or not results:
                return "i cannot do this task."
            last = _RESPONSE.search(results[-1])
            output = last.group(1) if last else results[-1]
            # a harness may wrap the command's output (Codex CLI: "...\nOutput:\n<text>")
            return output.rsplit("\nOutput:\n", 1)[-1].strip() or "done."
        name, key, as_list = shell
        command = commands[len(results)]
        value = ["bash", "-lc", command] if as_list else command
        return "<tool_call>" + json.dumps({"name": name, "arguments": {key: value}}) + \
            "</tool_call>"

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m.content.split()) + 1 for m in messages)

    def token_text(self, token_id: int) -> str:
        return f"<{token_id}>"

    def render(self, messages: Sequence[Message]) -> str:
        return "\n".join(f"[{m.role}] {m.content}" for m in messages)


def _word_ids(text: str) -> tuple[int, ...]:
    """A word a token (its CRC-32, folded): stable ids for the record to keep."""
    return tuple(zlib.crc32(w.encode()) % 50_000 for w in text.split())


def _offered(system: str) -> list[dict]:
    tools = []
    for line in system.split("the tools, one a line:", 1)[-1].splitlines() \
            if "the tools, one a line:" in system else ():
        try:
            tool = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(tool, dict) and "name" in tool:
            tools.append(tool)
    return tools


def _shell(tools: list[dict]) -> tuple[str, str, bool] | None:
    """(the shell tool's name, its command argument, whether it takes argv) or None."""
    ranked = sorted(tools, key=lambda t: str(t["name"]).lower() not in SHELL_NAMES)
    for tool in ranked:
        props = (tool.get("parameters") or {}).get("properties") or {}
        key = next((k for k in COMMAND_KEYS if k in props), None)
        if key is not None:
            return tool["name"], key, (props[key] or {}).get("type") == "array"
    return None


def solution_commands(task: Task) -> list[str]:
    """A task's known solution (its oracle's canonical calls) as shell commands, ending with
    one that prints its final answer when it has one: what the scripted model replays."""
    out = []
    for call in task.solution:
        args = call.args
        if call.name == "list":
            out.append("ls -R")
        elif call.name == "read":
            out.append(f"cat {shlex.quote(args['path'])}")
        elif call.name == "write":
            folder = shlex.quote(str(Path(args["path"]).parent))
            out.append(f"mkdir -p {folder} && printf '%s' {shlex.quote(args['text'])} > "
                       f"{shlex.quote(args['path'])}")
        elif call.name == "search":
            out.append(f"grep -rl {shlex.quote(args['word'])} .")
        elif call.name == "calc":
            out.append(f"echo $(({args['expr']}))")
        elif call.name == "run":
            out.append(args["command"])
    if task.final_answer:
        out.append(f"printf '%s\\n' {shlex.quote(task.final_answer)}")
    return out or ["ls"]
