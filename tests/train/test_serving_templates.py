"""Tools through a model's own chat template: a template that renders ``tools`` gets the
request's tools, earlier calls and tool results in its own fields (HF
``apply_chat_template(tools=...)``), and what the model writes comes back as each API's tool
calls; a template without tools keeps hscale's tool prompt."""

from __future__ import annotations

import json

import pytest

from hscale.harness import Generation
from hscale.train.serving import Call, Turn, parse_calls, serve

# internal: tests the chat tool record
from hscale.train.serving._chat import Tool

# internal: tests the tool-prompt templates
from hscale.train.serving._tool_prompt import to_template

openai = pytest.importorskip("openai")

BASH = {"type": "object", "properties": {"command": {"type": "string"}},
        "required": ["command"]}
TOOLS = [{"type": "function", "function": {"name": "bash", "description": "run a command",
                                           "parameters": BASH}}]
# a Qwen-style template, short: tools in the system turn, calls and results as tags
TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{{ messages[0]['content'] if messages[0]['role'] == "
    "'system' else '' }}\n<tools>\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
    "</tools><|im_end|>\n{% endif %}"
    "{% for m in messages %}{% if m['role'] == 'system' %}{% if not tools %}<|im_start|>"
    "system\n{{ m['content'] }}<|im_end|>\n{% endif %}"
    "{% elif m['role'] == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m['content'] }}\n"
    "</tool_response><|im_end|>\n"
    "{% else %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "{% for c in m.get('tool_calls', []) %}<tool_call>\n{\"name\": \"{{ c['function']['name'] }}"
    "\", \"arguments\": {{ c['function']['arguments'] | tojson }}}\n</tool_call>{% endfor %}"
    "<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


class TemplateModel:
    """A model whose template renders tools: it keeps what it was given and calls ``bash``
    until it has seen one result."""

    name, context, template_tools = "templated", 4096, True

    def __init__(self) -> None:
        self.seen: list[tuple[list, list]] = []

    def template_ids(self, chat, tools):
        self.seen.append((chat, tools))
        return list(range(len(json.dumps([chat, tools])) // 8))

    def generate_ids(self, prompts, greedy=True, max_new_tokens=64, seed=None):
        chat, _ = self.seen[-1]
        if any(m["role"] == "tool" for m in chat):
            return [Generation("it says hello", (1, 2), (0.0, 0.0, 0.0))] * len(prompts)
        text = '<tool_call>\n{"name": "bash", "arguments": {"command": "cat a.txt"}}\n</tool_call>'
        return [Generation(text, (1, 2, 3), (0.0,) * 4)] * len(prompts)


def test_to_template_gives_calls_and_results_the_templates_own_fields():
    call = Call("call_1", "bash", '{"command": "ls"}')
    chat, tools = to_template(
        [Turn("system", "be brief"), Turn("user", "list"), Turn("assistant", "", (call,)),
         Turn("tool", "a.txt", call_id="call_1")],
        [Tool("bash", "run a command", BASH)], "required")
    assert chat[0]["role"] == "system" and chat[0]["content"].startswith("be brief")
    assert "must call a tool" in chat[0]["content"]  # a choice templates have no field for
    assert chat[2]["tool_calls"] == [{"id": "call_1", "type": "function", "function": {
        "name": "bash", "arguments": {"command": "ls"}}}]
    assert chat[3] == {"role": "tool", "content": "a.txt", "tool_call_id": "call_1",
                       "name": "bash"}
    assert tools == TOOLS
    assert to_template([Turn("user", "hi")], [Tool("bash")], "none")[1] == []


def test_a_bare_json_reply_naming_an_offered_tool_is_a_call():
    text, calls = parse_calls('{"name": "bash", "parameters": {"command": "ls"}}',
                              [Tool("bash")])
    assert text == "" and [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("bash", {"command": "ls"})]
    assert parse_calls('{"name": "other"}', [Tool("bash")])[1] == ()
    assert parse_calls("{not json", [Tool("bash")]) == ("{not json", ())


def test_a_template_model_gets_tools_through_its_template_and_its_calls_come_back():
    model = TemplateModel()
    with serve(model, port=0) as server:
        client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0)
        first = client.chat.completions.create(model="m", tools=TOOLS, max_tokens=64,
                                               messages=[{"role": "user", "content": "read"}])
        [call] = first.choices[0].message.tool_calls
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "bash", {"command": "cat a.txt"})
        second = client.chat.completions.create(model="m", tools=TOOLS, max_tokens=64,
                                                messages=[
            {"role": "user", "content": "read"},
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "hello"}])
    assert second.choices[0].message.content == "it says hello"
    chat, tools = model.seen[-1]
    assert tools == TOOLS  # not hscale's tool prompt: no "# tools" section anywhere
    assert not any("# tools" in (m["content"] or "") for m in chat)
    assert chat[1]["tool_calls"][0]["function"] == {"name": "bash",
                                                    "arguments": {"command": "cat a.txt"}}
    assert chat[2]["role"] == "tool" and chat[2]["name"] == "bash"
    assert second.usage.prompt_tokens == len(model.template_ids(chat, tools))


def test_an_hf_model_with_a_tools_template_renders_them_itself(tmp_path):
    pytest.importorskip("transformers")
    from hscale.train.lm import HFChat
    from tests.train.test_hf_chat import _make_model

    folder = _make_model(tmp_path / "tiny-qwen")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    plain = HFChat(folder, device="cpu")
    assert not plain.template_tools  # the folder's template: hscale's tool prompt
    config["chat_template"] = TEMPLATE
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    chat = HFChat(folder, device="cpu")
    assert chat.template_tools
    call = Call("call_1", "bash", '{"command": "ls"}')
    dicts, tools = to_template([Turn("system", "you work here"), Turn("user", "list"),
                                Turn("assistant", "", (call,)),
                                Turn("tool", "a.txt", call_id="call_1")],
                               [Tool("bash", "run a command", BASH)], "auto")
    text = chat.tok.decode(chat.template_ids(dicts, tools))
    assert '<tools>\n{"type": "function"' in text and '"name": "bash"' in text
    assert '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}' in text
    assert "<tool_response>\na.txt\n</tool_response>" in text
    with serve(chat, port=0, max_new_tokens=8) as server:
        client = openai.OpenAI(base_url=server.url, api_key="none", max_retries=0)
        reply = client.chat.completions.create(
            model="m", tools=TOOLS, max_tokens=8, temperature=0,
            messages=[{"role": "system", "content": "you work here"},
                      {"role": "user", "content": "list"}])
    rendered = chat.template_ids([{"role": "system", "content": "you work here"},
                                  {"role": "user", "content": "list"}], TOOLS)
    assert reply.usage.prompt_tokens == len(rendered)


def test_a_conversation_the_template_refuses_is_a_400_of_its_own():
    from hscale.train.serving import BadRequest, Request

    # internal: tests the serving engine's parts
    from hscale.train.serving._engine import LocalCompleter

    class Picky(TemplateModel):
        def template_ids(self, chat, tools):
            if any(m["content"] == "refuse" for m in chat):
                raise ValueError("Conversation roles must alternate")
            return super().template_ids(chat, tools)

    replies = LocalCompleter(Picky()).complete([
        Request("chat", [Turn("user", "refuse")], [Tool("bash", "", BASH)]),
        Request("chat", [Turn("user", "read")], [Tool("bash", "", BASH)])])
    assert isinstance(replies[0], BadRequest) and "roles must alternate" in str(replies[0])
    assert replies[1].calls[0].name == "bash"
