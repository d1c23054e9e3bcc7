"""Task data: validation, checkers, ClawGym folders and JSONL/parquet task lists."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hscale.errors import HscaleError
from hscale.harness import Env, ToolCall, generate

# internal: tests the built-in world's generator
from hscale.harness._world import CATEGORIES
from hscale.harness.tasks import (
    Task,
    load_task_folder,
    load_tasks,
    run_checker,
    score_answer,
    task_to_row,
    write_task_folder,
    write_tasks,
)

ANSWER = {"kind": "answer", "expected": "plum", "target": "final"}


def _task(**kw) -> Task:
    base = dict(task_id="t1", user_query="what ?", input_files={"a.txt": "the word is plum"},
                checker=ANSWER)
    return Task(**{**base, **kw})


def _solve(task: Task, root: Path) -> tuple[float, float]:
    """Reward after the task's solution, and reward of a do-nothing episode."""
    with Env(task, root=root) as env:
        for call in task.solution:
            env.execute(call)
        solved = env.reward(task.final_answer)
    with Env(task, root=root) as env:
        idle = env.reward("")
    return solved, idle


@pytest.mark.parametrize("bad, match", [
    (dict(task_id="../x"), "safe name"),
    (dict(user_query="  "), "user_query"),
    (dict(split="test"), "split"),
    (dict(input_files={"../a.txt": "x"}), "leaves the workspace"),
    (dict(input_files={"/etc/a": "x"}), "relative"),
    (dict(checker={"kind": "llm"}), "unknown checker kind"),
    (dict(checker={"kind": "answer", "expected": ""}), "expected"),
    (dict(checker={"kind": "answer", "expected": "x", "target": "both", "file": "../o"}),
     "answer file"),
    (dict(checker=3), "spec dict or a callable"),
])
def test_task_validation(bad, match):
    with pytest.raises(HscaleError, match=match):
        _task(**bad)


def test_answer_scoring_normalises_case_spacing_and_full_stop(tmp_path):
    spec = {"kind": "answer", "expected": "dog.txt", "target": "final"}
    assert score_answer(spec, str(tmp_path), " Dog . TXT. ") == 1.0
    assert score_answer(spec, str(tmp_path), "dog.txt is it") == 0.0
    both = {"kind": "answer", "expected": "19", "target": "both", "file": "out.txt"}
    (tmp_path / "out.txt").write_text("19\n")
    assert score_answer(both, str(tmp_path), "19") == 1.0
    assert score_answer(both, str(tmp_path), "20") == 0.5


def test_callable_checkers_are_limited_and_validated(tmp_path):
    assert run_checker(lambda ws, ans: 0.25, tmp_path, "x") == 0.25
    with pytest.raises(HscaleError, match="outside"):
        run_checker(lambda ws, ans: 2.0, tmp_path, "x")
    start = time.monotonic()
    with pytest.raises(HscaleError, match="longer than"):
        run_checker(lambda ws, ans: time.sleep(3), tmp_path, "x", timeout=0.2)
    assert time.monotonic() - start < 2


def test_clawgym_round_trip_every_category(tmp_path):
    tasks = generate(len(CATEGORIES), seed=7, split="eval")
    for task in tasks:
        folder = write_task_folder(task, tmp_path / "bench")
        assert folder.name == task.task_id
        reward_py = (folder / "reward" / "reward.py").read_text()
        assert "harness" not in reward_py and "design" not in reward_py
        loaded = load_task_folder(folder)
        assert (loaded.user_query, loaded.input_files, loaded.category, loaded.split) == \
            (task.user_query, task.input_files, task.category, "eval")
        assert loaded.solution == task.solution and loaded.checker["kind"] == "script"
        assert _solve(loaded, tmp_path / "ws") == (1.0, 0.0)
    assert [t.task_id for t in load_tasks(tmp_path / "bench")] == [t.task_id for t in tasks]


def test_exported_reward_script_runs_standalone(tmp_path):
    task = next(t for t in generate(5, seed=3) if t.category == "multi_step")
    folder = write_task_folder(task, tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "out.txt").write_text(task.final_answer)
    clean_env = {"PATH": os.environ.get("PATH", ""), "FINAL_ANSWER": ""}
    # -I -S: no site-packages, no cwd, no PYTHONPATH; hscale cannot be imported.
    out = subprocess.run([sys.executable, "-I", "-S", str(folder / "reward" / "reward.py"),
                          str(work)], capture_output=True, text=True, env=clean_env,
                         cwd=tmp_path, check=True)
    assert out.stdout.strip().splitlines()[-1] == "1.0"


def _clawgym_folder(root: Path, script: str, name: str = "reward.sh") -> Path:
    folder = root / "task_0001"
    (folder / "input_files" / "docs").mkdir(parents=True)
    (folder / "reward").mkdir()
    (folder / "input_files" / "docs" / "note.txt").write_text("the word is plum")
    (folder / "reward" / name).write_text(script)
    entry = {"task_id": "task_0001", "user_query": "copy the word to out.txt .",
             "input_mount_dir": "/workspace",
             "metadata": {"category": "files", "grading_type": "hybrid", "level": 2}}
    (folder / "data_entry.json").write_text(json.dumps(entry))
    return folder


def test_hand_written_clawgym_folder_with_reward_sh(tmp_path):
    # an absolute input_mount_dir: run as ClawGym's runner runs it, no argument, from /, the
    # workspace at that path (WORKSPACE), reward/ copied into it
    script = ('[ $# = 0 ] && [ "$PWD" = / ] || { echo mismatch; exit 3; }\n'
              '[ "$WORKSPACE" = /workspace ] || [ -d "$WORKSPACE/reward" ] || exit 4\n'
              '[ -f "$WORKSPACE/reward/reward.sh" ] || exit 5\n'
              '[ -f "$OPENCLAW_REWARD_PAYLOAD" ] || exit 6\n'
              'echo checking\n'
              'if grep -q plum "$WORKSPACE/out.txt" 2>/dev/null; then echo 1.0\n'
              'else echo 0.0; fi\n')
    task = load_task_folder(_clawgym_folder(tmp_path, script))
    assert (task.category, task.grading_type, task.split) == ("files", "hybrid", "eval")
    assert task.metadata["level"] == 2 and task.metadata["input_mount_dir"] == "/workspace"
    with Env(task, root=tmp_path / "ws") as env:
        listing = env.execute(ToolCall("list")).output
        assert listing == "docs/note.txt"  # the reward folder never reaches the workspace
        assert env.reward("") == 0.0
        env.execute(ToolCall("write", {"path": "out.txt", "text": "plum"}))
        assert env.reward("") == 1.0


@pytest.mark.parametrize("script, match", [
    ("print('lots')\n", "not a number"),
    ("print(1.5)\n", "outside"),
    ("import sys\nsys.exit(4)\n", "exited with 4"),
    ("", "printed nothing"),
    ("import time\ntime.sleep(30)\n", "longer than"),
])
def test_broken_reward_scripts_name_the_script(tmp_path, script, match):
    task = load_task_folder(_clawgym_folder(tmp_path, script, name="reward.py"))
    with Env(task, root=tmp_path / "ws") as env:
        env.limits = type(env.limits)(checker_seconds=0.5)
        with pytest.raises(HscaleError, match=match) as info:
            env.reward("")
    assert "reward.py" in info.value.message


def _break(folder: Path, how: str) -> str:
    """Damage a task folder; return the file name the error must mention."""
    entry = folder / "data_entry.json"
    if how == "no entry":
        entry.unlink()
        return "data_entry.json"
    if how == "bad json":
        entry.write_text("{not json")
        return "data_entry.json"
    if how == "no query":
        data = json.loads(entry.read_text())
        del data["user_query"]
        entry.write_text(json.dumps(data))
        return "data_entry.json"
    if how == "bad metadata":
        entry.write_text(json.dumps({**json.loads(entry.read_text()), "metadata": [1]}))
        return "data_entry.json"
    if how == "bad task id":
        entry.write_text(json.dumps({**json.loads(entry.read_text()), "task_id": "a/../b"}))
        return "data_entry.json"
    if how == "no reward":
        (folder / "reward" / "reward.sh").unlink()
        return "reward.sh"
    if how == "symlink input":
        (folder / "input_files" / "link.txt").symlink_to("/etc/hostname")
        return "link.txt"
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["no entry", "bad json", "no query", "bad metadata",
                                 "bad task id", "no reward", "symlink input"])
def test_bad_task_folders_name_the_file(tmp_path, how):
    folder = _clawgym_folder(tmp_path, "echo 1.0\n")
    name = _break(folder, how)
    with pytest.raises(HscaleError) as info:
        load_task_folder(folder)
    assert name in info.value.message and info.value.hint


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_task_lists_round_trip(tmp_path, suffix):
    tasks = generate(10, seed=2)
    path = write_tasks(tasks, tmp_path / f"tasks{suffix}")
    loaded = load_tasks(path)
    assert [task_to_row(t) for t in loaded] == [task_to_row(t) for t in tasks]
    assert _solve(loaded[3], tmp_path) == (1.0, 0.0)


def test_jsonl_script_checker_path_is_relative_to_the_list(tmp_path):
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "r.py").write_text("print(1.0)\n")
    row = {"task_id": "x", "user_query": "go", "input_files": {},
           "checker": {"kind": "script", "path": "checks/r.py"}}
    (tmp_path / "t.jsonl").write_text(json.dumps(row) + "\n")
    (task,) = load_tasks(tmp_path / "t.jsonl")
    assert run_checker(task.checker, tmp_path, "") == 1.0


@pytest.mark.parametrize("lines, match", [
    (['{"task_id": "a", "user_query": "q", "checker": {"kind": "answer", "expected": "1"}}',
      "{oops"], "line 2: not valid JSON"),
    (['{"task_id": "a", "user_query": "q"}'], "line 1: field 'checker' is missing"),
    (['{"task_id": "a", "user_query": "q", "checker": {"kind": "answer", "expected": "1"},'
      ' "input_files": {"../x": "y"}}'], "line 1: .*leaves the workspace"),
    (['{"task_id": "a", "user_query": "q", "checker": {"kind": "answer", "expected": "1"}}'] * 2,
     "appears twice"),
])
def test_bad_jsonl_names_file_and_line(tmp_path, lines, match):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(HscaleError, match=match) as info:
        load_tasks(path)
    assert "bad.jsonl" in info.value.message


def test_load_tasks_rejects_unknown_inputs(tmp_path):
    with pytest.raises(HscaleError, match="no task folders"):
        load_tasks(tmp_path)
    with pytest.raises(HscaleError, match="no such file"):
        load_tasks(tmp_path / "missing.jsonl")
    (tmp_path / "t.csv").write_text("a,b\n")
    with pytest.raises(HscaleError, match="format"):
        load_tasks(tmp_path / "t.csv")


def test_callable_checkers_cannot_be_exported(tmp_path):
    task = _task(checker=lambda ws, ans: 1.0)
    with pytest.raises(HscaleError, match="callable"):
        write_task_folder(task, tmp_path)
    with pytest.raises(HscaleError, match="callable"):
        task_to_row(task)


@pytest.mark.parametrize("checker, expected, words", [
    ({"kind": "answer", "expected": "plum"}, "plum", "the final answer must be 'plum'"),
    ({"kind": "answer", "expected": "7", "target": "both", "file": "n.txt"}, "7",
     "the final answer and the file n.txt must be '7'"),
    ({"kind": "script", "path": "/any/reward/grade.py"}, None, "the reward script grade.py"),
    ({"kind": "rubric", "criteria": [{"text": "a", "weight": 1}, {"text": "b", "weight": 2}]},
     None, "the LLM judge, on a rubric of 2 criteria"),
    ({"kind": "weighted", "parts": [
        {"weight": 0.4, "checker": {"kind": "script", "path": "/r/check.sh"}},
        {"weight": 0.6, "checker": {"kind": "answer", "expected": "x"}}]}, None,
     "a weighted mean of 0.4 x the reward script check.sh; 0.6 x the final answer must be "
     "'x'"),
    ({"kind": "nonsense"}, None, "a checker of an unknown kind"),
])
def test_checker_words_say_what_a_reward_of_0_means(checker, expected, words):
    from hscale.harness.tasks import checker_words

    assert checker_words(checker) == (expected, words)
    assert checker_words(lambda ws, ans: 1.0)[1] == "checker <lambda>"


def test_an_episode_expects_the_tasks_recorded_answer_where_the_checker_names_none():
    """Both drivers record what ``scoring`` says: the checker's answer, else the task's."""
    from types import SimpleNamespace

    from hscale.harness.tasks import scoring

    script = {"kind": "script", "path": "/r/grade.py"}
    assert scoring(SimpleNamespace(checker=script, final_answer="42")) == \
        ("42", "the reward script grade.py")
    answer = {"kind": "answer", "expected": "plum"}
    assert scoring(SimpleNamespace(checker=answer, final_answer="pear")) == \
        ("plum", "the final answer must be 'plum'")
