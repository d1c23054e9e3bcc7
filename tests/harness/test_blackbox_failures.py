"""A black-box CLI's own failure is said as such, never passed off as an agent that solved
nothing: an exit code with its last stderr line, an exit 0 or a hang that never asked the
model, output that is not UTF-8. Played against fake CLIs installed where hscale looks for
the real ones, so these run everywhere in seconds; ``hscale collect`` and ``hscale evaluate``
then stop with the CLI's words, log nothing of a failed episode, and resume it on a rerun."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from hscale.harness import HARNESSES, BuiltinWorld, Served, cli_failed, run_blackbox
from tests.cli import hscale

# What each fake does, as the body of a shell script run as the CLI. "asks" fakes reach the
# model: the server's request count for the session is what tells a CLI that ran.
FAKES = {
    "crashes": "echo 'Error: cannot find module ./dist/cli.js' >&2; exit 1",
    "exits-at-once": "exit 0",
    "exits-3-silently": "exit 3",
    "not-utf8-crash": r"printf 'bad \377\376 bytes\n' >&2; printf '\377\376'; exit 1",
    "not-utf8-answer": r"""printf '{"result": "caf\351"}\n'; exit 0""",
    "hangs": "sleep 600",
}


def _install(root: Path, body: str, name: str = "bb/claude-code") -> None:
    harness = HARNESSES.get(name)
    exe = root / harness.folder.name / "node_modules" / ".bin" / harness.binary
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f"#!/bin/sh\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    def install(kind: str) -> Path:
        root = tmp_path / f"harnesses-{kind}"
        _install(root, FAKES[kind])
        monkeypatch.setenv("HSCALE_HARNESSES", str(root))
        return root
    return install


def _served(requests: int) -> Served:
    return Served("http://127.0.0.1:9/v1", "m", requests=lambda session: requests)


def _played(fake, kind: str, asked: int, timeout_s: float):
    """The episode of a built-in task through the fake CLI ``kind``, the server having seen
    ``asked`` requests of its session."""
    fake(kind)
    task = BuiltinWorld().tasks(1, 0)[0]
    return run_blackbox("bb/claude-code", task, _served(asked), timeout_s=timeout_s)


@pytest.mark.parametrize(("kind", "asked", "termination", "said"), [
    ("crashes", 0, "error", "exit 1: Error: cannot find module ./dist/cli.js"),
    ("exits-at-once", 0, "error", "ended without asking the model"),
    ("exits-3-silently", 0, "error", "exit 3: (no output)"),
    ("not-utf8-crash", 0, "error", "exit 1: bad \ufffd\ufffd bytes"),
    ("hangs", 0, "error", "hung 2 s without asking the model"),
])
def test_a_cli_that_fails_on_its_own_is_an_error_in_its_own_words(fake, kind, asked,
                                                                   termination, said):
    episode = _played(fake, kind, asked, 2)
    assert episode.termination == termination
    assert cli_failed(episode.error) and said in episode.error, episode.error


def test_output_that_is_not_utf8_is_read_with_replacements(fake):
    episode = _played(fake, "not-utf8-answer", 1, 10)
    assert episode.termination == "answer" and not cli_failed(episode.error)
    assert episode.final_answer == "caf\ufffd"


def test_a_cli_that_asked_the_model_and_then_failed_is_the_agents_failure(fake):
    episode = _played(fake, "crashes", 2, 10)
    assert episode.termination == "error" and not cli_failed(episode.error)
    assert episode.error == "exit 1: Error: cannot find module ./dist/cli.js"


def test_a_cli_that_asked_the_model_and_then_hung_is_the_agents_timeout(fake):
    episode = _played(fake, "hangs", 3, 2)
    assert episode.termination == "timeout" and not cli_failed(episode.error)
    assert "timeout after" in episode.error


@pytest.mark.parametrize("kind", [
    "crashes",  # the other kinds' words are tested above without the CLI; here, slow
    pytest.param("exits-at-once", marks=pytest.mark.slow),
    pytest.param("not-utf8-crash", marks=pytest.mark.slow)])
def test_collect_with_a_broken_cli_stops_with_its_words_and_logs_nothing(fake, tmp_path, kind):
    root = fake(kind)
    out = tmp_path / "collected"
    done = hscale("collect", "scripted", "--harness", "bb/claude-code", "--out", out,
                  "--tasks", "6", env={"HSCALE_HARNESSES": str(root)})
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "bb/claude-code failed in each of its first 4 episodes" in line, line
    assert FAKES[kind].startswith("exit") or "exit 1" in line
    assert "Traceback" not in done.stderr
    log = out / "record" / "episodes.jsonl"
    assert not log.is_file() or not log.read_text().strip()  # a rerun plays them all again


def test_evaluate_through_a_broken_cli_fails_the_run_and_a_rerun_plays_it_again(fake, tmp_path):
    root = fake("crashes")
    args = ("evaluate", "hscale-tiny", "--harnesses", "bb/claude-code", "--tasks", "4",
            "--decoding", "greedy", "--out", tmp_path / "runs")
    done = hscale(*args, env={"HSCALE_HARNESSES": str(root)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot find module" in done.stderr and "Traceback" not in done.stderr
    status = json.loads(next((tmp_path / "runs").rglob("status.json")).read_text())
    assert status["state"] == "FAILED" and "bb/claude-code" in status["error"]
    assert not list((tmp_path / "runs").rglob("eval.parquet"))
    again = hscale(*args, env={"HSCALE_HARNESSES": str(root)})  # played again, not read back
    assert again.returncode == 2 and "cannot find module" in again.stderr


def test_the_fakes_are_where_hscale_looks(fake):
    root = fake("crashes")
    assert HARNESSES.get("bb/claude-code").installed()
    assert os.environ["HSCALE_HARNESSES"] == str(root)


def test_codex_failing_a_turn_is_said_in_its_json_words_not_its_stdin_banner(tmp_path,
                                                                            monkeypatch):
    """``codex exec --json`` says why a turn failed on stdout (an ``error`` event, then
    ``turn.failed``) and ends stderr with its stdin banner: the episode's error is the
    reason, and the agent's (it asked the model), not the CLI's."""
    events = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"},
              {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
                                                  "text": "1. 2. 3."}},
              {"type": "error", "message": "Incomplete response returned, reason: "
                                           "max_output_tokens"},
              {"type": "turn.failed", "error": {"message": "Incomplete response returned, "
                                                           "reason: max_output_tokens"}}]
    lines = "\n".join(json.dumps(e) for e in events)
    root = tmp_path / "harnesses"
    _install(root, f"echo 'Reading additional input from stdin...' >&2\n"
                   f"cat <<'EOF'\n{lines}\nEOF\nexit 1", name="bb/codex")
    monkeypatch.setenv("HSCALE_HARNESSES", str(root))
    task = BuiltinWorld().tasks(1, 0)[0]
    episode = run_blackbox("bb/codex", task, _served(1), timeout_s=10)
    assert episode.termination == "error" and not cli_failed(episode.error)
    assert episode.error == ("exit 1: Incomplete response returned, reason: "
                             "max_output_tokens"), episode.error
