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

What rows share is computed once. Rows that start from the same prompt (a GRPO group's
rollouts, an evaluation's decodings of one task) share one row of the cache, a *lane*
(:class:`~hscale.train.embedded._lanes.Lanes`), and every tick feeds the lane once, for as
long as the rows stay alike: until one draws another token or its harness replies
otherwise, when the rows that differ take a copy of the lane (a policy that is sure of
itself keeps its rollouts alike for many tokens: 40% of a demo run's row-ticks). A row
whose view stops extending what it has seen keeps the keys of the tokens the new view
starts with. A key depends only on the tokens up to its position, and the
forward call does not depend on the batch, so these are the numbers each row would have
computed alone (``Sampler(reuse=False)`` computes every row apart, the check).

A sampling lane feeds, with the token it sampled last, a guess of the tokens it samples next:
what the policy sampled after the same few tokens of context before (:class:`Continuations`;
a policy sure of itself repeats its commands across rollouts, steps and tasks). Each row
draws at every guessed position from the distribution there, with its own uniforms, and
keeps the guessed tokens up to the first that its draw does not confirm; its next tick feeds
the token it drew there. A guessed token's numbers are those it would have had fed alone
(the forward call does not depend on how a row's tokens are split into calls), so guesses
change how many ticks an episode takes, not the episode: a Structured-18 run of the demo
plays in 1,950 ticks instead of 4,426. A lane guesses only as far as attention's
:data:`~hscale.train.policy.MIN_QUERIES` queries (or the tick's width) let it at no cost in
attention.

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
from dataclasses import dataclass

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
from hscale.train.embedded._draws import Continuations, Draws, draw
from hscale.train.embedded._lanes import Lanes
from hscale.train.embedded._rows import Row
from hscale.train.lm import common_prefix, mix
from hscale.train.policy import MIN_QUERIES, TinyGPT, banned, cache_slots

MAX_NEW_TOKENS = 48
CHUNK = 32  # forced tokens a row may take in one tick
LEAVE = 8  # finished rows leave the batch once they are an eighth of it
# a sampling lane's tokens a tick, its last one and its guesses, in a tick no wider: attention
# reads MIN_QUERIES queries a row whatever it feeds (hscale.train.policy)
GUESSES = MIN_QUERIES


def view_ids(tok: WordTokenizer, messages: Sequence[Message],
             own: dict[int, tuple[int, ...]]) -> list[int]:
    """Token ids of a view; assistant messages use the ids the model sampled (``own``)."""
    out: list[int] = []
    for m in messages:
        out.extend(tok.encode_message(m, own.get(id(m))))
    return out


@dataclass
class Stats:
    """What a batch of rollouts cost: sampled tokens, forced tokens (read by the model),
    reused ones (forced tokens read for another row, or whose keys a row kept), shared
    row-ticks, ticks, seconds."""

    sampled: int = 0
    entropy: float = 0.0  # summed over sampled tokens (of the distribution sampled from)
    forced: int = 0
    reused: int = 0
    shared: int = 0  # row-ticks fed by another row's lane (alike rows computed once)
    guessed: int = 0  # tokens fed as guesses of what a lane samples next (Continuations)
    confirmed: int = 0  # guessed tokens that a row's draw confirmed (kept, not fed again)
    ticks: int = 0
    seconds: float = 0.0


class Sampler:
    """Runs many (harness, task) episodes at once with one model."""

    def __init__(self, model: TinyGPT, tok: WordTokenizer, max_new_tokens: int = MAX_NEW_TOKENS,
                 max_turns: int = EPISODE_TURNS, max_batch: int = 512, reuse: bool = True,
                 guess: bool = True) -> None:
        """``reuse``: compute what rows share once (the module's docstring); False computes
        every token of every row, the same episodes more slowly. ``guess``: a sampling row
        feeds, with its last token, the tokens that followed its context before
        (:class:`Continuations`), and keeps those its own draws confirm; False feeds one
        sampled token a tick, the same episodes in more ticks."""
        self.model, self.tok, self.reuse = model, tok, reuse
        self.guesses = Continuations() if guess else None
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
        rows: list[Row] = []
        finisher = Finisher()
        try:
            for job, ((harness, task), argmax, seed) in enumerate(zip(jobs, greedy, seeds,
                                                                      strict=True)):
                draws = None if argmax else Draws(seed)
                row = Row(TurnEngine(harness, task, self.max_turns), [], greedy=argmax,
                           draws=draws, job=job)
                rows.append(row)
                row.pending = self._turn_prompt(row.engine, {})
                row.prompt_tokens = len(row.pending)
                if len(row.pending) + self.max_new > self.model.cfg.max_positions:
                    row.engine.fail(Termination.LENGTH)  # its first prompt alone fills the context
            for r in rows:
                if r.engine.done:
                    finisher.submit(r.job, r.engine)
            playing = [r for r in rows if not r.engine.done]
            if playing:
                self._loop(playing, finisher)
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

    def _loop(self, live: list[Row], finisher: Finisher) -> None:
        cache = self._prefill(live)
        while live:
            members = cache.members(live)
            chunks, pos, guessed = self._feed(members)
            ids, lengths = padded(chunks, self.tok.pad)
            pos = torch.tensor(pos)
            cache.grow(cache_slots(int(pos.max()) + ids.shape[1]), len(live))
            hidden = self.model.step(ids, pos, cache.view(), lengths)
            self.stats.ticks += 1
            sampling = [s for s, group in enumerate(members) if group and not group[0].pending]
            if sampling:
                groups = [members[s] for s in sampling]
                self._sample(hidden, lengths, groups, sampling, guessed, finisher)
                cache.split(groups)
            done = sum(r.engine.done for r in live)
            # finished rows leave in groups, and the lanes they held with them (a lane is
            # unheld only when its rows finished)
            if done and (LEAVE * done >= len(live) or LEAVE * cache.unheld(live) >= cache.used):
                live = cache.leave(live)

    def _feed(self, members: list[list[Row]]
              ) -> tuple[list[list[int]], list[int], dict[int, list[int]]]:
        """Each lane's tokens for this tick and the position of its first: its rows are
        alike, so all take what its first row takes, its next forced tokens (up to the
        tick's width) or the token it sampled last; a lane whose rows finished, none. A lane
        that samples after this tick also feeds a guess of the tokens it will sample next
        (:class:`Continuations`), as far as the tick's width lets it at no cost in attention:
        the lanes' guesses (lane -> tokens) come back, and its rows take only the guessed
        tokens that their draws confirm (:meth:`_sample`)."""
        leads = [group[0] for group in members if group]
        width = tick_width([len(r.pending) or 1 for r in leads], max(r.pos for r in leads))
        room = max(width, GUESSES)
        limit = self.model.cfg.max_positions
        chunks, pos, guessed = [], [], {}
        for s, group in enumerate(members):
            lead = group[0] if group else None
            pos.append(lead.pos if lead else 0)
            if lead is None:
                chunks.append([])
                continue
            forced = bool(lead.pending)
            take = lead.pending[:width] if forced else [lead.next_token]
            if forced:  # read once for the lane; its other rows would have read them too
                self.stats.forced += len(take)
                self.stats.reused += len(take) * (len(group) - 1)
            self.stats.shared += len(group) - 1
            for r in group:
                if forced:
                    del r.pending[:len(take)]
                r.fed.extend(take)
                r.pos += len(take)
            chunk = take
            if self.guesses is not None and not lead.pending:  # it samples after this tick
                turn = len(lead.gen) if not forced else 0
                size = min(room - len(take), self.max_new - turn, limit - lead.pos - 1)
                guess = self.guesses.guess(lead.fed, size, self.tok.eos) if size > 0 else []
                if guess:
                    guessed[s] = guess
                    chunk = take + guess
                    self.stats.guessed += len(guess)
            chunks.append(chunk)
        return chunks, pos, guessed

    def _sample(self, hidden: torch.Tensor, lengths: torch.Tensor, groups: list[list[Row]],
                lanes: list[int], guessed: dict[int, list[int]], finisher: Finisher) -> None:
        """The next tokens of every row of the sampling ``lanes`` (their rows ``groups``):
        each row draws from its lane's distribution with its own uniforms (a greedy row takes
        the likeliest token); where the lane fed a guess, the row goes on drawing at each
        guessed token for as long as its draw is the token guessed (the guessed token's keys
        are then its own). The turns that ended go through their harnesses."""
        limit = self.model.cfg.max_positions
        # each lane's sampled positions: its last real token's and each guessed token's
        spans = [len(guessed.get(s, ())) + 1 for s in lanes]
        ends = lengths.tolist()  # each lane's tokens this tick, guesses included
        last = hidden[[s for s, n in zip(lanes, spans, strict=True) for _ in range(n)],
                      [ends[s] - n + i for s, n in zip(lanes, spans, strict=True)
                       for i in range(n)]]
        logp = torch.log_softmax(self.model.logits(last).float() + self.ban, dim=-1)
        probs = logp.exp()
        entropy = -(probs * logp.nan_to_num(neginf=0.0)).sum(-1)
        starts = [0]  # lane j's positions: starts[j] to starts[j + 1]
        for n in spans:
            starts.append(starts[-1] + n)
        # each row, the lane it plays in, and where its positions begin among all rows'
        players, lane_of, begins, of = [], [], [0], []
        for j, group in enumerate(groups):
            for r in group:
                players.append(r)
                lane_of.append(lanes[j])
                of.extend(range(starts[j], starts[j + 1]))
                begins.append(len(of))
        of = torch.tensor(of)
        chosen = logp.argmax(dim=-1)[of]
        drawing = [k for k, r in enumerate(players) if not r.greedy]
        if drawing:  # one uniform of the row's own generator a token, read ahead
            index = torch.tensor([i for k in drawing for i in range(begins[k], begins[k + 1])])
            uniform = torch.tensor([u for k in drawing for u in
                                    players[k].draws.ahead(begins[k + 1] - begins[k])])
            chosen[index] = draw(probs[of[index]], uniform)
        tokens = chosen.tolist()
        picked = logp[of, chosen].tolist()
        entropies = entropy[of].tolist()
        turned = []  # (row, its ended turn, where the turn goes in its history)
        for k, (r, lane) in enumerate(zip(players, lane_of, strict=True)):
            guess = guessed.get(lane, ())
            for flat in range(begins[k], begins[k + 1]):
                i = flat - begins[k]
                token, lp, h = tokens[flat], picked[flat], entropies[flat]
                if r.draws is not None:
                    r.draws.next()
                self.stats.sampled += 1
                r.entropy += h
                if self.guesses is not None:
                    self.guesses.saw(r.fed, token)
                gen = self._extend(r, token, lp, limit)
                if gen is not None:
                    turned.append((r, gen, len(r.engine.history)))
                    break
                if i < len(guess) and token == guess[i]:  # fed already: its keys hold
                    r.fed.append(token)
                    r.pos += 1
                    self.stats.confirmed += 1
                    continue
                break
        # the ended turns go through their engines together (shell commands side by side),
        # then each row takes its harness's reply
        submit_all([r.engine for r, _, _ in turned], [g for _, g, _ in turned])
        for r, gen, at_turn in turned:
            self._next_turn(r, gen, at_turn, limit)
            if r.engine.done:  # it ended: scored while the batch goes on
                finisher.submit(r.job, r.engine)

    def _prefill(self, live: list[Row]) -> Lanes:
        """The cache of the rows about to start: each distinct first prompt read once but
        for its last token (whose output samples the first token), in a lane that every row
        starting with it shares. Each row then feeds that last token."""
        model, pad = self.model, self.tok.pad
        reading: dict[object, int] = {}  # a first prompt -> its lane
        prompts = []
        for i, r in enumerate(live):
            key = tuple(r.pending) if self.reuse else i
            if key not in reading:
                reading[key] = len(prompts)
                prompts.append(r.pending[:-1])
            r.lane = reading[key]
        self.stats.reused += sum(len(r.pending) - 1 for r in live) - sum(map(len, prompts))
        cache = Lanes(model.new_cache(len(live), cache_slots(max(map(len, prompts)) + CHUNK)),
                       used=len(prompts))
        at = [0] * len(prompts)
        while True:
            takes = [len(p) - a for p, a in zip(prompts, at, strict=True) if a < len(p)]
            if not takes:
                break
            width = tick_width(takes, max(at))
            ids, lengths = padded([list(p[a:a + width]) for p, a in zip(prompts, at,
                                                                        strict=True)], pad)
            model.step(ids, torch.tensor(at), cache.view(), lengths)
            self.stats.ticks += 1
            self.stats.forced += sum(min(t, width) for t in takes)
            at = [a + min(len(p) - a, width) for p, a in zip(prompts, at, strict=True)]
        for r in live:
            shared = len(r.pending) - 1
            r.fed, r.pos, r.pending = r.pending[:shared], shared, r.pending[shared:]
        return cache

    def _extend(self, r: Row, token: int, logp: float, limit: int) -> Generation | None:
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

    def _next_turn(self, r: Row, gen: Generation, at: int, limit: int) -> bool:
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
