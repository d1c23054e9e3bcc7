"""The agent loop with scripted policies, under every harness."""

from __future__ import annotations

import pytest

from hscale.harness import (
    OUT_OF_SPACE,
    DoNothing,
    Episode,
    Generation,
    Harness,
    Message,
    NoisyOracle,
    Oracle,
    factor_space,
    generate,
    run_episode,
)

# internal: tests the built-in world's generator
from hscale.harness._world import CATEGORIES
from tests.harness.helpers import out_of_vocabulary

SPACE = factor_space()
LABELS = SPACE.labels(SPACE.all_configs()) + list(OUT_OF_SPACE)


def test_oracle_solves_every_category_under_every_harness():
    tasks = generate(len(CATEGORIES), seed=3)
    assert {t.category for t in tasks} == set(CATEGORIES)
    for label in LABELS:
        harness = Harness.from_name(label)
        for task in tasks:
            episode = run_episode(Oracle(task, harness), harness, task)
            assert episode.success, (label, task.task_id, episode.final_answer)
            assert episode.termination == "answer"
            assert not episode.parse_errors


@pytest.mark.slow
def test_oracle_reaches_99_percent_on_a_benchmark_under_each_harness():
    tasks = generate(40, seed=11)
    for label in LABELS:
        harness = Harness.from_name(label)
        wins = sum(run_episode(Oracle(t, harness), harness, t).success for t in tasks)
        assert wins / len(tasks) >= 0.99, label


@pytest.mark.parametrize("label", ["S0-T0-O0-C0-W0", "S2-T1-O2-C2-W1", "oos/actions"])
def test_doing_nothing_scores_zero(label):
    harness = Harness.from_name(label)
    for task in generate(10, seed=5):
        assert run_episode(DoNothing(), harness, task).reward == 0


def test_episode_record_is_complete_and_in_vocabulary():
    harness = Harness.from_name("S1-T0-O1-C2-W2")
    task = next(t for t in generate(20, seed=2) if t.category == "multi_step")
    episode = run_episode(Oracle(task, harness), harness, task)
    assert isinstance(episode, Episode) and episode.success
    assistant = [m for m in episode.messages if m.role == "assistant"]
    assert len(assistant) == episode.turns == len(episode.generations)
    assert [c.name for c, _ in episode.tool_calls] == [c.name for c in task.solution]
    assert len(episode.segments) >= 2  # compaction started a new segment
    for message in episode.messages:
        assert not out_of_vocabulary(message.content), message.content


def test_noisy_oracle_makes_real_mistakes_and_recovers_sometimes():
    tasks = generate(30, seed=4)
    harness = Harness.from_name("S0-T0-O0-C0-W0")
    other = Harness.from_name("S0-T2-O0-C0-W0")
    clean = sum(run_episode(NoisyOracle(t, harness, 0.0, other=other), harness, t).success
                for t in tasks)
    noisy = [run_episode(NoisyOracle(t, harness, 0.4, seed=i, other=other), harness, t)
             for i, t in enumerate(tasks)]
    assert clean == len(tasks)
    assert sum(e.success for e in noisy) < len(tasks)
    assert sum(e.parse_errors for e in noisy) > 0  # python-call syntax under json_call


def test_policy_errors_and_turn_limits_end_the_episode_cleanly():
    class Broken:
        def generate(self, messages: list[Message]) -> Generation:
            raise RuntimeError("boom")

    class Looping:
        def generate(self, messages: list[Message]) -> Generation:
            return Generation('<tool_call> {"name": "list_files", "arguments": {}} </tool_call>')

    harness = Harness.from_name("S0-T0-O0-C0-W0")
    task = generate(1, seed=0)[0]
    broken = run_episode(Broken(), harness, task)
    assert broken.termination == "policy_error" and "boom" in broken.error
    looping = run_episode(Looping(), harness, task, max_turns=5)
    assert looping.termination == "max_turns" and looping.turns == 5 and looping.reward == 0


def test_whole_episodes_stay_near_the_256_token_budget():
    """A small model must see whole episodes: oracle episodes stay around 256 tokens."""
    # internal: uses the built-in world's vocabulary
    from hscale.harness._vocab import tokenize

    lengths = []
    for label in LABELS:
        harness = Harness.from_name(label)
        for task in generate(len(CATEGORIES), seed=1):
            episode = run_episode(Oracle(task, harness), harness, task)
            lengths.append(sum(len(tokenize(m.content)) + 2 for m in episode.messages))
    lengths.sort()
    assert lengths[-1] <= 300  # two tokens per message stand for role markers
    assert lengths[int(0.9 * len(lengths))] <= 256
