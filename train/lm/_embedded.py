"""The embedded word-level policy as a ChatModel, so evaluation and ``hscale serve`` drive it
like any other model.

It sees what the in-process sampler (hscale.train.embedded._sampler) shows it: ``<role> content
<eos>`` per message, then ``<assistant>``, with the same banned ids. One difference: the
sampler feeds a model turn as the ids it sampled, while here an assistant message is text and
is re-encoded (lossless for the built-in world's vocabulary, so usually the same ids).

Conversations run as one batch over the model's KV cache: right-padded prompts prefilled at
once, then one token per row and step, each row at its own positions and seeing only its own
slots. A prompt longer than the context keeps its last tokens (room is left for the reply).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from hscale.errors import HscaleError
from hscale.harness import Generation, Message, WordTokenizer, tokenizer
from hscale.train.lm._base import MAX_NEW_TOKENS, flags, row_generator, row_seeds
from hscale.train.policy import TinyGPT, banned, cache_slots, load


class EmbeddedChat:
    """A TinyGPT checkpoint with the built-in world's tokenizer. ``own_syntax``: it was
    trained under hscale's harnesses and reads their tool syntax, not a served tool prompt."""

    own_syntax = True

    def __init__(self, model: TinyGPT, tok: WordTokenizer | None = None,
                 name: str = "embedded") -> None:
        self.model, self.tok, self.name = model.eval(), tok or tokenizer(), name
        self.ban = banned(self.tok)
        self._markers = {*self.tok.role.values(), self.tok.eos, self.tok.unk}

    @classmethod
    def load(cls, path: str | Path, name: str | None = None) -> EmbeddedChat:
        """A checkpoint file (``hscale.train.policy._model.save`` format)."""
        path = Path(path)
        if not path.is_file():
            raise HscaleError(f"no checkpoint at {path}", "give a .pt file written by hscale")
        tok = tokenizer()
        return cls(load(path, tok.fingerprint), tok, name or path.stem)

    @classmethod
    def preset(cls, name: str) -> EmbeddedChat:
        """The cached or shipped base model of a preset such as ``hscale-tiny``; never trains
        one (that takes minutes: ``hscale model build`` says so)."""
        from hscale.train.policy import available
        from hscale.train.spec import preset

        preset(name)
        path = available(name)
        if path is None:
            raise HscaleError(f"embedded model {name} is not built",
                              f"run 'hscale model build {name}'")
        return cls.load(path, name)

    @classmethod
    def open(cls, spec: str | Path) -> EmbeddedChat:
        """A preset name, or a path to a checkpoint."""
        from hscale.train.spec import PRESETS

        if str(spec) in PRESETS:
            return cls.preset(str(spec))
        return cls.load(spec)

    @property
    def context(self) -> int:
        """Positions the model has."""
        return int(self.model.cfg.max_positions)

    # --- what the model sees ---------------------------------------------------------
    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        out: list[int] = []
        for m in messages:
            if m.role not in self.tok.role:
                raise HscaleError(f"unknown role {m.role!r}",
                                  f"use one of {', '.join(self.tok.role)}")
            out.extend(self.tok.encode_message(m))
        return out + [self.tok.role["assistant"]]

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        """How many tokens the prompt of ``messages`` is (before any truncation)."""
        return len(self.prompt_ids(messages))

    def token_text(self, token_id: int) -> str:
        """One id as text; markers (roles, ``<eos>``, ``<unk>``) by name."""
        if token_id in self._markers:
            return self.tok.tokens[token_id]
        return self.tok.decode([token_id])

    def render(self, messages: Sequence[Message]) -> str:
        return "".join(self.token_text(i) for i in self.prompt_ids(messages))

    # --- generation ------------------------------------------------------------------
    @torch.inference_mode()
    def generate(self, conversations: Sequence[Sequence[Message]],
                 greedy: bool | Sequence[bool] = True, max_new_tokens: int = MAX_NEW_TOKENS,
                 seed: int | Sequence[int] | None = None) -> list[Generation]:
        argmax = flags(greedy, len(conversations))
        if not conversations:
            return []
        if max_new_tokens < 1:
            raise HscaleError(f"max_new_tokens is {max_new_tokens}", "ask for at least 1")
        limit = self.model.cfg.max_positions
        room = min(max_new_tokens, limit // 2)  # a long prompt keeps its last tokens
        prompts = [self.prompt_ids(c)[-(limit - room):] for c in conversations]
        seeds = row_seeds(seed, len(conversations))
        generators = {i: row_generator(None if seeds is None else seeds[i])
                      for i, greedy_row in enumerate(argmax) if not greedy_row}
        return self._run(prompts, max_new_tokens, generators)

    def _run(self, prompts: list[list[int]], max_new: int,
             generators: dict[int, torch.Generator]) -> list[Generation]:
        """Greedy rows take the argmax; row i of ``generators`` draws its tokens from its own
        generator, one draw a step, so its tokens do not depend on the rest of the batch."""
        model, limit, eos = self.model, self.model.cfg.max_positions, self.tok.eos
        b, n = len(prompts), max(len(p) for p in prompts)
        lengths = torch.tensor([len(p) for p in prompts])
        steps = min(max_new, limit - int(lengths.min()))
        cache = model.new_cache(b, cache_slots(n + steps))
        ids = torch.tensor([p + [self.tok.pad] * (n - len(p)) for p in prompts])
        hidden = model.step(ids, torch.zeros(b, dtype=torch.long), cache)
        last = hidden[torch.arange(b), lengths - 1]
        out: list[list[int]] = [[] for _ in prompts]
        logps: list[list[float]] = [[] for _ in prompts]
        live = torch.ones(b, dtype=torch.bool)
        pos = lengths.clone()
        for t in range(n, n + steps):
            logp = torch.log_softmax(model.logits(last).float() + self.ban, dim=-1)
            chosen = logp.argmax(dim=-1)
            for i, generator in generators.items():
                chosen[i] = torch.multinomial(logp[i].exp(), 1, generator=generator)[0]
            picked = logp.gather(1, chosen[:, None])[:, 0]
            for i in live.nonzero()[:, 0].tolist():
                token = int(chosen[i])
                logps[i].append(float(picked[i]))
                if token == eos:
                    live[i] = False
                    continue
                out[i].append(token)
                if len(out[i]) >= max_new or int(pos[i]) + 1 >= limit:
                    live[i] = False  # cut: no end-of-turn log-prob
            if not bool(live.any()) or t + 1 == n + steps:
                break
            hidden = model.step(chosen[:, None], pos, cache)  # a row's slots are its positions
            last = hidden[:, 0]
            pos += 1
        return [Generation(self.tok.decode(ids), tuple(ids), tuple(lp), tuple(prompt))
                for ids, lp, prompt in zip(out, logps, prompts, strict=True)]



__all__ = ["EmbeddedChat"]
