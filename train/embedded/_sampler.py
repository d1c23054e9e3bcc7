"""Batched rollouts of the embedded policy through real harnesses.

All rows (episodes) advance together in *ticks*. In a tick each row feeds either its next
chunk of *forced* tokens (up to the tick's width, at most CHUNK, of the harness's prompt,
observation or role marker, as the view renders them; :func:`tick_width` picks the width that
wastes least on padding) or the one token it sampled last; one forward call serves every row,
and rows whose forced tokens are used up sample their next token. Every tick takes fresh
cache slots; a per-row bitmap says which slots belong to the row's current sequence. When a
harness's view stops extending what a row has seen (a context window slides, a compaction
happens), the row clears its bitmap and starts again at position 0 (rotary positions make the
cached keys position-correct). Finished rows leave the batch; the cache grows on demand.

The model sees exactly ``<role> content <eos>`` for each message of the harness's view, and its
own turns as the ids it sampled: no parsed state, no shortcut.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from hscale.harness import (
    EPISODE_TURNS,
    Episode,
    Finisher,
    Generation,
    Harness,
    Message,
    Termination,
    TurnEngine,
    WordTokenizer,
    submit_all,
)
from hscale.harness.tasks import Task
from hscale.train.policy import TinyGPT, banned

MAX_NEW_TOKENS = 48
CHUNK = 32  # forced tokens a row may take in one tick
LEAVE = 8  # finished rows leave the batch once they are an eighth of it


def view_ids(tok: WordTokenizer, messages: Sequence[Message],
             own: dict[int, tuple[int, ...]]) -> list[int]:
    """Token ids of a view; assistant messages use the ids the model sampled (``own``)."""
    out: list[int] = []
    for m in messages:
        out.extend(tok.encode_message(m, own.get(id(m))))
    return out


@dataclass
class _Row:
    engine: TurnEngine
    pending: list[int]
    fed: list[int] = field(default_factory=list)
    own: dict[int, tuple[int, ...]] = field(default_factory=dict)
    gen: list[int] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)
    pos: int = 0
    next_token: int = -1
    greedy: bool = False
    prompt_tokens: int = 0  # of the turn being written (its cost)


@dataclass
class Stats:
    """What a batch of rollouts cost: sampled tokens, forced tokens, ticks, seconds."""

    sampled: int = 0
    entropy: float = 0.0  # summed over sampled tokens (of the distribution sampled from)
    forced: int = 0
    ticks: int = 0
    seconds: float = 0.0


class Sampler:
    """Runs many (harness, task) episodes at once with one model."""

    def __init__(self, model: TinyGPT, tok: WordTokenizer, max_new_tokens: int = MAX_NEW_TOKENS,
                 max_turns: int = EPISODE_TURNS, max_batch: int = 512) -> None:
        self.model, self.tok = model, tok
        self.max_new, self.max_turns, self.max_batch = max_new_tokens, max_turns, max_batch
        self.ban = banned(tok)
        self.stats = Stats()

    def run(self, jobs: Sequence[tuple[Harness, Task]], greedy: bool | Sequence[bool] = False,
            generator: torch.Generator | None = None) -> list[Episode]:
        """One episode per job, in order; ``greedy`` for all jobs or per job. ``generator``
        makes sampling reproducible."""
        flags = [greedy] * len(jobs) if isinstance(greedy, bool) else list(greedy)
        out: list[Episode] = []
        for i in range(0, len(jobs), self.max_batch):
            out.extend(self._batch(jobs[i:i + self.max_batch], flags[i:i + self.max_batch],
                                   generator))
        return out

    @torch.inference_mode()
    def _batch(self, jobs: Sequence[tuple[Harness, Task]], greedy: list[bool],
               generator: torch.Generator | None) -> list[Episode]:
        began = time.perf_counter()
        self.model.eval()
        rows: list[_Row] = []
        finisher = Finisher()
        try:
            for (harness, task), argmax in zip(jobs, greedy, strict=True):
                row = _Row(TurnEngine(harness, task, self.max_turns), [], greedy=argmax)
                rows.append(row)
                row.pending = self._turn_prompt(row.engine, {})
                row.prompt_tokens = len(row.pending)
                if len(row.pending) + self.max_new > self.model.cfg.max_positions:
                    row.engine.fail(Termination.LENGTH)  # its first prompt alone fills the context
            index = [i for i, r in enumerate(rows) if not r.engine.done]
            for i, r in enumerate(rows):
                if r.engine.done:
                    finisher.submit(i, r.engine)
            if index:
                self._loop(rows, index, finisher, generator)
        finally:
            try:  # also after an error: no workspace is still being scored below
                done = finisher.wait()
            finally:
                for row in rows:
                    if not row.engine.env.closed:
                        row.engine.env.close()
        self.stats.seconds += time.perf_counter() - began
        return [done[i] for i in range(len(rows))]

    def _turn_prompt(self, engine: TurnEngine, own: dict[int, tuple[int, ...]]
                     ) -> list[int]:
        return view_ids(self.tok, engine.view(), own) + [self.tok.role["assistant"]]

    def _loop(self, rows: list[_Row], index: list[int], finisher: Finisher,
              generator: torch.Generator | None) -> None:
        model, limit = self.model, self.model.cfg.max_positions
        live = [rows[i] for i in index]
        cache = model.new_cache(len(live), 256)
        valid = torch.zeros(len(live), 256, dtype=torch.bool)  # which slots each row sees
        t = 0
        while live:
            chunks, generating = [], 0
            width = tick_width([len(r.pending) or 1 for r in live if not r.engine.done], t)
            for r in live:
                if r.engine.done:  # finished; waits to leave the batch with others
                    take = []
                elif r.pending:
                    take = r.pending[:width]
                    del r.pending[:width]
                else:
                    take = [r.next_token]
                    generating += 1
                r.fed.extend(take)
                chunks.append(take)
            n = max(len(c) for c in chunks)
            if t > 128 and 3 * int(valid[:, :t].sum(1).max()) < 2 * t:
                cache, valid, t = _compact(cache, valid, t)
            while t + n > valid.shape[1]:
                cache, valid = _grow(cache, valid)
            lengths = torch.tensor([len(c) for c in chunks])
            ids = torch.tensor([c + [self.tok.pad] * (n - len(c)) for c in chunks])
            offsets = torch.arange(n)
            pos = (torch.tensor([r.pos for r in live])[:, None] + offsets).clamp(max=limit - 1)
            valid[:, t:t + n] = offsets[None, :] < lengths[:, None]
            causal = torch.arange(t + n)[None, :] <= t + offsets[:, None]
            seen = (valid[:, None, :t + n] & causal[None])[:, None]
            # an additive float mask: the CPU attention kernel is faster with it than a bool one
            mask = torch.where(seen, 0.0, float("-inf"))
            hidden = model.step(ids, pos, cache, t, mask)
            t += n
            self.stats.ticks += 1
            self.stats.forced += int(lengths.sum()) - generating
            for r, c in zip(live, chunks, strict=True):
                r.pos += len(c)
            sampling = [i for i, r in enumerate(live) if not r.pending and not r.engine.done]
            if sampling:
                rows_at = torch.tensor(sampling)
                last = hidden[rows_at, lengths[rows_at] - 1]
                logp = torch.log_softmax(model.logits(last).float() + self.ban, dim=-1)
                argmax = torch.tensor([live[i].greedy for i in sampling])
                chosen = logp.argmax(dim=-1)
                if not bool(argmax.all()):
                    drawn = torch.multinomial(logp.exp(), 1, generator=generator)[:, 0]
                    chosen = torch.where(argmax, chosen, drawn)
                picked = logp.gather(1, chosen[:, None])[:, 0].tolist()
                self.stats.sampled += len(sampling)
                self.stats.entropy -= float((logp.exp() * logp.nan_to_num(neginf=0.0)).sum())
                turned = []  # (row, its ended turn, where the turn goes in its history)
                for i, token, lp in zip(sampling, chosen.tolist(), picked, strict=True):
                    gen = self._extend(live[i], token, lp, limit)
                    if gen is not None:
                        turned.append((i, gen, len(live[i].engine.history)))
                # the ended turns go through their engines together (shell commands side by
                # side), then each row takes its harness's reply
                submit_all([live[i].engine for i, _, _ in turned], [g for _, g, _ in turned])
                for i, gen, at in turned:
                    if self._next_turn(live[i], gen, at, limit):
                        valid[i, :t] = False  # the row starts a new sequence
                    if live[i].engine.done:  # it ended: scored while the batch goes on
                        finisher.submit(index[i], live[i].engine)
                        valid[i] = False
            keep = [i for i, r in enumerate(live) if not r.engine.done]
            # finished rows leave in groups: each leaving copies the cache of those staying
            if not keep or LEAVE * (len(live) - len(keep)) >= len(live):
                index = [index[i] for i in keep]
                live = [live[i] for i in keep]
                if live:  # copy only the slots in use, with room for the next tick
                    sel, room = torch.tensor(keep), t + CHUNK
                    cache = [(k[sel, :, :room], v[sel, :, :room]) for k, v in cache]
                    valid = valid[sel, :room]

    def _extend(self, r: _Row, token: int, logp: float, limit: int) -> Generation | None:
        """A sampled token: the turn goes on (None), or it ends: its Generation, for the
        harness."""
        if token != self.tok.eos and len(r.gen) < self.max_new:
            r.gen.append(token)
            r.logps.append(logp)
            r.next_token = token
            if r.pos + 1 < limit:
                return None
        # the end-of-turn token's log-prob follows the content's when the model chose to stop
        ended = (logp,) if token == self.tok.eos else ()
        return Generation(self.tok.decode(r.gen), tuple(r.gen), (*r.logps, *ended),
                          prompt_tokens=r.prompt_tokens)

    def _next_turn(self, r: _Row, gen: Generation, at: int, limit: int) -> bool:
        """After the harness took ``gen`` (its message at ``at`` in the history): queue the
        harness's reply, unless the episode ended. True when the row must restart (the view
        no longer extends what it has seen)."""
        r.own[id(r.engine.history[at])] = gen.token_ids
        r.gen, r.logps = [], []
        if r.engine.done:
            return False
        prompt = self._turn_prompt(r.engine, r.own)
        r.prompt_tokens = len(prompt)
        restart = prompt[:len(r.fed)] != r.fed
        if restart:  # the view changed under the row: a new sequence from position 0
            r.pending, r.fed, r.pos = prompt, [], 0
        else:
            r.pending = prompt[len(r.fed):]
        if r.pos + len(r.pending) + self.max_new > limit:
            r.engine.fail(Termination.LENGTH)
        return restart


# The cost of a tick in units of one row's position through the linear layers: a fixed part
# (Python and operator dispatch), and attention over the cache's slots, which grows with them.
TICK_COST = 100.0
SLOTS_PER_POSITION = 300.0
WIDTHS = (1, 2, 4, 8, 16, CHUNK)


def tick_width(takes: list[int], slots: int) -> int:
    """How many tokens each row may feed this tick. Every row pays for the widest (shorter
    chunks are padded), so a wide tick wastes work on rows that sample one token while a few
    others read an observation; a narrow one makes those few wait. The width with the most
    fed tokens per unit of work wins."""
    most = max(takes)
    best, best_rate = 1, -1.0
    for width in WIDTHS:
        if width > 1 and width // 2 >= most:
            break
        fed = sum(min(take, width) for take in takes)
        work = TICK_COST + len(takes) * width * (1 + (slots + width) / SLOTS_PER_POSITION)
        if fed / work > best_rate:
            best, best_rate = width, fed / work
    return best


def _compact(cache: list, valid: torch.Tensor, t: int) -> tuple[list, torch.Tensor, int]:
    """Move every row's valid slots to the left, in order; drop slots no row still sees.

    Keys carry their rotary positions, so only which slots a row sees matters, not where."""
    counts = valid[:, :t].sum(1)
    used = int(counts.max())
    order = torch.argsort((~valid[:, :t]).to(torch.int8), dim=1, stable=True)[:, :used]
    out = []
    for k, v in cache:
        index = order[:, None, :, None].expand(k.shape[0], k.shape[1], used, k.shape[3])
        k2, v2 = torch.zeros_like(k), torch.zeros_like(v)
        k2[:, :, :used], v2[:, :, :used] = k.gather(2, index), v.gather(2, index)
        out.append((k2, v2))
    fresh = torch.zeros_like(valid)
    fresh[:, :used] = torch.arange(used)[None, :] < counts[:, None]
    return out, fresh, used


def _grow(cache: list, valid: torch.Tensor) -> tuple[list, torch.Tensor]:
    """Half as many slots again (the cache grows rarely; the batch keeps going)."""
    extra = max(valid.shape[1] // 2, 64)
    out = []
    for k, v in cache:
        pad = torch.zeros(*k.shape[:2], extra, k.shape[3])
        out.append((torch.cat([k, pad], dim=2), torch.cat([v, pad], dim=2)))
    return out, torch.cat([valid, torch.zeros(valid.shape[0], extra, dtype=torch.bool)], 1)
