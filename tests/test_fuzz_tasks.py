"""Broken ClawGym task folders, one mutation of a good one each: ``hscale tasks check`` names
every one in one line and exits 2, without a traceback and in bounded time; at run time a broken
reward script costs its episode reward 0 with a ``checker:`` error, never the run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hscale.cli import main
from hscale.cli.tasks_check import check_tasks
from hscale.harness import Env, Limits, Oracle, harness_named, run_episode
from hscale.harness.tasks import MAX_INPUT_FILE_BYTES, load_task_folder

ROOT = Path(__file__).resolve().parents[1]
GOOD = ROOT / "experiments" / "examples" / "tasks" / "task_0001"
NAME = GOOD.name
TIMEOUT = 1  # --timeout: a checker's wall-clock limit per task
BOUND = 8.0  # seconds a whole check of one folder may take

Mutation = Callable[[Path], None]


def entry(folder: Path, **changes: object) -> None:
    """Rewrite data_entry.json with ``changes`` (a value of ``...`` deletes the key)."""
    path = folder / "data_entry.json"
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is ...:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def raw(text: str | bytes) -> Mutation:
    def mutate(folder: Path) -> None:
        path = folder / "data_entry.json"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return mutate


def fields(**changes: object) -> Mutation:
    return lambda folder: entry(folder, **changes)


def symlink(rel: str, target: str, replace: bool = False) -> Mutation:
    def mutate(folder: Path) -> None:
        link = folder / rel
        if replace:
            shutil.rmtree(link) if link.is_dir() else link.unlink()
        link.symlink_to(target)
    return mutate


def script(source: str, name: str = "reward.py", plan: bool = True) -> Mutation:
    """Replace the reward script; without ``plan`` the task loses its oracle plan."""
    def mutate(folder: Path) -> None:
        (folder / "reward" / "reward.py").unlink()
        (folder / "reward" / name).write_text(source)
        if not plan:
            entry(folder, solution=..., final_answer=...)
    return mutate


def sparse(count: int, size: int) -> Mutation:
    def mutate(folder: Path) -> None:
        for i in range(count):
            with open(folder / "input_files" / f"big{i}.txt", "wb") as handle:
                handle.truncate(size)
    return mutate


def _folder_entry(folder: Path) -> None:
    (folder / "data_entry.json").unlink()
    (folder / "data_entry.json").mkdir()


def _entry_outside(folder: Path) -> None:
    outside = folder.parent.parent / "secret.json"
    shutil.copy(folder / "data_entry.json", outside)
    symlink("data_entry.json", "../../secret.json", replace=True)(folder)


def _input_dir_outside(folder: Path) -> None:
    outside = folder.parent.parent / "elsewhere"
    outside.mkdir()
    (outside / "pig.txt").write_text("cake")
    symlink("input_files", str(outside), replace=True)(folder)


def _reward_dir_outside(folder: Path) -> None:
    outside = folder.parent.parent / "rewards"
    shutil.copytree(folder / "reward", outside)
    symlink("reward", str(outside), replace=True)(folder)


def _reward_is_folder(folder: Path) -> None:
    (folder / "reward" / "reward.py").unlink()
    (folder / "reward" / "reward.py").mkdir()


def _long_path(folder: Path) -> None:
    deep = folder / "input_files" / ("a" * 100) / ("b" * 100)
    deep.mkdir(parents=True)
    (deep / "c.txt").write_text("x")


CHILD = "import os, time\nif os.fork() == 0:\n    time.sleep(60)\n    print(1.0)\n"
HANGS = {"hang", "busy-loop", "no-plan-hang", "background-waits"}
SCRIPTS: dict[str, Mutation] = {  # reward scripts that raise CheckerError
    "hang": script("import time\ntime.sleep(60)\nprint(1.0)\n"),
    "busy-loop": script("while True:\n    pass\n"),
    "garbage": script("print('hello')\n"),
    "prints-7": script("print(7)\n"),
    "negative": script("print(-1)\n"),
    "nan": script("print('nan')\n"),
    "inf": script("print('inf')\n"),
    "two-numbers": script("print('1.0 0.0')\n"),
    "binary-garbage": script("import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\n')\n"),
    "exit-nonzero": script("import sys\nprint(1.0)\nsys.exit(3)\n"),
    "raises": script("raise RuntimeError('boom')\n"),
    "syntax-error": script("def (:\n"),
    "kills-itself": script("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n"),
    "prints-nothing": script("pass\n"),
    "prints-blank": script("print('\\n\\n   ')\n"),
    "stderr-only": script("import sys\nprint(1.0, file=sys.stderr)\n"),
    "background-child": script(CHILD),
    "background-waits": script(CHILD + "os.wait()\n"),
    "writes-a-lot": script("import sys\nfor _ in range(40):\n    sys.stdout.write('x' * (1 << 20))"
                           "\nprint(1.0)\n"),
    "writes-big-file": script("import os\nwith open(os.environ['HOME'] + '/f', 'wb') as f:\n"
                              "    f.write(b'x' * (20 << 20))\nprint(1.0)\n"),
    "memory-hog": script("hog = bytearray(4 << 30)\nprint(1.0)\n"),
    "sh-exit-1": script("echo 1.0\nexit 1\n", name="reward.sh"),
    "sh-syntax": script("if then fi (\n", name="reward.sh"),
    "sh-garbage": script("echo reward: full\n", name="reward.sh"),
    "no-plan-hang": script("import time\ntime.sleep(60)\n", plan=False),
    "no-plan-garbage": script("print('ok')\n", plan=False),
    "no-plan-crash": script("import sys\nsys.exit(2)\n", plan=False),
}
MUTATIONS: dict[str, Mutation] = {
    # data_entry.json
    "no-data-entry": lambda f: (f / "data_entry.json").unlink(),
    "empty-data-entry": raw(""),
    "broken-json": raw('{"task_id": "ex-files-01",'),
    "json-array": raw('[{"task_id": "ex-files-01", "user_query": "q"}]'),
    "json-string": raw('"a task"'),
    "json-null": raw("null"),
    "not-utf8": raw(b"\xff\xfe{}"),
    "deep-nesting": raw("[" * 100_000),
    "entry-is-folder": _folder_entry,
    "entry-fifo": lambda f: ((f / "data_entry.json").unlink(), os.mkfifo(f / "data_entry.json")),
    "entry-symlink-absolute": symlink("data_entry.json", "/etc/passwd", replace=True),
    "entry-symlink-up": _entry_outside,
    "entry-huge": fields(metadata={"category": "files", "pad": "x" * (2 << 20)}),
    "no-user-query": fields(user_query=...),
    "empty-user-query": fields(user_query=""),
    "blank-user-query": fields(user_query="  \n "),
    "user-query-list": fields(user_query=["read", "pig.txt"]),
    "no-task-id": fields(task_id=...),
    "unsafe-task-id": fields(task_id="../evil"),
    "task-id-with-space": fields(task_id="ex files"),
    "metadata-list": fields(metadata=["files"]),
    "metadata-text": fields(metadata="files"),
    "bad-split": fields(split="test"),
    "solution-not-list": fields(solution={"name": "read", "args": {"path": "pig.txt"}}),
    "solution-unknown-tool": fields(solution=[{"name": "rm", "args": {"path": "pig.txt"}}]),
    "solution-args-text": fields(solution=[{"name": "read", "args": "pig.txt"}]),
    "solution-path-up": fields(solution=[{"name": "read", "args": {"path": "../../etc/passwd"}},
                                         {"name": "write", "args": {"path": "out.txt",
                                                                    "text": "cake"}}]),
    "solution-path-absolute": fields(solution=[{"name": "write", "args": {"path": "/tmp/out.txt",
                                                                          "text": "cake"}}]),
    "wrong-oracle-answer": fields(solution=[{"name": "write", "args": {"path": "out.txt",
                                                                       "text": "pie"}}]),
    "plan-writes-nothing": fields(solution=[{"name": "read", "args": {"path": "pig.txt"}}]),
    # input_files
    "input-symlink-absolute": symlink("input_files/link.txt", "/etc/passwd"),
    "input-symlink-up": symlink("input_files/link.txt", "../../../../../etc/passwd"),
    "input-symlink-inside": symlink("input_files/link.txt", "pig.txt"),
    "input-folder-symlink": _input_dir_outside,
    "input-subfolder-symlink": symlink("input_files/sub", "/usr"),
    "input-huge": sparse(1, MAX_INPUT_FILE_BYTES + 1),
    "input-total-huge": sparse(17, MAX_INPUT_FILE_BYTES),
    "input-fifo": lambda f: os.mkfifo(f / "input_files" / "pipe.txt"),
    "input-long-path": _long_path,
    # reward/
    "no-reward-folder": lambda f: shutil.rmtree(f / "reward"),
    "reward-wrong-name": lambda f: (f / "reward" / "reward.py").rename(f / "reward" / "grade.py"),
    "reward-is-folder": _reward_is_folder,
    "reward-symlink-out": symlink("reward/reward.py", sys.executable, replace=True),
    "reward-folder-symlink": _reward_dir_outside,
    "always-zero": script("print(0.0)\n"),
    "half": script("print(0.5)\n"),
    **SCRIPTS,
}


def _make(tmp_path: Path, mutation: Mutation, name: str = NAME, task_id: str | None = None
          ) -> Path:
    """``tmp_path/tasks/name``: the good folder (its id changed to ``task_id``), mutated."""
    tasks = tmp_path / "tasks"
    shutil.copytree(GOOD, tasks / name)
    if task_id is not None:
        entry(tasks / name, task_id=task_id)
    mutation(tasks / name)
    return tasks


def test_there_are_enough_mutations():
    assert len(MUTATIONS) >= 50


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_check_names_the_broken_folder_once(case, tmp_path, capsys):
    tasks = _make(tmp_path, MUTATIONS[case])
    start = time.monotonic()
    with pytest.raises(SystemExit) as exit_:
        main(["tasks", "check", str(tasks), "--timeout", str(TIMEOUT)])
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    lines = out.strip().splitlines()
    assert exit_.value.code == 2, out + err
    assert "Traceback" not in out + err, err
    assert lines[-1] == "1 problem in 1 task", out
    problems = [line for line in lines[:-1] if not line.startswith("note:")]
    assert len(problems) == 1 and problems[0].startswith((f"{NAME}/", f"{NAME}:")), out
    assert elapsed < BOUND, f"{case}: {elapsed:.1f} s"


def test_the_good_folder_passes(tmp_path):
    report = check_tasks(_make(tmp_path, lambda folder: None), timeout=TIMEOUT)
    assert report.ok and report.tasks == 1, report.problems


def test_the_cli_in_a_subprocess_names_exactly_the_broken_ones(tmp_path):
    """A sample through the real command: hanging, garbage, escaping and unreadable folders
    among good ones, each named once, the good ones never."""
    sample = ("hang", "garbage", "input-symlink-up", "broken-json", "background-child")
    for i, case in enumerate(sample):
        tasks = _make(tmp_path, MUTATIONS[case], f"task_{i:04d}", f"t{i}")
    for i in range(len(sample), len(sample) + 2):
        _make(tmp_path, lambda folder: None, f"task_{i:04d}", f"t{i}")
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "hscale.cli", "tasks", "check", str(tasks),
                             "--timeout", str(TIMEOUT)], capture_output=True, text=True,
                            timeout=60)
    assert time.monotonic() - start < 30
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == f"{len(sample)} problems in {len(sample) + 2} tasks", result.stdout
    assert sorted(line.split("/")[0].split(":")[0] for line in lines[:-1]) == \
        [f"task_{i:04d}" for i in range(len(sample))], result.stdout


RUNTIME = sorted(set(SCRIPTS) - HANGS)


@pytest.mark.parametrize("case", RUNTIME)
def test_a_broken_reward_script_scores_zero_in_an_episode(case, tmp_path):
    task = load_task_folder(_make(tmp_path, SCRIPTS[case]) / NAME)
    harness = harness_named("S0-T0-O0-C0-W0")
    episode = run_episode(Oracle(task, harness), harness, task)
    assert episode.reward == 0.0
    assert episode.error.startswith("checker:"), episode.error


@pytest.mark.parametrize("case", sorted(HANGS))
def test_a_hanging_reward_script_scores_zero_within_its_limit(case, tmp_path):
    task = load_task_folder(_make(tmp_path, SCRIPTS[case]) / NAME)
    start = time.monotonic()
    with Env(task, limits=Limits(checker_seconds=TIMEOUT)) as env:
        assert env.score("cake") == 0.0
        assert env.checker_error == f"checker: timeout after {TIMEOUT} s", env.checker_error
    assert time.monotonic() - start < TIMEOUT + 3
