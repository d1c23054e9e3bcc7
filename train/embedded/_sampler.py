"""Batched rollouts of the embedded policy through real harnesses.

All rows (episodes) advance together in *ticks*. In a tick each row feeds either its next
chunk of *forced* tokens (up to the tick's width, at most CHUNK, of the harness's prompt,
observation or role marker, as the view renders them; :func:`tick_width` picks the width that
wastes least on padding) or the one token it sampled last; one forward call serves every row,
and rows whose forced tokens are used up sample their next token. A row's keys sit in the
cache slots of their positions; when a harness's view stops extending what a row has seen (a
context window slides, a compaction happens), the row starts again at position 0 and writes
over the slots after what the new view still shares with the old one. Finished rows leave
the batch; the cache grows on demand.

What rows share is read once: rows that start from the same prompt (a GRPO group's
rollouts, an evaluation's decodings of one task) take a copy of the keys of one reading of
it, and a row whose view stopped extending what it has seen keeps the keys of the tokens the
new view starts with. A key depends only on the tokens up to its position, and the forward
call does not depend on the batch, so these are the numbers the row would have computed.

A row's tokens do not depend on the rest of the batch: the forward call is batch-invariant
(hscale.train.policy's ``TinyGPT.step``), and each sampled row draws from its own generator,
seeded from one draw of the caller's generator and the job's index in the call (inverse
transform: one uniform a sampled token, looked up in the row's cumulative distribution;
greedy rows draw nothing). Batch size, tick width and scheduling can change for speed without
changing an episode.

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
from hscale.train.lm import common_prefix, mix, row_generator
from hscale.train.policy import MIN_QUERIES, TinyGPT, banned, cache_slots

MAX_NEW_TOKENS = 48
CHUNK = 32  # forced tokens a row may take in one tick
LEAVE = 8  # finished rows leave the batch once they are an eighth of it
BLOCK = 16  # sampled tokens' uniforms drawn at once (Draws)


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
    draws: Draws | None = None  # a sampled row's own stream of uniforms
    entropy: float = 0.0  # summed over the row's sampled tokens


@dataclass
class Stats:
    """What a batch of rollouts cost: sampled tokens, forced tokens (read by the model),
    reused ones (forced tokens whose keys were copied or kept instead), ticks, seconds."""

    sampled: int = 0
    entropy: float = 0.0  # summed over sampled tokens (of the distribution sampled from)
    forced: int = 0
    reused: int = 0
    ticks: int = 0
    seconds: float = 0.0


class Sampler:
    """Runs many (harness, task) episodes at once with one model."""

    def __init__(self, model: TinyGPT, tok: WordTokenizer, max_new_tokens: int = MAX_NEW_TOKENS,
                 max_turns: int = EPISODE_TURNS, max_batch: int = 512, reuse: bool = True
                 ) -> None:
        """``reuse``: read what rows share once (the module's docstring); False reads every
        token of every row, the same episodes more slowly."""
        self.model, self.tok, self.reuse = model, tok, reuse
        self.max_new, self.max_turns, self.max_batch = max_new_tokens, max_turns, max_batch
        self.ban = banned(tok)
        self.stats = Stats()

    def run(self, jobs: Sequence[tuple[Harness, Task]], greedy: bool | Sequence[bool] = False,
            generator: torch.Generator | None = None, seeds: Sequence[int] | None = None
            ) -> list[Episode]:
        """One episode per job, in order; ``greedy`` for all jobs or per job. ``generator``
        makes sampling reproducible: one draw of it seeds the call, and job i's episode
        draws from its own generator, seeded from that draw and i, whatever batch it plays
        in. ``seeds`` (one a job) seed the jobs' generators instead (``generator`` unused)."""
        flags = [greedy] * len(jobs) if isinstance(greedy, bool) else list(greedy)
        if seeds is None:
            base = int(torch.randint(2**62, (1,), generator=generator))
            seeds = [mix(base, i) for i in range(len(jobs))]
        elif len(seeds) != len(jobs):
            raise ValueError(f"{len(seeds)} seeds for {len(jobs)} jobs")
        seeds = list(seeds)
        out: list[Episode] = []
        for i in range(0, len(jobs), self.max_batch):
            out.extend(self._batch(jobs[i:i + self.max_batch], flags[i:i + self.max_batch],
                                   seeds[i:i + self.max_batch]))
        return out

    @torch.inference_mode()
    def _batch(self, jobs: Sequence[tuple[Harness, Task]], greedy: list[bool],
               seeds: list[int]) -> list[Episode]:
        began = time.perf_counter()
        self.model.eval()
        rows: list[_Row] = []
        finisher = Finisher()
        try:
            for (harness, task), argmax, seed in zip(jobs, greedy, seeds, strict=True):
                draws = None if argmax else Draws(seed)
                row = _Row(TurnEngine(harness, task, self.max_turns), [], greedy=argmax,
                           draws=draws)
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
                self._loop(rows, index, finisher)
        finally:
            try:  # also after an error: no workspace is still being scored below
                done = finisher.wait()
            finally:
                for row in rows:
                    if not row.engine.env.closed:
                        row.engine.env.close()
        self.stats.seconds += time.perf_counter() - began
        for row in rows:  # in job order: the same sum whatever the ticks were
            self.stats.entropy += row.entropy
        return [done[i] for i in range(len(rows))]

    def _turn_prompt(self, engine: TurnEngine, own: dict[int, tuple[int, ...]]
                     ) -> list[int]:
        return view_ids(self.tok, engine.view(), own) + [self.tok.role["assistant"]]

    def _loop(self, rows: list[_Row], index: list[int], finisher: Finisher) -> None:
        model, limit = self.model, self.model.cfg.max_positions
        live = [rows[i] for i in index]
        cache = self._prefill(live)
        while live:
            # a row feeds its next forced tokens or the token it sampled; a finished one
            # nothing until it leaves
            width = tick_width([len(r.pending) or 1 for r in live if not r.engine.done],
                               max(r.pos for r in live))
            chunks, forced = [], 0
            for r in live:
                if r.engine.done:
                    take = []
                elif r.pending:
                    take = r.pending[:width]
                    del r.pending[:width]
                    forced += len(take)
                else:
                    take = [r.next_token]
                r.fed.extend(take)
                chunks.append(take)
            ids, lengths = padded(chunks, self.tok.pad)
            need = cache_slots(max(r.pos for r in live) + ids.shape[1])
            if need > cache[0][0].shape[2]:
                cache = _grow(cache, need)
            pos = torch.tensor([r.pos for r in live])
            hidden = model.step(ids, pos, cache, lengths)
            self.stats.ticks += 1
            self.stats.forced += forced
            for r, c in zip(live, chunks, strict=True):
                r.pos += len(c)
            sampling = [i for i, r in enumerate(live) if not r.pending and not r.engine.done]
            if sampling:
                rows_at = torch.tensor(sampling)
                last = hidden[rows_at, lengths[rows_at] - 1]
                logp = torch.log_softmax(model.logits(last).float() + self.ban, dim=-1)
                probs = logp.exp()
                chosen = logp.argmax(dim=-1)
                drawing = [j for j, i in enumerate(sampling) if not live[i].greedy]
                if drawing:  # one uniform of the row's own generator a token
                    uniform = torch.tensor([live[sampling[j]].draws.next() for j in drawing])
                    chosen[drawing] = draw(probs[drawing], uniform)
                picked = logp.gather(1, chosen[:, None])[:, 0].tolist()
                entropy = -(probs * logp.nan_to_num(neginf=0.0)).sum(-1)
                self.stats.sampled += len(sampling)
                turned = []  # (row, its ended turn, where the turn goes in its history)
                for i, token, lp, h in zip(sampling, chosen.tolist(), picked, entropy.tolist(),
                                           strict=True):
                    live[i].entropy += h
                    gen = self._extend(live[i], token, lp, limit)
                    if gen is not None:
                        turned.append((i, gen, len(live[i].engine.history)))
                # the ended turns go through their engines together (shell commands side by
                # side), then each row takes its harness's reply
                submit_all([live[i].engine for i, _, _ in turned], [g for _, g, _ in turned])
                for i, gen, at in turned:
                    self._next_turn(live[i], gen, at, limit)
                    if live[i].engine.done:  # it ended: scored while the batch goes on
                        finisher.submit(index[i], live[i].engine)
            staying = sum(not r.engine.done for r in live)
            # finished rows leave in groups (:func:`_leave`)
            if LEAVE * (len(live) - staying) >= len(live):
                index, live, cache = _leave(index, live, cache)

    def _prefill(self, live: list[_Row]) -> list:
        """The cache of the rows about to start, each distinct first prompt read once but
        for its last token (whose output samples the first token), by one row, and copied
        to every row that starts with it; each row then feeds its last prompt token."""
        model, pad = self.model, self.tok.pad
        reading: dict[object, int] = {}  # a first prompt -> its reading's row in the cache
        owner, prompts = [], []
        for i, r in enumerate(live):
            key = tuple(r.pending[:-1]) if self.reuse else i
            if key not in reading:
                reading[key] = len(prompts)
                prompts.append(r.pending[:-1])
            owner.append(reading[key])
        self.stats.reused += sum(len(r.pending) - 1 for r in live) - sum(map(len, prompts))
        at = [0] * len(prompts)
        cache = model.new_cache(len(prompts),
                                cache_slots(max(map(len, prompts)) + CHUNK))
        while True:
            takes = [len(p) - a for p, a in zip(prompts, at, strict=True) if a < len(p)]
            if not takes:
                break
            width = tick_width(takes, max(at))
            ids, lengths = padded([list(p[a:a + width]) for p, a in zip(prompts, at,
                                                                        strict=True)], pad)
            model.step(ids, torch.tensor(at), cache, lengths)
            self.stats.ticks += 1
            self.stats.forced += sum(min(t, width) for t in takes)
            at = [a + min(len(p) - a, width) for p, a in zip(prompts, at, strict=True)]
        for r in live:
            shared = len(r.pending) - 1
            r.fed, r.pos, r.pending = r.pending[:shared], shared, r.pending[shared:]
        rows = torch.tensor(owner)
        return [(k[rows], v[rows]) for k, v in cache]

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
        if restart:  # the view changed under the row: it keeps the keys of what it shares
            keep = common_prefix([prompt, r.fed]) if self.reuse else 0
            self.stats.reused += keep
            r.pending, r.fed, r.pos = prompt[keep:], prompt[:keep], keep
        else:
            r.pending = prompt[len(r.fed):]
        if r.pos + len(r.pending) + self.max_new > limit:
            r.engine.fail(Termination.LENGTH)
        return restart


# The cost of a tick in units of one row's position through the linear layers: a fixed part
# (Python and operator dispatch), and attention over the cache's slots, which grows with them;
# attention takes at least MIN_QUERIES queries a row (hscale.train.policy), so a tick narrower
# than that pays attention as if it were that wide.
TICK_COST = 100.0
SLOTS_PER_POSITION = 300.0
WIDTHS = (1, 2, 4, 8, 16, CHUNK)


def tick_width(takes: list[int], slots: int) -> int:
    """How many tokens each row may feed this tick. Every row pays for the widest (shorter
    chunks are padded), so a wide tick wastes work on rows that sample one token while a few
    others read an observation; a narrow one makes those few wait. The width with the most
    fed tokens per unit of work wins. (Episodes do not depend on it: only speed does.)"""
    most = max(takes)
    best, best_rate = 1, -1.0
    for width in WIDTHS:
        if width > 1 and width // 2 >= most:
            break
        fed = sum(min(take, width) for take in takes)
        attention = max(width, MIN_QUERIES) * (slots + width) / SLOTS_PER_POSITION
        work = TICK_COST + len(takes) * (width + attention)
        if fed / work > best_rate:
            best, best_rate = width, fed / work
    return best


def padded(chunks: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A tick's ids (B, n), each row's chunk padded to the longest, and each chunk's length
    (the forward call skips the padding)."""
    n = max(map(len, chunks))
    return (torch.tensor([c + [pad] * (n - len(c)) for c in chunks]),
            torch.tensor([len(c) for c in chunks]))


def draw(probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """Tokens drawn from the rows of ``probs`` (S, V) by inverse transform: row i's token is
    the first whose cumulative probability exceeds ``uniform[i]`` (in [0, 1)) times the row's
    total. A row's cumulative sum is its own (the same numbers whatever rows share the call),
    and a token of probability zero is never drawn. One uniform a token instead of Gumbel noise
    over the whole vocabulary: the same distribution for a fraction of the work."""
    cdf = probs.cumsum(dim=-1)
    total = cdf[:, -1:]
    # strictly below the total, so that some token's cumulative sum exceeds it
    at = torch.minimum(uniform[:, None] * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, at, right=True)[:, 0]


class Draws:
    """A sampled row's uniforms, one a sampled token, from the row's own generator. Drawn
    :data:`BLOCK` tokens at a time: torch's CPU generator gives the same numbers to one draw
    of k as to k draws of one (a test holds it to that), and the row's generator serves
    nothing else."""

    def __init__(self, seed: int) -> None:
        self.generator = row_generator(seed)
        self.block: list[float] = []
        self.used = 0

    def next(self) -> float:
        if self.used == len(self.block):
            self.block, self.used = torch.rand(BLOCK, generator=self.generator).tolist(), 0
        self.used += 1
        return self.block[self.used - 1]


def _leave(index: list[int], live: list[_Row], cache: list) -> tuple[list[int], list[_Row], list]:
    """The rows still playing, first in the batch: a finished row's place among the first
    ones goes to a playing row from the end, whose keys and values move there, and the cache
    becomes a view of the first places. So a leaving copies as many rows as left, not every
    row that stays (4.7x less work for an evaluation's 432 rows). A row's place does not
    change its numbers: the forward call is batch-invariant."""
    staying = sum(not r.engine.done for r in live)
    holes = [i for i in range(staying) if live[i].engine.done]
    movers = [i for i in range(staying, len(live)) if not live[i].engine.done]
    order = list(range(staying))
    for hole, mover in zip(holes, movers, strict=True):
        order[hole] = mover
    if holes:
        to, source = torch.tensor(holes), torch.tensor(movers)
        used = cache_slots(max(live[i].pos for i in movers) + 1)
        for k, v in cache:
            k[to, :, :used] = k[source, :, :used]
            v[to, :, :used] = v[source, :, :used]
    return ([index[i] for i in order], [live[i] for i in order],
            [(k[:staying], v[:staying]) for k, v in cache])


def _grow(cache: list, need: int) -> list:
    """At least ``need`` slots, half as many again as now (the cache grows rarely)."""
    slots = cache_slots(max(need, cache[0][0].shape[2] * 3 // 2))
    out = []
    for k, v in cache:
        pad = torch.zeros(*k.shape[:2], slots - k.shape[2], k.shape[3])
        out.append((torch.cat([k, pad], dim=2), torch.cat([v, pad], dim=2)))
    return out
