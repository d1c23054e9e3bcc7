"""What answers a Request: a local ChatModel (through the tool prompt, many requests in one
generate) or an upstream OpenAI-compatible server (proxy mode, tools passed through), behind
a batcher that gathers the requests of concurrent sessions into one call. A model that decodes
step by step (an HF model: ``continuous``) is answered by hscale.train.serving._scheduler
instead, each request joining and leaving the running batch between steps.
"""

from __future__ import annotations

import json
import queue
import random
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from hscale.errors import HscaleError
from hscale.train.lm import ChatModel
from hscale.train.serving._chat import BadRequest, Call, Reply, Request, new_id
from hscale.train.serving._tool_prompt import parse_calls, to_messages, to_template


class Completer(Protocol):
    """Answers requests, many at once; ``name`` is the model's, ``context`` its length."""

    name: str
    context: int | None

    def complete(self, requests: Sequence[Request]) -> list[Reply | Exception]:
        """A reply per request, or the error that request alone gets."""
        ...


class LocalCompleter:
    """A ChatModel: each request's conversation with its tools through the model's chat
    template where it renders tools (an HF model's ``template_tools``), else through the
    tool prompt (a model with its own syntax, the embedded policy, gets it as it is); one
    generate per distinct token limit over the whole batch; each reply's calls parsed back.
    A request's ``max_tokens`` is cut to ``max_new_tokens`` and to half the model's context
    (harnesses ask for 32,000; the real APIs cut to the model's own limit too), ending
    ``length`` when reached."""

    def __init__(self, model: ChatModel, max_new_tokens: int = 1024) -> None:
        self.model, self.max_new_tokens = model, max_new_tokens
        self.name = model.name
        self.own_syntax = bool(getattr(model, "own_syntax", False))
        self.template_tools = bool(getattr(model, "template_tools", False))
        context = getattr(model, "context", None)
        self.context = int(context) if context else None
        self.continuous = bool(getattr(model, "continuous", False))

    def prepare(self, request: Request) -> tuple[list[int], int, int] | BadRequest:
        """(prompt ids, prompt tokens to report, token limit) of a request for a model that
        decodes step by step, as ``complete`` would give it the model; or its 400."""
        limit = self._limit(request)
        budget = self.context - limit if self.context else 1 << 62
        if self.template_tools:
            ids = self.template_prompt(request)
            if isinstance(ids, BadRequest):
                return ids
            count = len(ids)
        else:
            chat = to_messages(request.turns, request.tools, request.tool_choice,
                               self.own_syntax)
            ids, count = self.model.prompt_ids(chat, budget), self.model.prompt_tokens(chat)
        if ids is None or len(ids) > budget:
            return self.unfit(limit)
        return ids, count, limit

    def unfit(self, limit: int) -> BadRequest:
        return BadRequest(f"the prompt does not fit {self.name}'s context of {self.context} "
                          f"tokens with room for {limit} new ones")

    def reply(self, request: Request, prompt_tokens: int, gen: Any) -> Reply:
        """A generated turn as the request's Reply (its calls parsed back)."""
        return self._reply(request, prompt_tokens, gen)

    def complete(self, requests: Sequence[Request]) -> list[Reply | BadRequest]:
        out: list[Reply | BadRequest | None] = [None] * len(requests)
        limits = [self._limit(r) for r in requests]
        for limit in sorted(set(limits)):
            index = [i for i, lim in enumerate(limits) if lim == limit]
            seeds = [requests[i].seed if requests[i].seed is not None
                     else random.getrandbits(62) for i in index]
            greedy = [requests[i].temperature == 0 for i in index]
            if self.template_tools:
                prompts = [self.template_prompt(requests[i]) for i in index]
                for i, prompt in zip(index, prompts, strict=True):
                    if isinstance(prompt, BadRequest):
                        out[i] = prompt
                keep = [k for k, p in enumerate(prompts) if not isinstance(p, BadRequest)]
                index, prompts = [index[k] for k in keep], [prompts[k] for k in keep]
                gens = self.model.generate_ids(prompts, [greedy[k] for k in keep], limit,
                                               [seeds[k] for k in keep]) if keep else []
                counts = [len(p) for p in prompts]
            else:
                chats = [to_messages(requests[i].turns, requests[i].tools,
                                     requests[i].tool_choice, self.own_syntax) for i in index]
                gens = self.model.generate(chats, greedy=greedy, max_new_tokens=limit,
                                           seed=seeds)
                count = getattr(self.model, "prompt_tokens", None)
                counts = [int(count(c)) if callable(count) else 0 for c in chats]
            for i, prompt, gen in zip(index, counts, gens, strict=True):
                unfit = gen.token_ids == () and gen.logprobs == () and not gen.text
                out[i] = self.unfit(limit) if unfit else self._reply(requests[i], prompt, gen)
        return [r for r in out if r is not None]

    def template_prompt(self, request: Request) -> list[int] | BadRequest:
        """The request's prompt through the model's template; a conversation the template
        refuses (its own exception: a turn order it does not take) is that request's 400."""
        try:
            return self.model.template_ids(*to_template(request.turns, request.tools,
                                                        request.tool_choice))
        except Exception as exc:  # noqa: BLE001 -- jinja's and the template's own errors
            return BadRequest(f"{self.name}'s chat template refuses this conversation: "
                              f"{str(exc)[:200]}")

    def _limit(self, request: Request) -> int:
        limit = min(request.max_tokens, self.max_new_tokens)
        return max(1, min(limit, self.context // 2)) if self.context else limit

    def _reply(self, request: Request, prompt_tokens: int, gen: Any) -> Reply:
        token_text = getattr(self.model, "token_text", None)
        ids = tuple(gen.token_ids) if gen.token_ids is not None else None
        ended = gen.logprobs is None or ids is None or len(gen.logprobs) > len(ids)
        text, calls = gen.text, ()
        if not self.own_syntax:
            text, calls = parse_calls(gen.text, request.tools, request.tool_choice)
        finish = "tool_calls" if calls else ("stop" if ended else "length")
        tokens = tuple(token_text(i) for i in ids) if ids and callable(token_text) else ()
        prompt_ids = getattr(gen, "prompt_ids", None)
        return Reply(text, calls, finish, prompt_tokens,
                     len(ids) if ids is not None else len(gen.logprobs or ()), ids,
                     tuple(gen.logprobs) if gen.logprobs is not None else None, tokens,
                     tuple(prompt_ids) if prompt_ids is not None else None)


class ProxyCompleter:
    """An upstream OpenAI-compatible server (vLLM, SGLang, llama.cpp): each request goes
    out as chat completions with its tools, concurrently; the upstream's tool calls come
    back as they are."""

    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None,
                 timeout: float = 600.0, concurrency: int = 32) -> None:
        self.base_url, self.api_key, self.timeout = base_url.rstrip("/"), api_key, timeout
        self.pool = ThreadPoolExecutor(max_workers=concurrency)
        served = self._models()
        self.name = model or (served[0]["id"] if served else "default")
        entry = next((m for m in served if m.get("id") == self.name), {})
        context = entry.get("max_model_len") or entry.get("context_length")
        self.context = int(context) if isinstance(context, int) else None

    def _models(self) -> list[dict[str, Any]]:
        data = self._call("GET", "/models", None, timeout=10)
        return [m for m in data.get("data", []) if isinstance(m, dict)]

    def _call(self, method: str, path: str, body: dict[str, Any] | None,
              timeout: float | None = None) -> dict[str, Any]:
        request = urllib.request.Request(
            self.base_url + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json",
                     **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as reply:
                return json.load(reply)
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode(errors="replace")
            raise HscaleError(f"upstream {self.base_url}{path} answered {exc.code}: {detail}",
                              "check the upstream server's log") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise HscaleError(f"upstream {self.base_url}: no answer ({exc})",
                              "start it first; the URL ends in /v1") from None

    def complete(self, requests: Sequence[Request]) -> list[Reply | HscaleError]:
        """One upstream call a request, side by side; an upstream refusal is that request's
        alone."""
        def one(request: Request) -> Reply | HscaleError:
            try:
                return self._one(request)
            except HscaleError as exc:
                return exc

        return list(self.pool.map(one, requests))

    def _one(self, request: Request) -> Reply:
        body: dict[str, Any] = {"model": self.name, "messages": _openai_messages(request),
                                "max_tokens": request.max_tokens,
                                "temperature": request.temperature, "stream": False}
        if request.seed is not None:
            body["seed"] = request.seed
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters}}
                for t in request.tools]
            choice = request.tool_choice
            body["tool_choice"] = choice if choice in ("auto", "none", "required") else {
                "type": "function", "function": {"name": choice}}
        data = self._call("POST", "/chat/completions", body)
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise HscaleError(f"upstream {self.base_url} sent no choices[0].message",
                              "check it speaks the chat-completions API") from None
        calls = tuple(Call(str(c.get("id") or new_id("call_")), c["function"]["name"],
                           c["function"].get("arguments") or "{}")
                      for c in message.get("tool_calls") or () if c.get("function"))
        usage = data.get("usage") or {}
        finish = "tool_calls" if calls else ("length" if choice.get("finish_reason") ==
                                             "length" else "stop")
        return Reply(message.get("content") or "", calls, finish,
                     int(usage.get("prompt_tokens") or 0),
                     int(usage.get("completion_tokens") or 0))


def _openai_messages(request: Request) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for turn in request.turns:
        message: dict[str, Any] = {"role": turn.role, "content": turn.content}
        if turn.calls:
            message["tool_calls"] = [{"id": c.id, "type": "function", "function": {
                "name": c.name, "arguments": c.arguments}} for c in turn.calls]
        if turn.role == "tool":
            message["tool_call_id"] = turn.call_id
        out.append(message)
    return out


class Batcher:
    """One thread that answers requests: each ``submit`` waits in a queue; the thread takes
    every request waiting (up to ``max_batch``, each arriving within ``gather_s`` of the one
    before) and answers them in one ``complete``, so concurrent sessions share a forward pass
    rather than wait for each other."""

    def __init__(self, completer: Completer, max_batch: int = 32, gather_s: float = 0.02
                 ) -> None:
        self.completer, self.max_batch, self.gather_s = completer, max_batch, gather_s
        self._queue: queue.Queue[tuple[Request, Future] | None] = queue.Queue()
        self.batches: list[int] = []  # sizes of the batches answered (for tests, benchmarks)
        self._thread = threading.Thread(target=self._loop, name="hscale-batcher", daemon=True)
        self._thread.start()

    def submit(self, request: Request) -> Future:
        future: Future = Future()
        self._queue.put((request, future))
        return future

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch, stop = [first], False
            while len(batch) < self.max_batch:  # more may be on their way: wait a moment
                try:
                    item = self._queue.get(timeout=self.gather_s)
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            # a request whose client is gone (its future cancelled) is not generated
            batch = [(r, f) for r, f in batch if f.set_running_or_notify_cancel()]
            if batch:
                self._answer(batch)
            if stop:
                return

    def _answer(self, batch: list[tuple[Request, Future]]) -> None:
        self.batches.append(len(batch))
        try:
            replies = self.completer.complete([r for r, _ in batch])
        except BaseException as exc:  # noqa: BLE001 -- each waiting request hears of it
            for _, future in batch:
                future.set_exception(exc)
        else:
            for (_, future), reply in zip(batch, replies, strict=True):
                if isinstance(reply, BaseException):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
