"""The sandbox: tools act only inside the workspace, under time and size limits."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from hscale.errors import HscaleError
from hscale.harness import Env, Limits, ToolCall

# internal: tests the env's truncation marker
from hscale.harness._env import TRUNCATION_MARKER
from hscale.harness.tasks import Task
from tests.harness.helpers import out_of_vocabulary


def _task(files: dict[str, str] | None = None, checker=None) -> Task:
    return Task(task_id="t", user_query="go", input_files=files or {"cat.txt": "the word is plum"},
                checker=checker or {"kind": "answer", "expected": "plum", "target": "file"})


def _call(env: Env, name: str, **args: str):
    return env.execute(ToolCall(name, args))


@pytest.fixture
def env(tmp_path):
    with Env(_task({"cat.txt": "the word is plum", "old/dog.txt": "we keep tea"}),
             root=tmp_path / "root") as e:
        yield e


def test_workspace_holds_the_inputs_and_is_removed(tmp_path):
    env = Env(_task(), root=tmp_path / "root")
    assert env.workspace.parent == (tmp_path / "root").resolve()
    assert (env.workspace / "cat.txt").read_text() == "the word is plum"
    env.close()
    assert not env.workspace.exists()
    with pytest.raises(RuntimeError):
        _call(env, "list")
    with Env(_task()) as other:  # default root: the system temporary folder
        assert other.workspace.is_dir()
    assert not other.workspace.exists()


def test_the_canonical_tools(env):
    assert _call(env, "list").output == "cat.txt\nold/dog.txt"
    assert _call(env, "read", path="old/dog.txt").output == "we keep tea"
    assert _call(env, "write", path="new/out.txt", text="plum").output == "wrote new/out.txt"
    assert (env.workspace / "new" / "out.txt").read_text() == "plum"
    assert _call(env, "search", word="TEA").output == "old/dog.txt: we keep tea"
    assert _call(env, "search", word="te").output == "no file has te"  # whole words only
    assert _call(env, "calc", expr="2 + 3 * 4").output == "14"
    assert _call(env, "calc", expr="7 / 2").output == "3"
    assert _call(env, "calc", expr="-(7 % 4) - 1").output == "-4"
    assert env.reward("") == 0.0
    _call(env, "write", path="out.txt", text="plum")
    assert env.reward("") == 1.0


@pytest.mark.parametrize("name, args, message", [
    ("delete", {"path": "cat.txt"}, "unknown tool delete ; tools are list , read"),
    ("read", {}, "read expects args : path"),
    ("read", {"path": "cat.txt", "mode": "x"}, "read expects args : path"),
    ("write", {"path": "a.txt"}, "write expects args : path , text"),
    ("list", {"path": "."}, "list expects no args"),
    ("read", {"path": 3}, "arg path must be text"),
    ("read", {"path": "nope.txt"}, "no file nope.txt"),
    ("read", {"path": "old"}, "old is a folder"),
    ("write", {"path": "old", "text": "x"}, "old is a folder"),
    ("read", {"path": ""}, "path is empty"),
    ("search", {"word": " "}, "word is empty"),
])
def test_bad_calls_give_error_results(env, name, args, message):
    result = env.execute(ToolCall(name, args))
    assert not result.ok and result.error.startswith(message)


@pytest.mark.parametrize("expr, message", [
    ("1 / 0", "division by zero"),
    ("5 % 0", "division by zero"),
    ("2 ** 10", "bad expr"),
    ("__import__('os').system('true')", "bad expr"),
    ("open('x')", "bad expr"),
    ("x + 1", "bad expr"),
    ("1.5 + 1", "bad expr"),
    ("True + 1", "bad expr"),
    ("'a' * 9", "bad expr"),
    ("(1 +", "bad expr"),
    ("999999 * 999999", "number too big"),
    ("1" * 200, "expr is too long"),
    ("+".join(["1"] * 40), "expr is too long"),
])
def test_calc_is_a_small_safe_integer_evaluator(env, expr, message):
    result = _call(env, "calc", expr=expr)
    assert not result.ok and result.error.startswith(message)


@pytest.mark.parametrize("path, message", [
    ("../x.txt", "path leaves the workspace"),
    ("old/../../x.txt", "path leaves the workspace"),
    ("/etc/passwd", "path must be relative"),
    ("~/x.txt", "path must be relative"),
    ("a\x00b", "bad path"),
    ("a" * 201, "path is too long"),
])
def test_lexical_escapes_are_refused(env, path, message):
    for result in (_call(env, "read", path=path), _call(env, "write", path=path, text="x")):
        assert not result.ok and result.error == message


def test_symlinks_pointing_out_are_refused(env, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (env.workspace / "link.txt").symlink_to(outside / "secret.txt")
    (env.workspace / "door").symlink_to(outside)
    for call in (ToolCall("read", {"path": "link.txt"}),
                 ToolCall("read", {"path": "door/secret.txt"}),
                 ToolCall("write", {"path": "link.txt", "text": "x"}),
                 ToolCall("write", {"path": "door/new.txt", "text": "x"})):
        result = env.execute(call)
        assert not result.ok and result.error == "path points outside the workspace"
    assert _call(env, "search", word="secret").output == "no file has secret"
    assert "link" not in _call(env, "list").output
    assert (outside / "secret.txt").read_text() == "secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


def test_a_path_resolves_as_path_resolve_resolves_it(env, tmp_path):
    """The tools skip Path.resolve for a path with no link in it; any mix of folders, files,
    missing parts, links in and out, chains and loops resolves as Path.resolve does, or is
    refused where that leaves the workspace or fails."""
    ws = env.workspace
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (ws / "dir" / "sub").mkdir(parents=True)
    (ws / "dir" / "sub" / "f.txt").write_text("x")
    (ws / "in").symlink_to(ws / "dir")
    (ws / "dir" / "rel").symlink_to("sub")
    (ws / "dir" / "chain").symlink_to(ws / "in" / "rel")
    (ws / "out").symlink_to(outside)
    (ws / "dir" / "up").symlink_to("../..")
    (ws / "loop").symlink_to(ws / "loop2")
    (ws / "loop2").symlink_to(ws / "loop")
    parts = ["dir", "sub", "f.txt", "in", "rel", "chain", "out", "deep", "up", "loop",
             "missing", "."]
    rng = __import__("random").Random(5)
    paths = {"/".join(rng.choice(parts) for _ in range(rng.randint(1, 4))) for _ in range(400)}
    for rel in sorted(paths):
        try:
            want = (ws / rel).resolve()
        except (OSError, RuntimeError):
            want = None
        try:
            got = env._resolve(rel)
        except Exception as exc:  # the tool's refusal
            assert want is None or not want.is_relative_to(ws), (rel, want, exc)
            continue
        assert got == want, rel


def test_huge_output_is_truncated_with_a_marker(env):
    assert _call(env, "write", path="big.txt", text="plum " * 800).ok
    result = _call(env, "read", path="big.txt")
    assert result.ok and result.truncated and result.output.endswith(TRUNCATION_MARKER)
    assert len(result.output) == env.limits.max_output_chars + len(TRUNCATION_MARKER)
    assert not _call(env, "read", path="cat.txt").truncated


def test_write_size_and_file_count_are_capped(tmp_path):
    with Env(_task(), root=tmp_path, limits=Limits(max_entries=3)) as env:
        big = _call(env, "write", path="a.txt", text="x" * 5000)
        assert not big.ok and big.error == "text is too big"
        assert _call(env, "write", path="a.txt", text="x").ok
        assert _call(env, "write", path="b.txt", text="x").ok
        full = _call(env, "write", path="c.txt", text="x")
        assert not full.ok and full.error == "too many files"
        assert _call(env, "write", path="a.txt", text="y").ok  # replacing is fine


def test_a_tool_that_never_returns_is_cut_off(tmp_path):
    release = threading.Event()
    with Env(_task(), root=tmp_path, limits=Limits(tool_seconds=0.2)) as env:
        env.tools["read"] = lambda path: release.wait(30)
        start = time.monotonic()
        result = _call(env, "read", path="cat.txt")
        assert time.monotonic() - start < 2
        assert not result.ok and result.error == "read took too long and was stopped"
        assert _call(env, "list").ok  # the environment still works
        release.set()


def test_a_crashing_tool_gives_a_short_error(tmp_path):
    with Env(_task(), root=tmp_path) as env:
        env.tools["list"] = lambda: 1 / 0
        assert _call(env, "list").error == "list failed"


def test_the_checker_has_a_time_limit(tmp_path):
    task = _task(checker=lambda ws, ans: time.sleep(5) or 1.0)
    with (Env(task, root=tmp_path, limits=Limits(checker_seconds=0.2)) as env,
          pytest.raises(HscaleError, match="longer than")):
        env.reward("plum")


def test_error_messages_are_in_the_vocabulary(env):
    calls = [ToolCall("fox", {}), ToolCall("read", {}), ToolCall("list", {"path": "x"}),
             ToolCall("read", {"path": "fox.txt"}), ToolCall("read", {"path": "../fox.txt"}),
             ToolCall("read", {"path": "/fox.txt"}), ToolCall("read", {"path": "old"}),
             ToolCall("write", {"path": "out.txt", "text": "x" * 5000}),
             ToolCall("search", {"word": ""}), ToolCall("search", {"word": "honey"}),
             ToolCall("calc", {"expr": "1 / 0"}), ToolCall("calc", {"expr": "cat"}),
             ToolCall("calc", {"expr": "999 * 999 * 999"}), ToolCall("calc", {"expr": "1" * 101})]
    for call in calls:
        result = env.execute(call)
        assert out_of_vocabulary(result.error + "\n" + result.output) == [], result
    assert out_of_vocabulary(TRUNCATION_MARKER) == []


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under root: kind, bytes, mode and mtime (symlinks not followed)."""
    snap = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top) / name
            st = os.stat(path, follow_symlinks=False)
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            snap[str(path.relative_to(root))] = (st.st_mode, st.st_mtime_ns, st.st_nlink, data)
    return snap


def test_a_hostile_barrage_changes_nothing_outside(tmp_path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret.txt").write_text("secret")
    (outside / "sub" / "deep.txt").write_text("deep")
    before = _snapshot(tmp_path)
    env = Env(_task(), root=tmp_path / "root")
    ws = env.workspace
    (ws / "door").symlink_to(outside)
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "dangling.txt").symlink_to(outside / "new.txt")
    (ws / "up").symlink_to("..")
    os.link(outside / "sub" / "deep.txt", ws / "hard.txt")
    targets = ["../outside/secret.txt", "../../outside/new.txt", str(outside / "secret.txt"),
               str(outside / "new.txt"), "door/secret.txt", "door/new.txt", "door/sub/deep.txt",
               "link.txt", "dangling.txt", "up/outside/secret.txt", "up/x.txt", "hard.txt",
               "./../outside/x", "old/../../outside/x", "..\\outside\\x", "door", "up",
               f"door/{'a' * 190}", "a\x00../outside/secret.txt", "."]
    for path in targets:
        for call in (ToolCall("write", {"path": path, "text": "owned"}),
                     ToolCall("read", {"path": path})):
            result = env.execute(call)
            assert not result.ok or call.name == "read" and "owned" not in result.output
        assert not _call(env, "read", path=path).output.startswith(("secret", "deep"))
    for expr in ("__import__('os').remove('x')", "open('../outside/secret.txt').read()",
                 "[x for x in ().__class__.__base__.__subclasses__()]", "9" * 99 + "**9"):
        assert not _call(env, "calc", expr=expr).ok
    for word in ("secret", "deep"):
        assert _call(env, "search", word=word).output == f"no file has {word}"
    assert "secret" not in _call(env, "list").output
    env.close()
    after = _snapshot(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith("root")} == before
    assert not (outside / "new.txt").exists()
    assert list((tmp_path / "root").iterdir()) == []


def test_clashing_input_files_are_a_task_error(tmp_path):
    with pytest.raises(HscaleError, match="input file"):
        Env(_task({"a": "x", "a/b.txt": "y"}), root=tmp_path)
    assert list(tmp_path.iterdir()) == []  # the half-made workspace is removed


def test_a_symlink_loop_is_a_bad_path(env):
    (env.workspace / "loop").symlink_to(env.workspace / "loop")
    assert _call(env, "read", path="loop").error == "bad path"
    assert _call(env, "write", path="loop", text="x").error == "bad path"
    assert _call(env, "list").ok


def test_workspaces_go_where_hscale_workspaces_says_else_to_memory(tmp_path, monkeypatch):
    # internal: tests the workspace module's internals
    import hscale.harness._workspaces as env_module

    monkeypatch.setenv("HSCALE_WORKSPACES", str(tmp_path / "mine"))
    env_module.default_root.cache_clear()
    try:
        with Env(_task()) as env:
            assert env.workspace.parent == (tmp_path / "mine").resolve()
        monkeypatch.delenv("HSCALE_WORKSPACES")
        monkeypatch.setattr(env_module, "MEMORY_ROOM", 1 << 62)  # /dev/shm never that big
        env_module.default_root.cache_clear()
        assert env_module.default_root() is None  # the system's temporary folder
        monkeypatch.setattr(env_module, "MEMORY_ROOM", 0)
        env_module.default_root.cache_clear()
        expected = str(env_module.MEMORY_FOLDER) if env_module.MEMORY_FOLDER.is_dir() else None
        assert env_module.default_root() == expected
    finally:
        env_module.default_root.cache_clear()


@pytest.mark.parametrize("kind", ["fifo", "fifo-with-reader", "socket"])
def test_a_write_into_a_special_file_is_refused_at_once(env, kind):
    """A FIFO nobody reads (or one a reader holds), a socket: the built-in write never waits
    on one and never writes into it."""
    target = env.workspace / "pipe"
    reader = None
    if kind == "socket":
        import socket
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(target))
    else:
        os.mkfifo(target)
        if kind == "fifo-with-reader":
            reader = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    done = threading.Event()
    results = []
    worker = threading.Thread(target=lambda: (results.append(
        _call(env, "write", path="pipe", text="x" * 1000)), done.set()), daemon=True)
    worker.start()
    assert done.wait(5), "the write blocked"
    assert not results[0].ok and results[0].error == "not a plain file"
    if reader is not None:
        assert os.read(reader, 10) == b""  # nothing was written into it
        os.close(reader)
