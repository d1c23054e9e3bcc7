"""Task loaders refuse what they cannot read safely, in one line naming the file: files that are
not regular (a FIFO would block forever), symbolic links that bring in files from outside the
task folder, JSON nested too deeply, oversized files and solution steps whose path leaves the
workspace; and ``hscale harness render`` prints task and model text as it is."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
import sys
import threading
from pathlib import Path

import pytest

import hscale.harness.tasks as tasks_package

# internal: tests the task-list module's internals
import hscale.harness.tasks._task_lists as task_lists
from hscale.errors import HscaleError
from hscale.harness.tasks import (
    CheckerError,
    load_task_folder,
    load_tasks,
    run_checker,
    task_from_row,
)

# internal: tests the ClawGym loader's size limit
from hscale.harness.tasks._clawgym import MAX_ENTRY_BYTES

# internal: tests the row loader's solution parser
from hscale.harness.tasks._rows import parse_solution
from tests.cli import hscale

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "experiments" / "examples" / "tasks" / "task_0001"
DEEP = "[" * 100_000
ROW = {"task_id": "t1", "user_query": "q", "input_files": {"a.txt": "plum"},
       "checker": {"kind": "answer", "expected": "plum"}}


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """A good ClawGym task folder, ``tmp_path/tasks/task_0001``."""
    target = tmp_path / "tasks" / GOOD.name
    shutil.copytree(GOOD, target)
    return target


def _refused(load, *words: str, seconds: float = 10.0) -> str:
    """Run ``load()`` in a thread (a hang fails the test, not the suite); it must raise an
    HscaleError whose one line holds each of ``words``; return that line."""
    outcome: list[BaseException | object] = []

    def target() -> None:
        try:
            outcome.append(load())
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"the loader hung for {seconds} s"
    exc = outcome[0]
    assert isinstance(exc, HscaleError), repr(exc)
    line = exc.one_line()
    assert "\n" not in exc.message
    for word in words:
        assert word in line, line
    return line


def _entry(folder: Path, **changes: object) -> None:
    path = folder / "data_entry.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


# ------------------------------------------------------------------ files that are not regular
@pytest.mark.parametrize("rel", ["input_files/pipe.txt", "input_files/sub/deeper/pipe.txt"])
def test_a_fifo_among_the_inputs_is_refused_not_opened(folder, rel):
    fifo = folder / rel
    fifo.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(fifo)
    _refused(lambda: load_task_folder(folder), str(fifo), "not a regular file")


def test_a_fifo_data_entry_is_refused(folder):
    (folder / "data_entry.json").unlink()
    os.mkfifo(folder / "data_entry.json")
    _refused(lambda: load_task_folder(folder), "data_entry.json", "not a regular file")
    _refused(lambda: load_tasks(folder.parent), "data_entry.json", "not a regular file")


def test_a_socket_among_the_inputs_is_refused(folder, monkeypatch):
    path = folder / "input_files" / "s"
    monkeypatch.chdir(path.parent)  # bound by a relative name: AF_UNIX paths are short
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("s")
        _refused(lambda: load_task_folder(folder), str(path), "not a regular file")


def test_input_files_that_is_a_file_is_refused(folder):
    shutil.rmtree(folder / "input_files")
    (folder / "input_files").write_text("x")
    _refused(lambda: load_task_folder(folder), "input_files", "not a folder")


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_fifo_task_list_is_refused(tmp_path, suffix):
    fifo = tmp_path / f"tasks{suffix}"
    os.mkfifo(fifo)
    _refused(lambda: load_tasks(fifo), str(fifo), "not a regular file")


# ------------------------------------------------------------------ symbolic links
def _outside(folder: Path) -> Path:
    outside = folder.parent.parent / "elsewhere"
    outside.mkdir()
    (outside / "pig.txt").write_text("secret")
    return outside


def test_input_files_as_a_link_is_refused(folder):
    outside = _outside(folder)
    shutil.rmtree(folder / "input_files")
    (folder / "input_files").symlink_to(outside)
    _refused(lambda: load_task_folder(folder), "input_files", "symbolic link")


@pytest.mark.parametrize("target", ["outside", "inside"])
def test_a_linked_folder_under_input_files_is_refused(folder, target):
    (folder / "input_files" / "real").mkdir()
    dest = _outside(folder) if target == "outside" else folder / "input_files" / "real"
    (folder / "input_files" / "sub").symlink_to(dest)
    _refused(lambda: load_task_folder(folder), "input_files/sub", "symbolic link")


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../etc/passwd", "pig.txt"])
def test_a_linked_input_file_is_refused(folder, target):
    (folder / "input_files" / "link.txt").symlink_to(target)
    _refused(lambda: load_task_folder(folder), "link.txt", "symbolic link")


def test_a_data_entry_linked_outside_is_refused(folder):
    outside = _outside(folder)
    shutil.move(folder / "data_entry.json", outside / "data_entry.json")
    (folder / "data_entry.json").symlink_to(outside / "data_entry.json")
    _refused(lambda: load_task_folder(folder), "data_entry.json", "outside the task folder")
    (folder / "data_entry.json").unlink()
    (folder / "data_entry.json").symlink_to("/etc/passwd")
    _refused(lambda: load_task_folder(folder), "data_entry.json", "outside the task folder")


def test_a_data_entry_linked_inside_still_loads(folder):
    shutil.move(folder / "data_entry.json", folder / "entry.json")
    (folder / "data_entry.json").symlink_to("entry.json")
    assert load_task_folder(folder).task_id == "ex-files-01"


def test_a_dangling_data_entry_link_is_refused(folder):
    (folder / "data_entry.json").unlink()
    (folder / "data_entry.json").symlink_to("nowhere.json")
    _refused(lambda: load_task_folder(folder), "data_entry.json", "symbolic link")


def test_a_reward_script_linked_outside_is_refused(folder):
    (folder / "reward" / "reward.py").unlink()
    (folder / "reward" / "reward.py").symlink_to(sys.executable)
    _refused(lambda: load_task_folder(folder), "reward.py", "outside the task folder")


def test_a_reward_folder_linked_outside_is_refused(folder):
    outside = folder.parent.parent / "rewards"
    shutil.move(folder / "reward", outside)
    (folder / "reward").symlink_to(outside)
    _refused(lambda: load_task_folder(folder), "reward.py", "outside the task folder")


def test_a_task_folder_reached_through_a_link_loads(folder, tmp_path):
    (tmp_path / "alias").symlink_to(folder)
    task = load_task_folder(tmp_path / "alias")
    assert task.input_files == {"hen.txt": (GOOD / "input_files" / "hen.txt").read_text(),
                                "pig.txt": (GOOD / "input_files" / "pig.txt").read_text()}


# ------------------------------------------------------------------ deep nesting and size
def test_a_deeply_nested_data_entry_is_one_line(folder):
    (folder / "data_entry.json").write_text(DEEP)
    _refused(lambda: load_task_folder(folder), "data_entry.json", "nested too deeply")


def test_a_deeply_nested_jsonl_line_names_the_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(ROW) + "\n\n" + DEEP + "\n")
    _refused(lambda: load_tasks(path), f"{path}: line 3", "nested too deeply")


def test_a_deeply_nested_json_field_names_the_row(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({**ROW, "solution": DEEP}) + "\n")
    _refused(lambda: load_tasks(path), f"{path}: line 1", "'solution'", "nested too deeply")
    _refused(lambda: task_from_row({**ROW, "metadata": DEEP}, "row 0"), "row 0: field "
             "'metadata'", "nested too deeply")


def test_a_deeply_nested_parquet_field_names_the_row(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "tasks.parquet"
    flat = {k: json.dumps(v) if isinstance(v, dict) else v for k, v in ROW.items()}
    flat["solution"] = "[]"
    pq.write_table(pa.Table.from_pylist([flat, {**flat, "task_id": "t2", "solution": DEEP}]),
                   path)
    _refused(lambda: load_tasks(path), f"{path}: row 1", "nested too deeply")


def test_the_cli_shows_no_traceback_for_deep_nesting(folder, tmp_path):
    (folder / "data_entry.json").write_text(DEEP)
    jsonl = tmp_path / "deep.jsonl"
    jsonl.write_text(DEEP + "\n")
    for path in (folder.parent, jsonl):
        result = hscale("tasks", "list", path)
        assert result.returncode == 2, result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "nested too deeply" in result.stderr


def test_an_oversized_data_entry_is_refused(folder):
    _entry(folder, metadata={"category": "files", "pad": "x" * MAX_ENTRY_BYTES})
    _refused(lambda: load_task_folder(folder), "data_entry.json", str(MAX_ENTRY_BYTES))


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_an_oversized_task_list_is_refused(tmp_path, monkeypatch, suffix):
    path = tmp_path / f"tasks{suffix}"
    task_lists.write_tasks([task_from_row(ROW, "row")], path)
    monkeypatch.setattr(task_lists, "MAX_TASK_LIST_BYTES", path.stat().st_size - 1)
    _refused(lambda: load_tasks(path), str(path), "allowed for a task list")


def test_jsonl_lines_end_at_newline_only(tmp_path):
    """A raw U+2028 in a JSON string is text (JSON allows it), not a line break."""
    path = tmp_path / "tasks.jsonl"
    row = json.dumps({**ROW, "user_query": "one\u2028two\x0cthree"}, ensure_ascii=False)
    path.write_text(row + "\n", encoding="utf-8")
    assert load_tasks(path)[0].user_query == "one\u2028two\x0cthree"


def test_a_jsonl_list_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(json.dumps(ROW).encode() + b"\n\xff\xfe\n")
    _refused(lambda: load_tasks(path), f"{path}: line 2", "not UTF-8")


# ------------------------------------------------------------------ solution steps
@pytest.mark.parametrize("path, problem", [
    ("/etc/passwd", "path must be relative"),
    ("../../etc/passwd", "path leaves the workspace"),
    ("a/../../x", "path leaves the workspace"),
    ("~/x", "path must be relative"),
    ("", "path is empty"),
])
def test_a_solution_step_whose_path_leaves_the_workspace_is_refused(path, problem):
    steps = [{"name": "read", "args": {"path": "a.txt"}},
             {"name": "write", "args": {"path": path, "text": "x"}}]
    _refused(lambda: parse_solution(steps, "here"), "here: solution step 2 (write)", problem)
    _refused(lambda: task_from_row({**ROW, "solution": steps}, "row 0"),
             "row 0: solution step 2", problem)


def test_a_folder_with_an_escaping_solution_names_the_file_once(folder):
    _entry(folder, solution=[{"name": "read", "args": {"path": "/etc/passwd"}}])
    line = _refused(lambda: load_task_folder(folder), "solution step 1 (read)",
                    "must be relative")
    assert line.count("data_entry.json") == 1, line


@pytest.mark.parametrize("solution", [[{"name": "rm"}], {"name": "read"}, ["x"]])
def test_solution_errors_name_the_file_once(folder, solution):
    _entry(folder, solution=solution)
    line = _refused(lambda: load_task_folder(folder), "solution")
    assert line.count("data_entry.json") == 1, line


def test_task_errors_name_the_file_once(folder):
    _entry(folder, task_id="../evil")
    line = _refused(lambda: load_task_folder(folder), "not a safe name")
    assert line.count("data_entry.json") == 1, line


def test_the_example_tasks_still_load():
    tasks = load_tasks(GOOD.parent)
    assert tasks and all(t.solution for t in tasks)


# ------------------------------------------------------------------ checker messages
@pytest.mark.parametrize("source, ends", [
    ("import sys\nsys.exit(3)\n", "reward script exited with 3"),
    ("import sys\nsys.stderr.write('bad thing\\n')\nsys.exit(3)\n",
     "reward script exited with 3: bad thing"),
])
def test_a_failing_script_message_has_no_dangling_colon(tmp_path, source, ends):
    script = tmp_path / "reward.py"
    script.write_text(source)
    with pytest.raises(CheckerError) as info:
        run_checker({"kind": "script", "path": str(script)}, tmp_path, "")
    assert info.value.message.endswith(ends), info.value.message


def test_a_checker_raising_without_a_message_has_no_dangling_colon(tmp_path):
    def checker(workspace, answer):
        raise RuntimeError

    with pytest.raises(CheckerError) as info:
        run_checker(checker, tmp_path, "")
    assert info.value.message.endswith("raised RuntimeError"), info.value.message


# ------------------------------------------------------------------ the render command
def test_render_prints_task_and_model_text_literally(monkeypatch, capsys):
    from hscale.cli import harness as cli_harness
    from hscale.harness import BuiltinWorld

    text = "[cut : output too long] [/x] [bold]b[/bold] :smile: [red]"
    original = BuiltinWorld.tasks

    def tasks(self, n, seed, split="train"):
        first, *rest = original(self, n, seed, split)
        return [dataclasses.replace(first, user_query=f"{first.user_query} {text}"), *rest]

    monkeypatch.setattr(BuiltinWorld, "tasks", tasks)
    cli_harness.render_cmd("S0-T0-O0-C0-W0", task=None, seed=0)
    out = capsys.readouterr().out
    assert text in out
    assert "[user]" in out and "[assistant]" in out


# ------------------------------------------------------------------ the package docstring
def test_the_package_docstring_names_every_module():
    modules = sorted(p.stem.lstrip("_") for p in Path(tasks_package.__file__).parent.glob("*.py")
                     if p.stem != "__init__")
    doc = tasks_package.__doc__
    missing = [m for m in modules if f"``{m}``" not in doc]
    assert not missing, missing
