"""What evaluation and serving need of a language model: generate the next turn of many
conversations at once, as the model's own chat template renders them.

Three kinds implement it (``hscale.train.lm.open_chat_model`` picks one from a name): an embedded
checkpoint (the project's word-level policy), a Hugging Face model folder (transformers, its
chat template, batched with a KV cache) and an OpenAI-compatible endpoint. The harness parses
whatever text comes back; nothing here knows about harnesses or tasks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from hscale.harness import Generation, Message

# Tokens one turn may generate unless a caller says otherwise: room for a tool call or a short
# answer, and a bound on the cost of a model that never stops.
MAX_NEW_TOKENS = 256


@runtime_checkable
class ChatModel(Protocol):
    """A chat model as evaluation and ``hscale serve`` drive it."""

    name: str  # what eval.parquet and the report call it

    def generate(self, conversations: Sequence[Sequence[Message]],
                 greedy: bool | Sequence[bool] = True, max_new_tokens: int = MAX_NEW_TOKENS,
                 seed: int | Sequence[int] | None = None) -> list[Generation]:
        """The next assistant turn of each conversation, in order (one batch where the model
        allows it). ``greedy`` per conversation or for all; ``seed`` makes sampling
        reproducible: one seed per conversation draws its tokens whatever else shares its
        batch (so a resumed evaluation draws what an uninterrupted one drew); one int seeds
        them all (``row_seeds``). Messages with role ``tool`` are shown as the model's
        template shows tool output, or as ``user`` where it has none."""
        ...

    def render(self, messages: Sequence[Message]) -> str:
        """The prompt text the model sees for ``messages`` (its chat template, ending with
        the start of an assistant turn): for ``hscale tasks show`` and tests."""
        ...


def flags(greedy: bool | Sequence[bool], n: int) -> list[bool]:
    """``greedy`` as one flag per conversation."""
    out = [greedy] * n if isinstance(greedy, bool) else [bool(g) for g in greedy]
    if len(out) != n:
        raise ValueError(f"{len(out)} greedy flags for {n} conversations")
    return out


def mix(*parts: int | str) -> int:
    """A seed (63 bits) from ``parts``: the same in every process, on every machine."""
    text = "\x1f".join(str(part) for part in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 1


def row_seeds(seed: int | Sequence[int] | None, n: int) -> list[int] | None:
    """``seed`` as one seed per conversation (an int seeds conversation i with mix(seed, i));
    None stays None (fresh randomness)."""
    if seed is None:
        return None
    out = [mix(seed, i) for i in range(n)] if isinstance(seed, int) else [int(s) for s in seed]
    if len(out) != n:
        raise ValueError(f"{len(out)} seeds for {n} conversations")
    return out


def common_prefix(prompts: Sequence[Sequence[int]]) -> int:
    """How many leading ids all prompts share, leaving each at least one of its own (whose
    output is the next token's distribution)."""
    limit = min(len(p) for p in prompts) - 1
    first = prompts[0]
    for k in range(limit):
        if any(p[k] != first[k] for p in prompts):
            return k
    return max(limit, 0)


def row_generator(seed: int | None) -> Any:
    """A torch generator of one conversation's draws: seeded, or fresh when ``seed`` is None
    (torch is imported here, where a sampling model is already loaded)."""
    import torch

    generator = torch.Generator()
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    return generator


def gumbel(generator: Any, size: int, device: Any) -> Any:
    """One draw of Gumbel(0, 1) noise over a vocabulary of ``size`` from ``generator`` (a
    conversation's :func:`row_generator`): the argmax of log-probs plus it is a draw from the
    softmax. HFChat's ``generate`` and ``hscale serve``'s step-by-step decoding both draw
    with it, so a seed gives the same reply either way."""
    import torch

    return -torch.empty(size).exponential_(generator=generator).log().to(device)


def chat_dicts(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Messages as chat-template dicts; ``tool`` turns go as ``user`` (the harness renders tool
    results as text in its own format, not through a tool-calling API)."""
    return [{"role": "user" if m.role == "tool" else m.role, "content": m.content}
            for m in messages]


__all__ = ["MAX_NEW_TOKENS", "ChatModel", "chat_dicts", "flags", "mix", "row_generator",
           "row_seeds"]
