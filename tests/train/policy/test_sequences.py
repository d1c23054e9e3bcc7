"""Episodes to training sequences: model tokens train, the end-of-turn token only when the
model chose it, and every context segment is its own sequence."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from hscale.harness import Generation, Harness, Oracle, generate, run_episode, tokenizer  # noqa: E402
from hscale.train.policy import sequences  # noqa: E402

# internal: tests the episode sequence builder
from hscale.train.policy._sequences import episode_sequences  # noqa: E402


class Scripted:
    """The oracle's turns as token ids, with log-probs; ``cut`` turns lack the end token's."""

    def __init__(self, task, harness, cut: bool) -> None:
        self.oracle, self.cut = Oracle(task, harness), cut

    def generate(self, messages):
        text = self.oracle.generate(messages).text
        ids = tokenizer().encode(text)
        logps = (-0.5,) * (len(ids) + (0 if self.cut else 1))
        return Generation(text, ids, logps)


def episode(label: str, cut: bool):
    task = generate(3, seed=2)[2]
    harness = Harness.from_name(label)
    return run_episode(Scripted(task, harness, cut), harness, task)


@pytest.mark.parametrize("cut", [False, True])
def test_only_chosen_end_tokens_train(cut):
    tok = tokenizer()
    ep = episode("S0-T0-O0-C0-W0", cut)
    (ids, train, logps), = episode_sequences(tok, ep)
    trained_ends = [i for i, t in enumerate(ids) if t == tok.eos and train[i]]
    model_turns = len(ep.generations)
    assert len(trained_ends) == (0 if cut else model_turns)
    trained = sum(train)
    assert trained == sum(len(g.token_ids) for g in ep.generations) + len(trained_ends)
    # every trained token has the sampler's log-prob
    assert all(lp == -0.5 for lp, t in zip(logps, train, strict=True) if t)


def test_windowed_episodes_give_one_sequence_per_segment_and_train_each_turn_once():
    tok = tokenizer()
    ep = episode("S0-T0-O0-C1-W0", cut=False)
    assert len(ep.segments) > 1
    seqs = sequences(tok, [ep], max_len=512)
    assert len(seqs) == len(ep.segments)
    per_turn = sum(len(g.token_ids) + 1 for g in ep.generations)
    assert int(seqs.mask.sum()) == per_turn
    assert (seqs.owner == 0).all()
