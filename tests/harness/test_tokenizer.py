"""The word tokenizer: lossless on every text of the built-in world, small, and strict."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hscale.harness import (
    Harness,
    Message,
    WordTokenizer,
    factor_space,
    generate,
    run_episode,
    tokenizer,
)

# internal: tests the scripted habit policies
from hscale.harness._policies import Demonstrator

# internal: uses the built-in world's vocabulary
from hscale.harness._vocab import vocabulary

LABELS = [factor_space().label(c) for c in factor_space().all_configs()]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """Every message of demonstrations under all 243 + 2 out-of-space harnesses."""
    tasks = generate(25, seed=3)
    out = []
    for i, label in enumerate([*LABELS, "oos/shell", "oos/actions"]):
        harness = Harness.from_name(label)
        task = tasks[i % len(tasks)]
        episode = run_episode(Demonstrator(task, harness, seed=i), harness, task)
        out += [m.content for m in episode.messages]
    return out


def test_round_trip_is_exact_on_the_world_texts(texts):
    tok = tokenizer()
    for text in texts:
        ids = tok.encode(text)
        assert tok.unk not in ids, text
        assert tok.decode(ids) == text


def test_spacing_survives_where_parsers_care():
    tok = tokenizer()
    for text in ['<tool_call>{"name": "read", "arguments": {"path": "cat.txt"}}</tool_call>',
                 "  see  the word ", "cat\n\ndog", "calc 12 * 305 = 3660", 'path="cat.txt"']:
        assert tok.decode(tok.encode(text)) == text


def test_numbers_are_spelled_in_digits_and_the_vocabulary_is_small():
    tok = tokenizer()
    assert len(tok) < 1000
    ids = tok.encode("add 305 and 7")
    assert [tok.tokens[i] for i in ids] == ["add", "▁3", "0", "5", "▁and", "▁7"]


@given(st.lists(st.sampled_from([w for w in vocabulary() if not w.startswith("<")][:400]),
                min_size=1, max_size=12),
       st.lists(st.sampled_from(["", " ", "  ", "\n"]), min_size=12, max_size=12))
def test_round_trip_of_arbitrary_word_sequences(words, gaps):
    tok = tokenizer()
    text = "".join(g + w for w, g in zip(words, gaps, strict=False))
    # adjacent words with no gap may merge into another token; what decodes must re-encode
    assert tok.decode(tok.encode(tok.decode(tok.encode(text)))) == tok.decode(tok.encode(text))
    if all(g for g in gaps[1:len(words)]):
        assert tok.decode(tok.encode(text)) == text


def test_chat_rendering_marks_roles_and_ends_messages():
    tok = tokenizer()
    ids = tok.encode_chat([Message("system", "see the file"), Message("assistant", "cat")])
    assert ids[0] == tok.role["system"] and ids[-1] == tok.eos
    assert ids.count(tok.eos) == 2 and tok.role["assistant"] in ids
    assert tok.decode(ids) == "see the filecat"


def test_unknown_words_become_unk_and_fingerprints_follow_the_vocabulary():
    tok = tokenizer()
    assert tok.encode("zzzqx") == (tok.unk,)
    other = WordTokenizer(["alpha", "beta"])
    assert other.fingerprint != tok.fingerprint and len(other) < 30
