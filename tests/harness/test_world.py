"""The built-in benchmark: deterministic, disjoint splits, solvable, closed vocabulary, small."""

from __future__ import annotations

import pytest

from hscale.errors import HscaleError
from hscale.harness import Env, generate

# internal: uses the built-in world's vocabulary
from hscale.harness._vocab import tokenize

# internal: tests the built-in world's generator
from hscale.harness._world import (
    CATEGORIES,
    MAX_FILE_TOKENS,
    MAX_FILES,
    MAX_QUERY_TOKENS,
    WORDS,
    split_of,
)
from hscale.harness.tasks import task_to_row
from tests.harness.helpers import out_of_vocabulary

TRAIN = generate(60, seed=0)
EVAL = generate(60, seed=0, split="eval")


def _content(task):
    return (task.user_query, tuple(sorted(task.input_files.items())))


def test_generation_is_deterministic_per_seed():
    again = generate(60, seed=0)
    assert [task_to_row(t) for t in again] == [task_to_row(t) for t in TRAIN]
    other = generate(60, seed=1)
    assert [_content(t) for t in other] != [_content(t) for t in TRAIN]


def test_splits_are_disjoint_by_content_whatever_the_seeds():
    train = {_content(t) for seed in (0, 1, 2) for t in generate(40, seed)}
    evals = {_content(t) for seed in (0, 1, 2) for t in generate(40, seed, split="eval")}
    assert train and evals and not train & evals
    assert len({_content(t) for t in TRAIN}) == len(TRAIN)  # no duplicates within a split
    assert {t.split for t in TRAIN} == {"train"} and {t.split for t in EVAL} == {"eval"}
    assert all(split_of(t.user_query, t.input_files) == t.split for t in TRAIN + EVAL)
    assert not {t.task_id for t in TRAIN} & {t.task_id for t in EVAL}


def test_categories_rotate_and_can_be_chosen():
    assert [t.category for t in TRAIN[:5]] == list(CATEGORIES)
    only = generate(6, seed=4, categories=["search"])
    assert {t.category for t in only} == {"search"}


@pytest.mark.parametrize("task", TRAIN[:25] + EVAL[:25], ids=lambda t: t.task_id)
def test_solution_scores_one_and_doing_nothing_scores_zero(task, tmp_path):
    with Env(task, root=tmp_path) as env:
        for i, call in enumerate(task.solution):
            result = env.execute(call)
            must_fail = task.category == "error_recovery" and i == 0
            assert result.ok != must_fail, (call, result)
        assert env.reward(task.final_answer) == 1.0
    with Env(task, root=tmp_path) as env:
        assert env.reward("") == 0.0
        assert env.reward("nothing") == 0.0


def test_a_wrong_answer_from_a_distractor_scores_zero(tmp_path):
    task = next(t for t in TRAIN if t.category == "state_tracking")
    last = task.solution[-1].args["path"]
    decoy = next(p for p in task.input_files if p != last and "word" in task.input_files[p])
    wrong = task.input_files[decoy].split()[-1]
    with Env(task, root=tmp_path) as env:
        assert env.reward(wrong) == 0.0


def test_file_graded_tasks_ignore_the_final_answer(tmp_path):
    task = next(t for t in TRAIN if t.category == "multi_step")
    assert "out.txt" in task.user_query
    with Env(task, root=tmp_path) as env:
        assert env.reward(task.final_answer) == 0.0  # answer given, file not written


def test_every_text_is_in_the_vocabulary_and_within_budget(tmp_path):
    assert WORDS and all(isinstance(w, str) for w in WORDS)
    for task in TRAIN + EVAL:
        texts = [task.user_query, task.final_answer or "", *task.input_files,
                 *task.input_files.values()]
        texts += [v for call in task.solution for v in (call.name, *call.args.values())]
        with Env(task, root=tmp_path) as env:
            for call in task.solution:
                result = env.execute(call)
                texts += [result.output, result.error]
        for text in texts:
            assert out_of_vocabulary(text) == [], (task.task_id, text)
        assert len(tokenize(task.user_query)) <= MAX_QUERY_TOKENS
        assert 1 <= len(task.input_files) <= MAX_FILES
        assert all(len(tokenize(t)) <= MAX_FILE_TOKENS for t in task.input_files.values())
        assert len(task.solution) <= 4


def test_bad_arguments_are_refused():
    with pytest.raises(HscaleError, match="split"):
        generate(2, seed=0, split="test")
    with pytest.raises(HscaleError, match="categories"):
        generate(2, seed=0, categories=["chess"])
    with pytest.raises(HscaleError, match="seed"):
        generate(2, seed=-1)


def test_task_ids_match_generated_ids():
    from hscale.harness import generate

    # internal: tests the built-in world's generator
    from hscale.harness._world import task_ids

    assert task_ids(12, seed=3) == [t.task_id for t in generate(12, seed=3)]
    assert task_ids(5, seed=1, split="eval") == [t.task_id for t in generate(5, 1, "eval")]
