"""The example task set in experiments/examples/tasks (ClawGym folders written by
experiments/examples/make_tasks.py): its shape, its vocabulary, its reward scripts, and that it
is exactly what the generator writes."""

from __future__ import annotations

import importlib.util
import runpy
import sys
from collections import Counter
from pathlib import Path

import pytest

from hscale.harness import DoNothing, Harness, Oracle, run_episode

# internal: tests against the canonical tool tables
from hscale.harness._types import CANONICAL_TOOLS
from hscale.harness.tasks import load_tasks
from tests.harness.helpers import out_of_vocabulary

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "experiments" / "examples"
TASKS = EXAMPLES / "tasks"
CATEGORIES = {"files", "notes", "arithmetic"}
LABELS = ("S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1", "S2-T2-O2-C2-W2")


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(TASKS)


def _generator():
    spec = importlib.util.spec_from_file_location("make_tasks", EXAMPLES / "make_tasks.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it loads
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_thirty_tasks_split_twenty_ten_with_every_category_in_each_split(tasks):
    assert len(tasks) == 30
    assert len({t.task_id for t in tasks}) == 30
    assert Counter(t.split for t in tasks) == {"train": 20, "eval": 10}
    for split in ("train", "eval"):
        assert {t.category for t in tasks if t.split == split} == CATEGORIES, split
    for task in tasks:
        assert task.task_id.startswith(f"ex-{task.category}-"), task.task_id
        assert task.grading_type == "code"
        assert task.checker["kind"] == "script"
        assert Path(task.checker["path"]).name == "reward.py"
        assert task.solution and all(c.name in CANONICAL_TOOLS for c in task.solution)
        assert task.final_answer


def test_every_text_is_in_the_vocabulary(tasks):
    for task in tasks:
        texts = [task.user_query, task.final_answer, *task.input_files,
                 *task.input_files.values()]
        texts += [v for call in task.solution for v in call.args.values()]
        for text in texts:
            assert not out_of_vocabulary(text), (task.task_id, text, out_of_vocabulary(text))


def test_graded_on_a_file_for_some_tasks_and_on_the_final_answer_for_others(tasks):
    graded = Counter(t.metadata["graded_on"] for t in tasks)
    assert graded["final answer"] and sum(graded.values()) - graded["final answer"] >= 10


@pytest.mark.parametrize("label", LABELS)
def test_oracle_solves_every_task(tasks, label):
    harness = Harness.from_name(label)
    for task in tasks:
        episode = run_episode(Oracle(task, harness), harness, task)
        assert episode.reward == 1.0, (label, task.task_id, episode.final_answer, episode.error)
        assert episode.termination == "answer" and not episode.parse_errors


def test_doing_nothing_scores_zero(tasks):
    harness = Harness.from_name("S0-T0-O0-C0-W0")
    for task in tasks:
        assert run_episode(DoNothing(), harness, task).reward == 0, task.task_id


def _script_reward(script: str, workspace: Path, answer: str, monkeypatch, capsys,
                   via_file: bool, tmp_path: Path) -> float:
    """Run a reward.py in this process (the episodes above run them as subprocesses)."""
    with monkeypatch.context() as m:
        m.delenv("FINAL_ANSWER_FILE", raising=False)
        m.setenv("FINAL_ANSWER", answer)
        if via_file:  # the file wins over the variable
            (tmp_path / "answer").write_text(answer, encoding="utf-8")
            m.setenv("FINAL_ANSWER_FILE", str(tmp_path / "answer"))
            m.setenv("FINAL_ANSWER", "wrong")
            m.setattr(sys, "argv", [script, str(workspace)])
        else:  # the workspace from WORKSPACE
            m.setenv("WORKSPACE", str(workspace))
            m.setattr(sys, "argv", [script])
        capsys.readouterr()
        runpy.run_path(script, run_name="__main__")
        return float(capsys.readouterr().out.strip().splitlines()[-1])


def test_reward_scripts_normalise_like_the_builtin_checker(tasks, tmp_path, monkeypatch,
                                                           capsys):
    """Case, spacing and a trailing full stop do not matter; other words do; only the graded
    file or the final answer counts."""
    for task in tasks:
        expected, graded = task.final_answer, task.metadata["graded_on"]
        variants = {f"  {expected.upper()} .": 1.0, f"{expected} plum": 0.0, "plum": 0.0}
        for n, (text, reward) in enumerate(variants.items()):
            workspace = tmp_path / f"{task.task_id}-{n}"
            workspace.mkdir()
            if graded == "final answer":
                answer = text
            else:  # a right final answer does not rescue a wrong file
                (workspace / graded).parent.mkdir(parents=True, exist_ok=True)
                (workspace / graded).write_text(text, encoding="utf-8")
                answer = "" if reward else expected
            for via_file in (True, False):
                got = _script_reward(task.checker["path"], workspace, answer, monkeypatch,
                                     capsys, via_file, tmp_path)
                assert got == reward, (task.task_id, text, via_file)


def test_generator_writes_exactly_the_committed_folder(tmp_path):
    out = tmp_path / "tasks"
    assert _generator().main(["--out", str(out)]) == 0
    assert _tree(out) == _tree(TASKS)
