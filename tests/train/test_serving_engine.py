"""``hscale serve``'s local engine on a tiny random Llama (built here, nothing downloaded):
continuous batching and prefix reuse must not change what greedy decoding writes, sampling
keeps its seed, the prefix cache keeps its bound, and a streamed reply goes out in pieces
while it is decoded. (Speed is benchmarks/serving.py's to show, not a test's.)"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hscale.train.lm import HFChat  # noqa: E402
from hscale.train.serving import Request, Turn, parse_calls, serve  # noqa: E402

# internal: tests the chat tool record
from hscale.train.serving._chat import Tool  # noqa: E402

# internal: tests the serving engine's parts
from hscale.train.serving._engine import LocalCompleter  # noqa: E402

# internal: tests the prefix cache
from hscale.train.serving._prefix import PrefixCache, common  # noqa: E402

# internal: tests the request scheduler
from hscale.train.serving._scheduler import Scheduler  # noqa: E402

# internal: tests the tool-prompt templates
from hscale.train.serving._tool_prompt import settled  # noqa: E402

BASH = Tool("bash", "run a command", {"type": "object",
                                      "properties": {"command": {"type": "string"}}})


@pytest.fixture(scope="module")
def chat(tmp_path_factory) -> HFChat:
    from transformers import LlamaConfig, LlamaForCausalLM

    from hscale.train.lm import char_chat_tokenizer

    folder = tmp_path_factory.mktemp("tiny") / "tiny-llama"
    tok = char_chat_tokenizer()
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=1024, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id,
                         initializer_range=0.5)  # peaked logits: no near-ties to flip
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return HFChat(folder, device="cpu")


def _request(text: str, max_tokens: int, temperature: float = 0.0, seed: int | None = None,
             history: tuple[Turn, ...] = ()) -> Request:
    turns = [Turn("system", "you work in a folder; be brief."), *history, Turn("user", text)]
    return Request("chat", turns, max_tokens=max_tokens, temperature=temperature, seed=seed)


def _same(a, b) -> bool:
    return (a.text, a.finish, a.token_ids, a.completion_tokens) == \
        (b.text, b.finish, b.token_ids, b.completion_tokens)


def test_continuous_batching_writes_what_one_at_a_time_writes(chat, monkeypatch):
    """Rows of different lengths join mid-batch and leave as they end (the cache's tensors
    moved every few steps here); each greedy reply is the one generate gives it alone, each
    seeded one draws what it draws alone."""
    # internal: tests the KV-cache slots
    from hscale.train.serving import _kv

    monkeypatch.setattr(_kv, "GROW", 3)
    completer = LocalCompleter(chat)
    requests = [_request(f"list the files {'and more ' * k}", limit)
                for k, limit in enumerate([5, 40, 12, 33, 7, 50, 21, 3])]
    requests += [_request("write a poem", 20, temperature=1.0, seed=s) for s in (5, 6)]
    alone = [completer.complete([r])[0] for r in requests]
    scheduler = Scheduler(completer, max_batch=4)
    try:
        futures = [scheduler.submit(r) for r in requests]  # 4 at a time, joining as rows end
        together = [f.result(timeout=30) for f in futures]
    finally:
        scheduler.close()
    assert all(_same(a, b) for a, b in zip(alone, together, strict=True))
    assert max(scheduler.batches) == 4 and len(set(scheduler.batches)) > 1


def test_prefix_reuse_prefills_only_what_is_new_and_writes_the_same(chat):
    """A session whose every request resends the earlier ones (a black-box CLI): with the
    cache each prefills its new tokens only, and every reply is the one without it."""
    def session(cache_tokens: int) -> tuple[list, Scheduler]:
        scheduler = Scheduler(LocalCompleter(chat), cache_tokens=cache_tokens)
        history: tuple[Turn, ...] = ()
        replies = []
        try:
            for k in range(6):
                reply = scheduler.submit(_request(f"step {k}: run the tests", 12,
                                                  history=history)).result(timeout=30)
                replies.append(reply)
                history += (Turn("user", f"step {k}: run the tests"),
                            Turn("assistant", reply.text), Turn("user", f"result {k}: ok"))
            replies.append(scheduler.submit(_request("step 5: run the tests", 12,
                                                     history=history[:-3])).result(30))
        finally:
            scheduler.close()
        return replies, scheduler

    cold, without = session(0)
    warm, with_cache = session(4096)
    assert all(_same(a, b) for a, b in zip(cold, warm, strict=True))
    assert without.stepper.prefilled == without.stepper.prompted
    assert with_cache.stepper.prefilled < 0.35 * with_cache.stepper.prompted
    assert with_cache.stepper.prefix.hits == 6  # every request after the first


def test_the_prefix_cache_keeps_its_bound_and_drops_the_least_recently_used():
    def layers(n: int):
        return ((torch.zeros(1, 2, n, 4), torch.zeros(1, 2, n, 4)),)

    cache = PrefixCache(max_tokens=10)
    cache.store([1, 2, 3], layers(3))
    cache.store([1, 2, 3, 4, 5], layers(5))  # extends the first: it replaces it
    assert len(cache) == 1 and cache.tokens == 5
    cache.store([7, 8, 9], layers(3))
    n, found = cache.lookup([1, 2, 3, 4, 6])
    assert n == 4 and found[0][0].shape[2] == 4
    assert cache.lookup([1, 2, 3, 4, 5])[0] == 4  # the last token is always run
    cache.store([5, 5, 5, 5], layers(4))  # 12 > 10: [7, 8, 9], least recently used, goes
    assert cache.tokens <= 10 and cache.lookup([7, 8, 9, 1]) == (0, None)
    cache.store(list(range(11)), layers(11))  # past the bound alone: not kept
    assert cache.tokens <= 10 and cache.lookup(list(range(12)))[0] == 0
    assert common([1, 2, 3, 9], [1, 2, 3, 4, 5]) == 3 and common([], [1]) == 0


def test_the_batch_cache_grows_with_its_rows_not_past_them():
    """Rows join longest last (each a re-layout) and leave; the tensors keep room for the
    rows there are (doubling), and every row's keys stay where its mask says."""
    # internal: tests the KV-cache slots
    from hscale.train.serving._kv import Slots

    slots = Slots(1)
    for n in range(1, 6):
        kv = torch.full((1, 2, n * 10, 4), float(n))
        slots.add(((kv, kv),))
    assert slots.keys[0].shape[0] == 8 and slots.lens == [10, 20, 30, 40, 50]
    slots.drop(1)  # the last row moves into its place
    assert slots.lens == [10, 50, 30, 40]
    assert torch.equal(slots.row(1)[0][0], torch.full((1, 2, 50, 4), 5.0))
    positions, mask = slots.inputs()
    assert positions[:, 0].tolist() == [10, 50, 30, 40] and mask.sum(1).tolist() == [11, 51,
                                                                                      31, 41]


def test_a_request_arriving_mid_batch_gets_its_reply_before_the_batch_ends(chat):
    scheduler = Scheduler(LocalCompleter(chat), max_batch=8)
    try:
        long = scheduler.submit(_request("write a long story", 400))
        while not scheduler.batches:
            time.sleep(0.001)
        short = scheduler.submit(_request("hi", 3)).result(timeout=30)
        assert not long.done() and short.completion_tokens <= 3
        assert len(scheduler.stepper.rows[0].ids) > 3  # the long one, still decoding
        long.cancel()  # a client that leaves frees its row
        deadline = time.monotonic() + 10
        while scheduler.stepper.rows and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not scheduler.stepper.rows
    finally:
        scheduler.close()


def _events(url: str, body: dict) -> list[dict]:
    """The data of each server-sent event a POST streams back."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return [json.loads(line[6:]) for line in reply.read().decode().splitlines()
                if line.startswith("data: {")]


def test_streamed_text_goes_out_as_it_is_decoded_in_every_api(chat):
    messages = [{"role": "user", "content": "hello there"}]
    asked = {"max_tokens": 40, "temperature": 0, "stream": True}
    with serve(chat, port=0) as server:
        base = server.url
        chunks = [c["choices"][0]["delta"].get("content") for c in _events(
            f"{base}/chat/completions", {"messages": messages, **asked}) if c["choices"]]
        events = _events(f"{base}/responses", {"input": "hello there", "stream": True,
                                               "max_output_tokens": 40, "temperature": 0})
        blocks = _events(f"{base}/messages", {"messages": messages, **asked})
    whole = LocalCompleter(chat).complete([Request("chat", [Turn("user", "hello there")],
                                                   max_tokens=40, temperature=0)])[0].text
    chunks = [c for c in chunks if c]
    deltas = [e["delta"] for e in events if e["type"] == "response.output_text.delta"]
    texts = [e["delta"]["text"] for e in blocks if e["type"] == "content_block_delta"]
    for pieces in (chunks, deltas, texts):
        assert len(pieces) > 1 and "".join(pieces) == whole
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == whole


def test_streaming_holds_back_what_may_be_a_tool_call():
    tools = [BASH]
    text = 'let me look. <tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
    final, calls = parse_calls(text, tools)
    assert calls and final == "let me look."
    for end in range(len(text) + 1):  # whatever was streamed begins the final text
        assert final.startswith(settled(text[:end], tools))
    assert settled("let me look. <tool", tools) == "let me look."
    assert settled('{"name": "bash"', tools) == "" and settled(" hi", tools) == ""
    assert settled(" hi", []) == " hi"


def test_a_streamed_tool_call_comes_back_as_a_call_in_every_api(chat, tmp_path):
    """A model that writes text then a call (forced here, a token a step) streams the text
    as it comes and no call text; the call comes back as each API's own; every row is
    recorded before its stream ends."""
    from hscale.train.lm import read_record

    call = '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
    ids = chat.tok.encode("ok then " + call, add_special_tokens=False)
    original, step = chat.model.forward, {"n": 0}

    def forced(*args, **kwargs):  # the model "writes" ids, one a step, at a real pace
        time.sleep(0.03)  # (SmolLM2 on 2 cores: some 20 ms a token) so the sender keeps up
        out = original(*args, **kwargs)
        out.logits = torch.full_like(out.logits[:, -1:], -1e4)
        out.logits[..., ids[step["n"]] if step["n"] < len(ids) else chat.eos[0]] = 0
        step["n"] += 1
        return out

    schema = BASH.parameters
    asks = {"chat/completions": {"messages": [{"role": "user", "content": "list"}], "tools": [
                {"type": "function", "function": {"name": "bash", "parameters": schema}}]},
            "messages": {"messages": [{"role": "user", "content": "list"}],
                         "tools": [{"name": "bash", "input_schema": schema}]},
            "responses": {"input": "list", "max_output_tokens": 200,
                          "tools": [{"type": "function", "name": "bash", "parameters": schema}]}}
    seen = {}
    with serve(chat, port=0, record=tmp_path / "record") as server:
        chat.model.forward = forced
        try:
            for path, body in asks.items():
                step["n"] = 0
                seen[path] = _events(f"{server.url}/{path}", {
                    **body, "stream": True, "max_tokens": 200, "temperature": 0})
        finally:
            del chat.model.forward
    chunks = [c["choices"][0]["delta"] for c in seen["chat/completions"] if c["choices"]]
    # as decoded, a character a token (a sender that falls behind sends what was decoded
    # since its last send, hence at least 3 of the 6 pieces 'o', 'k', ' t', 'h', 'e', 'n';
    # a reply sent whole at its end is one), white space held until text follows
    texts = [c["content"] for c in chunks if c.get("content")]
    assert "".join(texts) == "ok then" and len(texts) >= 3, texts
    assert not any(t.endswith(" ") for t in texts), texts
    assert [json.loads(t["function"]["arguments"]) for c in chunks
            for t in c.get("tool_calls") or ()] == [{"command": "ls"}]
    events = seen["messages"]
    assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta"
                   and e["delta"]["type"] == "text_delta") == "ok then"
    assert [e["content_block"]["name"] for e in events if e["type"] == "content_block_start"
            and e["content_block"]["type"] == "tool_use"] == ["bash"]
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    events = seen["responses"]
    added = next(e["item"]["id"] for e in events if e["type"] == "response.output_item.added")
    output = events[-1]["response"]["output"]
    assert [o["type"] for o in output] == ["message", "function_call"]
    assert output[0]["id"] == added and output[0]["content"][0]["text"] == "ok then"
    rows = read_record(tmp_path / "record")
    assert list(rows["finish_reason"]) == ["tool_calls"] * 3
