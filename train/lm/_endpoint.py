"""A chat model behind an OpenAI-compatible endpoint (vLLM, SGLang, llama.cpp, Ollama,
``hscale serve``): conversations go out concurrently, one request each, through hscale's own
client (hscale.harness._http_policy.OpenAIChatPolicy)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from hscale.harness import Generation, Message, OpenAIChatPolicy
from hscale.train.lm._base import MAX_NEW_TOKENS, chat_dicts, flags, row_seeds


class EndpointChat:
    """``base_url`` ends in /v1; ``model`` is the name the server knows the model by."""

    def __init__(self, base_url: str, model: str = "default", api_key: str | None = None,
                 concurrency: int = 8, timeout: float = 120.0) -> None:
        self.base_url, self.model, self.api_key = base_url, model, api_key
        self.concurrency, self.timeout = concurrency, timeout
        self.name = model

    def generate(self, conversations: Sequence[Sequence[Message]],
                 greedy: bool | Sequence[bool] = True, max_new_tokens: int = MAX_NEW_TOKENS,
                 seed: int | Sequence[int] | None = None) -> list[Generation]:
        greedy = flags(greedy, len(conversations))
        seeds = row_seeds(seed, len(conversations))

        def one(i: int) -> Generation:  # servers take a 32-bit seed
            extra = {} if seeds is None else {"seed": seeds[i] % 2**31}
            policy = OpenAIChatPolicy(self.base_url, self.model, self.api_key,
                                      temperature=0.0 if greedy[i] else 1.0,
                                      max_tokens=max_new_tokens, timeout=self.timeout,
                                      extra=extra)
            return policy.generate(list(conversations[i]))

        with ThreadPoolExecutor(max_workers=max(1, self.concurrency)) as pool:
            return list(pool.map(one, range(len(conversations))))

    def render(self, messages: Sequence[Message]) -> str:
        """The request body's messages (the server applies its own template)."""
        return "\n".join(f"[{m['role']}] {m['content']}" for m in chat_dicts(messages))


__all__ = ["EndpointChat"]
