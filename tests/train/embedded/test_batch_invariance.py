"""The embedded sampler's episodes do not depend on batching (issue 56): the same episode (a
(harness, task) job with its seed) played alone, inside a batch of 8 and inside a batch of
64 of other jobs, split into smaller batches, or fed in ticks of another width, gives the
same token ids and the same log-probs, bit for bit, sampled and greedy. So tick width, batch
layout and scheduling may change for speed without changing a row of a run."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

# internal: tests a sampled row's draws and the guesses of its next tokens
import hscale.train.embedded._draws as draws_module  # noqa: E402

# internal: tests the embedded sampler's batching
import hscale.train.embedded._sampler as sampler_module  # noqa: E402
from hscale.harness import (  # noqa: E402
    Harness,
    factor_space,  # noqa: E402
    generate,
    tokenizer,
)
from hscale.train.policy import base_model  # noqa: E402


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return base_model("hscale-tiny")


@pytest.fixture(scope="module")
def jobs():
    """64 jobs: every kind of harness (windowed and compacting ones restart their rows),
    each task once, each job with a seed of its own."""
    space = factor_space()
    labels = [space.label(c) for c in space.all_configs()] + ["oos/shell", "oos/actions"]
    tasks = generate(64, seed=5)
    return [(Harness.from_name(labels[(i * 37) % len(labels)]), tasks[i]) for i in range(64)]


def play(model, jobs, seeds, greedy, **kwargs):
    sampler = sampler_module.Sampler(model, tokenizer(), **kwargs)
    return sampler.run(jobs, greedy=greedy, seeds=seeds)


def trace(episode):
    return ([(g.token_ids, g.logprobs) for g in episode.generations],
            [(m.role, m.content) for m in episode.messages], episode.reward)


SEEDS = [1000 + 7 * i for i in range(64)]
WATCHED = (0, 5, 21, 63)  # jobs whose episodes are compared


@pytest.mark.parametrize("greedy", [False, True])
def test_an_episode_is_the_same_alone_and_in_batches_of_8_and_64(model, jobs, greedy):
    flags = [greedy if i % 2 else not greedy for i in range(64)]  # both kinds around it
    whole = play(model, jobs, SEEDS, flags)
    assert sum(len(e.generations) for e in whole) > 100  # the batch does play
    for i in WATCHED:
        alone = play(model, [jobs[i]], [SEEDS[i]], [flags[i]])[0]
        first = min(max(0, i - 4), 56)
        eight = list(range(first, first + 8))  # it sits among 7 others
        among = play(model, [jobs[j] for j in eight], [SEEDS[j] for j in eight],
                     [flags[j] for j in eight])[eight.index(i)]
        assert trace(alone) == trace(among) == trace(whole[i]), i
    # the same 64 in batches of 3 (rows leave and join in other company)
    split = play(model, jobs, SEEDS, flags, max_batch=3)
    assert [trace(e) for e in split] == [trace(e) for e in whole]


@pytest.mark.parametrize("width", [1, 2, 8, sampler_module.CHUNK])
def test_an_episode_is_the_same_under_another_tick_width(model, jobs, width, monkeypatch):
    flags = [i % 3 == 0 for i in range(64)]
    whole = play(model, jobs[:16], SEEDS[:16], flags[:16])
    monkeypatch.setattr(sampler_module, "tick_width",
                        lambda takes, slots: width)
    fixed = play(model, jobs[:16], SEEDS[:16], flags[:16])
    assert [trace(e) for e in fixed] == [trace(e) for e in whole]


def test_a_call_seeds_its_jobs_by_their_index_not_their_batch(model, jobs):
    """Without seeds, one draw of the caller's generator seeds the call: the same jobs give
    the same episodes in batches of any size, and each call draws once."""
    def run(max_batch):
        generator = torch.Generator().manual_seed(3)
        sampler = sampler_module.Sampler(model, tokenizer(), max_batch=max_batch)
        episodes = sampler.run(jobs[:12], generator=generator)
        return [trace(e) for e in episodes], generator.get_state()

    (a, state_a), (b, state_b) = run(512), run(5)
    assert a == b and torch.equal(state_a, state_b)
    after_one = torch.Generator().manual_seed(3)
    torch.randint(2**62, (1,), generator=after_one)
    assert torch.equal(state_a, after_one.get_state())


@pytest.mark.parametrize("greedy", [False, True])
def test_rows_that_start_alike_share_a_lane_and_play_as_rows_computed_apart(model, jobs,
                                                                           greedy):
    """Rows that start alike (a GRPO group: one job four times) share one lane of the
    cache for as long as they stay alike, and rows whose window slid or whose history was
    compacted keep the keys of what the new view still starts with: the same episodes as
    computing every row apart."""
    distinct = jobs[:24]  # nothing shared at the start: what is kept comes from restarts
    group = [job for job in jobs[:12] for _ in range(4)]  # 12 groups of 4 rollouts
    for played in (distinct, group):
        seeds = [2000 + i for i in range(len(played))]
        reused = sampler_module.Sampler(model, tokenizer())
        anew = sampler_module.Sampler(model, tokenizer(), reuse=False)
        episodes = reused.run(played, greedy=greedy, seeds=seeds)
        assert [trace(e) for e in episodes] == [trace(e) for e in anew.run(
            played, greedy=greedy, seeds=seeds)]
        assert reused.stats.reused > 0 and anew.stats.reused == 0  # the reuse happened
        assert reused.stats.forced + reused.stats.reused == anew.stats.forced
        assert anew.stats.shared == 0 and anew.stats.sampled == reused.stats.sampled
    assert reused.stats.shared > 0  # the group's rows shared their lanes
    if not greedy:  # and the sampled ones parted: some rollouts of a group differ
        assert any(len({str(trace(e)) for e in episodes[i:i + 4]}) > 1
                   for i in range(0, len(episodes), 4))


@pytest.mark.parametrize("greedy", [False, True])
def test_rows_that_part_where_their_harness_replies_otherwise_play_as_alone(model, jobs,
                                                                             greedy):
    """A task and a twin whose files differ but whose prompt is the same: their rows share
    a lane until an observation shows the files, then part; each plays as it would alone."""
    twins = []
    for harness, task in jobs[:8]:
        files = {path: text + "\nzz 7" for path, text in task.input_files.items()}
        twins += [(harness, task), (harness, dataclasses.replace(task, input_files=files))] * 2
    seeds = [3000 + i for i in range(len(twins))]
    sampler = sampler_module.Sampler(model, tokenizer())
    together = sampler.run(twins, greedy=greedy, seeds=seeds)
    apart = sampler_module.Sampler(model, tokenizer(), reuse=False).run(twins, greedy=greedy,
                                                                        seeds=seeds)
    assert [trace(e) for e in together] == [trace(e) for e in apart]
    for i in (0, 5, 13):
        alone = play(model, [twins[i]], [seeds[i]], greedy)[0]
        assert trace(alone) == trace(together[i]), i
    assert sampler.stats.shared > 0
    parted = [i for i in range(0, len(twins), 4)
              if trace(together[i])[1] != trace(together[i + 1])[1]]
    assert parted  # some twins saw their files differ


def test_a_rows_uniforms_drawn_a_block_at_a_time_are_those_of_a_draw_a_token():
    """The sampler draws a row's uniforms for several tokens at once; torch's generator must
    give those tokens the numbers that one draw a token would."""
    from hscale.train.lm import row_generator

    stream = draws_module.Draws(seed=77)
    generator = row_generator(77)
    for _ in range(3 * draws_module.BLOCK + 5):
        assert stream.next() == float(torch.rand(1, generator=generator))


def test_a_rows_draw_is_the_same_alone_and_among_other_rows():
    """The inverse-transform draw reads a row's own cumulative sum: the same token for a
    row alone and in a batch of 64 others, at every uniform."""
    generator = torch.Generator().manual_seed(3)
    probs = torch.softmax(torch.randn(65, 740, generator=generator) * 3, dim=-1)
    uniform = torch.rand(65, generator=generator)
    together = draws_module.draw(probs, uniform)
    alone = torch.cat([draws_module.draw(probs[i:i + 1], uniform[i:i + 1])
                       for i in range(65)])
    assert torch.equal(together, alone)


def test_a_draw_never_picks_a_token_of_probability_zero():
    """Banned ids have probability zero: no uniform, the ends 0 and the largest below 1
    included, draws one; and the draw's frequencies follow the distribution."""
    probs = torch.zeros(1, 740)
    allowed = torch.tensor([5, 6, 300, 738])
    probs[0, allowed] = torch.tensor([0.1, 0.2, 0.3, 0.4])
    edges = torch.tensor([0.0, 1e-12, 0.1, 0.3, 0.6, 1.0 - 2**-24])
    picked = draws_module.draw(probs.expand(len(edges), -1), edges)
    assert picked.tolist() == [5, 5, 6, 300, 738, 738]
    uniform = torch.rand(40_000, generator=torch.Generator().manual_seed(0))
    counts = torch.bincount(draws_module.draw(probs.expand(len(uniform), -1), uniform),
                            minlength=740)
    assert counts.sum() == counts[allowed].sum()
    # within 5 standard errors of each probability
    share = counts[allowed].double() / len(uniform)
    expected = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.double)
    assert ((share - expected).abs() < 5 * (expected * (1 - expected) / len(uniform)).sqrt()).all()


@pytest.mark.parametrize("seed", range(6))
def test_a_tick_of_ragged_rows_packs_its_tokens_to_the_numbers_of_the_padded_tick(model,
                                                                                   seed):
    """A tick whose rows feed fewer tokens than its width (and rows that feed none) runs
    its per-token layers on the real tokens alone: the same hidden states and the same
    keys in the slots those tokens write as the padded tick, bit for bit."""
    generator = torch.Generator().manual_seed(seed)
    rows, width = 3 + seed, (1, 4, 8, 32, 5, 16)[seed]
    ids = torch.randint(5, 700, (rows, width), generator=generator)
    pos = torch.randint(0, 200, (rows,), generator=generator)
    lengths = torch.randint(0, width + 1, (rows,), generator=generator)
    lengths[0] = width if seed % 2 else lengths[0]
    slots = -(-(int(pos.max()) + width) // 64) * 64
    warm = torch.randint(5, 700, (rows, 64), generator=generator)
    padded, packed = model.new_cache(rows, slots + 64), model.new_cache(rows, slots + 64)
    with torch.inference_mode():
        for cache in (padded, packed):  # some earlier keys to attend to
            model.step(warm, torch.zeros(rows, dtype=torch.long), cache)
        whole = model.step(ids, pos, padded)
        ragged = model.step(ids, pos, packed, lengths)
    for b in range(rows):
        real = int(lengths[b])
        assert torch.equal(ragged[b, :real], whole[b, :real])
        assert not ragged[b, real:].any()  # the padding's outputs are zero
        for (k1, v1), (k2, v2) in zip(padded, packed, strict=True):
            written = slice(0, int(pos[b]) + real)
            assert torch.equal(k1[b, :, written], k2[b, :, written])
            assert torch.equal(v1[b, :, written], v2[b, :, written])


@pytest.mark.parametrize("seed", range(8))
def test_a_rows_numbers_do_not_depend_on_how_far_the_other_rows_are(model, seed):
    """A tick attends over the slots of its furthest row: a row at position p gives the same
    hidden states beside a row near the end of the context as alone, for every width and
    every p (the values' sum in fixed blocks, padded queries, whole blocks of slots)."""
    generator = torch.Generator().manual_seed(seed)
    width = (1, 2, 3, 4, 5, 8, 16, 32)[seed]
    context = model.cfg.max_positions
    history = torch.randint(5, 700, (1, context), generator=generator)
    for p in torch.randint(0, context - 96, (6,), generator=generator).tolist() + [0]:
        far = int(torch.randint(context - 32 - width, context - width, (1,), generator=generator))
        ids = torch.randint(5, 700, (2, width), generator=generator)
        outs = []
        for rows in (1, 2):  # the row alone, then beside one at position ``far``
            cache = model.new_cache(rows, context + 64)
            with torch.inference_mode():
                start = torch.zeros(rows, dtype=torch.long)
                reads = history.expand(rows, -1)[:, :far].contiguous()
                lengths = torch.tensor([p, far][:rows])
                if far:
                    model.step(reads, start, cache, lengths)
                outs.append(model.step(ids[:rows], torch.tensor([p, far][:rows]), cache))
        assert torch.equal(outs[0][0], outs[1][0]), (width, p, far)


@pytest.mark.parametrize("greedy", [False, True])
def test_guessed_tokens_leave_every_episode_as_it_is(model, jobs, greedy):
    """A sampling lane feeds guesses of its next tokens with its last one and keeps those its
    rows' draws confirm: the same episodes as one sampled token a tick, in fewer ticks, with
    GRPO groups (rows of a lane confirm different lengths and part) and every kind of
    harness (windowed and compacting ones restart their rows). A second call of the same
    sampler guesses from what the first sampled: better guesses, the same episodes."""
    played = [job for job in jobs[:16] for _ in range(4)]
    seeds = [4000 + i for i in range(len(played))]
    plain = sampler_module.Sampler(model, tokenizer(), guess=False)
    expected = [trace(e) for e in plain.run(played, greedy=greedy, seeds=seeds)]
    guessing = sampler_module.Sampler(model, tokenizer())
    assert [trace(e) for e in guessing.run(played, greedy=greedy, seeds=seeds)] == expected
    first = dataclasses.replace(guessing.stats)
    assert first.confirmed > 0 and first.ticks < plain.stats.ticks
    assert first.sampled == plain.stats.sampled
    assert [trace(e) for e in guessing.run(played, greedy=greedy, seeds=seeds)] == expected
    assert guessing.stats.confirmed - first.confirmed > first.confirmed  # it learned


@pytest.mark.parametrize("seed", range(3))
def test_any_guess_leaves_every_episode_as_it_is(model, jobs, seed, monkeypatch):
    """Guesses of any quality, random tokens of random lengths (ends of turns among them)
    or the ones the sampler would make, give the same episodes: a row keeps a guessed token
    only where its own draw is that token."""
    generator = torch.Generator().manual_seed(seed)
    tok = tokenizer()
    played = [job for job in jobs[16:24] for _ in range(3)]
    flags = [i % 4 == 0 for i in range(len(played))]
    seeds = [5000 + i for i in range(len(played))]
    expected = [trace(e) for e in sampler_module.Sampler(model, tok, guess=False).run(
        played, greedy=flags, seeds=seeds)]
    learned = draws_module.Continuations.guess

    def anything(self, context, size, end):
        right = learned(self, context, size, end)
        n = int(torch.randint(0, size + 1, (1,), generator=generator))
        noise = torch.randint(0, len(tok), (n,), generator=generator).tolist()
        cut = int(torch.randint(0, len(right) + 1, (1,), generator=generator))
        return (right[:cut] + noise)[:size]  # right for a while, then anything

    monkeypatch.setattr(draws_module.Continuations, "guess", anything)
    sampler = sampler_module.Sampler(model, tok)
    assert [trace(e) for e in sampler.run(played, greedy=flags, seeds=seeds)] == expected
    assert sampler.stats.guessed > sampler.stats.confirmed > 0


def test_uniforms_read_ahead_are_the_ones_drawn_next():
    """A row reads as many uniforms ahead as it has guessed tokens, and draws only those it
    uses: the stream is the one of a draw a token, however far it was read ahead."""
    from hscale.train.lm import row_generator

    stream = draws_module.Draws(seed=78)
    generator = row_generator(78)
    for ahead in (3, 1, 20, 0, 16, 5, 40):
        seen = stream.ahead(ahead)
        used = seen[:ahead // 2 + 1] if ahead else []
        for u in used:
            assert stream.next() == u == float(torch.rand(1, generator=generator))


def test_a_guess_follows_what_was_sampled_after_its_context():
    memory = draws_module.Continuations()
    order = draws_module.ORDER
    context = list(range(10, 10 + order))
    for token in (7, 8, 9, 2, 5):  # 2 ends a turn
        memory.saw(context, token)
        context = context + [token]
    start = list(range(10, 10 + order))
    assert memory.guess(start, 10, end=2) == [7, 8, 9, 2]  # not past the end of the turn
    assert memory.guess(start, 2, end=2) == [7, 8]
    assert memory.guess([1, *start], 10, end=99) == [7, 8, 9, 2, 5]  # the last ORDER count
    assert memory.guess([3] * order, 10, end=2) == []  # a context never seen
    memory.saw(start, 4)  # the most recent continuation wins
    assert memory.guess(start, 1, end=2) == [4]


def test_the_guesses_keep_a_bounded_number_of_contexts():
    memory = draws_module.Continuations(most=3)
    for start in range(10):
        memory.saw([start] * draws_module.ORDER, start + 100)
        assert len(memory.next) <= 3
    assert memory.guess([9] * draws_module.ORDER, 1, end=2) == [109]  # the latest stays
