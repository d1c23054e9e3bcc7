"""Decoding step by step for ``hscale serve``'s local engine: a Hugging Face model's rows
join (after their prefill) and leave between steps, each prompt prefilling only what the
prefix cache does not hold.

Each step picks every row's token as HFChat's ``generate`` does (hscale.train.lm._hf): a
greedy row the argmax of its logits, a sampled row the argmax of its log-probs plus Gumbel
noise from its own generator (temperature 1, the policy's own distribution), one draw a step;
the log-prob of each chosen token is kept, the end token's too when the model stops. So a
reply does not depend on what else is decoding beside it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import torch

from hscale.harness import Generation
from hscale.train.lm import gumbel
from hscale.train.serving._kv import Slots
from hscale.train.serving._packed import Packed
from hscale.train.serving._prefix import CACHE_TOKENS, PrefixCache


@dataclass(eq=False)
class Row:
    """One request being decoded: its prompt ids, token limit and draws (None: greedy); the
    ids written so far (an end token is not one of them) and their log-probs."""

    prompt: list[int]
    limit: int
    draw: Any = None  # a torch.Generator for a sampled row
    owner: Any = None  # the scheduler's handle
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    done: bool = False


class Stepper:
    """A loaded HFChat's model decoding many rows; ``prefix`` holds what was computed."""

    def __init__(self, chat: Any, cache_tokens: int = CACHE_TOKENS) -> None:
        self.chat, self.model = chat, chat.model
        self.stops = set(chat.eos)
        self.device = chat.device
        self.packed = Packed.of(self.model)
        self.prefix = PrefixCache(cache_tokens)
        self.slots = Slots(self.model.config.get_text_config(decoder=True).num_hidden_layers)
        self.rows: list[Row] = []
        self.prefilled = 0  # prompt tokens run through the model (the rest came cached)
        self.prompted = 0  # prompt tokens asked for
        self.steps: deque[tuple[int, float]] = deque(maxlen=1 << 16)  # (rows, seconds) a step
        self.prefills: deque[tuple[int, float]] = deque(maxlen=1 << 16)  # (new, seconds)

    @torch.inference_mode()
    def join(self, row: Row) -> Row:
        """Prefill ``row``'s prompt past its longest cached prefix and pick its first token;
        it decodes from the next step on unless that token ended it."""
        from transformers import DynamicCache

        began = time.perf_counter()
        cached, past = self.prefix.lookup(row.prompt)
        new = row.prompt[cached:]
        cache = DynamicCache(ddp_cache_data=past) if past else DynamicCache()
        out = self.model(input_ids=torch.tensor([new], device=self.device),
                         position_ids=torch.arange(cached, len(row.prompt),
                                                   device=self.device)[None],
                         past_key_values=cache, use_cache=True, logits_to_keep=1)
        layers = tuple((layer.keys, layer.values) for layer in cache.layers)
        self.prefix.store(row.prompt, layers)
        self.prefilled, self.prompted = self.prefilled + len(new), \
            self.prompted + len(row.prompt)
        self._pick(out.logits[:, -1], [row])
        self.prefills.append((len(new), time.perf_counter() - began))
        if not row.done:
            self.slots.add(layers)
            self.rows.append(row)
        return row

    @torch.inference_mode()
    def step(self) -> list[Row]:
        """One token for every row; the rows that ended leave (their keys and values kept in
        the prefix cache)."""
        began = time.perf_counter()
        with self.packed.rows(len(self.rows)):
            positions, mask = self.slots.inputs()
            ids = torch.tensor([[r.ids[-1]] for r in self.rows], device=self.device)
            out = self.model(input_ids=ids, position_ids=positions, attention_mask=mask,
                             past_key_values=self.slots.cache, use_cache=True)
            self.slots.advance()
            self._pick(out.logits[:, -1], self.rows)
        done = [r for r in self.rows if r.done]
        for row in done:
            self.leave(row)
        self.steps.append((len(self.rows) + len(done), time.perf_counter() - began))
        return done

    @torch.inference_mode()
    def leave(self, row: Row) -> None:
        """``row`` stops decoding (ended, or its client is gone): what it computed stays in
        the prefix cache, its slot is freed."""
        index = self.rows.index(row)
        held = self.slots.lens[index]
        self.prefix.store((row.prompt + row.ids)[:held], self.slots.row(index))
        self.slots.drop(index)
        self.rows[index] = self.rows[-1]
        self.rows.pop()

    def drop_all(self) -> list[Row]:
        """Every row leaves without its keys and values kept (after a failed step)."""
        rows, self.rows = self.rows, []
        self.slots = Slots(len(self.slots.keys))
        return rows

    def generation(self, row: Row) -> Generation:
        """The row's turn as HFChat's ``generate`` gives it."""
        text = self.chat.tok.decode(row.ids, skip_special_tokens=True)
        return Generation(text, tuple(row.ids), tuple(row.logprobs), tuple(row.prompt))

    def _pick(self, logits: Any, rows: list[Row]) -> None:
        logits = logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        chosen = logits.argmax(dim=-1)
        for i, row in enumerate(rows):
            if row.draw is not None:  # + Gumbel(0, 1): a draw from the softmax
                chosen[i] = (logp[i] + gumbel(row.draw, logits.shape[1], logp.device)).argmax()
        picked = logp.gather(1, chosen[:, None])[:, 0].tolist()
        for row, token, lp in zip(rows, chosen.tolist(), picked, strict=True):
            row.logprobs.append(lp)
            if token in self.stops:
                row.done = True
                continue
            row.ids.append(token)
            row.done = len(row.ids) >= row.limit
