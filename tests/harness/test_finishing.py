"""Ended episodes scored in background threads (hscale.harness.Finisher): the episodes a
scorer inline would give, in the order submitted, while the driver goes on; a driver that
fails still gets every ended episode scored, and an interrupted evaluation saves them. A
wave's shell commands run side by side (hscale.harness.submit_all), each episode seeing
what submitting in turn gives."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hscale.harness import Finisher, Generation, ToolCall, TurnEngine, harness_named, submit_all
from hscale.harness.tasks import Task, load_tasks

ROOT = Path(__file__).resolve().parents[2]


def _engine(checker, i: int = 0) -> TurnEngine:
    """An episode that has ended before its first turn (no turns allowed): only its scoring
    is left."""
    task = Task(task_id=f"t{i}", user_query=f"question {i}", checker=checker,
                input_files={"notes.txt": f"note {i}"})
    engine = TurnEngine(harness_named("S0-T0-O0-C0-W0"), task, max_turns=0)
    assert engine.done
    return engine


def test_the_driver_goes_on_while_a_checker_waits_and_gets_its_episode_after():
    release, started = threading.Event(), threading.Event()

    def slow(workspace: Path, answer: str) -> float:
        started.set()
        assert release.wait(10)
        return float((workspace / "notes.txt").read_text() == "note 0")

    engine, finisher = _engine(slow), Finisher()
    finisher.submit("a", engine)
    assert started.wait(10)  # scoring began, on another thread
    assert finisher.ready() == {}  # and the driver is not held up by it
    release.set()
    episode = finisher.wait()["a"]
    assert episode.reward == 1.0 and episode.task_id == "t0"
    assert engine.env.closed and not engine.env.workspace.exists()


def test_episodes_come_back_in_the_order_submitted_whatever_order_they_end_in():
    gates = [threading.Event() for _ in range(4)]

    def checker_for(i):
        def check(workspace: Path, answer: str) -> float:
            assert gates[i].wait(10)
            return i / 4
        return check

    finisher = Finisher()
    for i in range(4):
        finisher.submit(i, _engine(checker_for(i), i))
    for gate in reversed(gates):  # the last submitted ends first
        gate.set()
    got = finisher.wait()
    assert list(got) == [0, 1, 2, 3]
    assert [e.reward for e in got.values()] == [0.0, 0.25, 0.5, 0.75]


def test_the_same_episodes_as_scored_inline_for_reward_scripts():
    folder = ROOT / "experiments" / "examples" / "tasks"
    scripted = [t for t in load_tasks(folder)
                if isinstance(t.checker, dict) and t.checker["kind"] == "script"][:6]
    assert scripted, "the example tasks have reward scripts"
    harness = harness_named("S1-T1-O1-C1-W1")

    def answered(task: Task) -> TurnEngine:  # the oracle's answer, no files written
        engine = TurnEngine(harness, task, max_turns=0)
        engine.final = task.final_answer or ""
        return engine

    inline = [answered(t).finish() for t in scripted]
    finisher = Finisher()
    for i, task in enumerate(scripted):
        finisher.submit(i, answered(task))
    background = list(finisher.wait().values())
    assert {e.reward for e in inline} == {0.0, 1.0}  # graded on the answer, or on a file
    for a, b in zip(inline, background, strict=True):
        assert (a.task_id, a.reward, a.error, a.final_answer) == \
            (b.task_id, b.reward, b.error, b.final_answer)


def test_a_finish_that_fails_is_raised_after_every_other_episode_has_ended():
    release = threading.Event()

    def slow(workspace: Path, answer: str) -> float:
        assert release.wait(10)
        return 1.0

    engines = [_engine(slow, i) for i in range(12)]  # more than the finishing threads
    broken = _engine(slow, 99)
    broken.finish = lambda: (_ for _ in ()).throw(RuntimeError("finish failed"))
    finisher = Finisher()
    finisher.submit("broken", broken)
    for i, engine in enumerate(engines):
        finisher.submit(i, engine)
    threading.Timer(0.2, release.set).start()
    with pytest.raises(RuntimeError, match="finish failed"):
        finisher.wait()
    # nothing is still being scored when the driver's own cleanup runs
    assert all(e.env.closed and not e.env.workspace.exists() for e in engines)
    broken.env.close()


def test_an_interrupted_evaluation_saves_every_episode_that_had_ended(tmp_path):
    """hscale.train.lm.drive, stopped by Ctrl-C in its third wave: the episodes that ended in
    the first two are scored and handed to ``done`` (what evaluate saves) before it stops."""
    from hscale.train.lm import drive

    tasks = [Task(task_id=f"t{i}", user_query=f"question {i}", checker=lambda w, a: 1.0)
             for i in range(3)]
    harness = harness_named("S0-T0-O0-C0-W0")

    class Answers:  # one episode a wave (max_batch 1), each ends after its turn
        waves = 0

        def generate(self, views, greedy, max_new_tokens, seed):
            self.waves += 1
            if self.waves == 3:
                raise KeyboardInterrupt
            return [Generation("I am done. Final answer: 1") for _ in views]

    saved = {}
    with pytest.raises(KeyboardInterrupt):
        drive(Answers(), [(harness, t, True) for t in tasks], max_turns=1, max_batch=1,
              done=lambda i, e: saved.setdefault(i, e))
    assert sorted(saved) == [0, 1]
    assert all(e.reward == 1.0 for e in saved.values())


# --- a wave's turns: shell commands side by side (hscale.harness.submit_all) ------------------

def _shell_task(i: int) -> Task:
    return Task(task_id=f"s{i}", user_query=f"inspect {i}", checker=lambda w, a: 1.0,
                input_files={"notes.txt": f"note {i}"},
                tools=("list", "read", "write", "search", "calc", "run"))


def _call(harness, name: str, **args: str) -> Generation:
    return Generation(harness.format_call(ToolCall(name, args)))


def test_a_waves_shell_commands_run_side_by_side_in_their_own_sandboxes():
    from hscale.harness.tasks import containment

    if not containment().strong:
        pytest.skip("run needs a contained shell (bubblewrap or user namespaces)")
    harness = harness_named("S0-T0-O0-C0-W0")
    engines = [TurnEngine(harness, _shell_task(i)) for i in range(3)]
    command = "date +%s.%N; cat notes.txt; echo; sleep 1; date +%s.%N"
    ended = submit_all(engines, [_call(harness, "run", command=command)] * 3)
    assert ended == [False] * 3
    spans = []
    for i, engine in enumerate(engines):
        (call, result), = engine.calls
        assert result.ok and f"note {i}" in result.output  # each in its own workspace
        lines = result.output.split("\n")
        spans.append((float(lines[1]), float(lines[-1])))
        engine.env.close()
    # one after another, each would start after the one before had ended
    assert max(start for start, _ in spans) < min(end for _, end in spans)


def test_an_evaluations_waves_run_their_shell_commands_side_by_side():
    """hscale.train.lm.drive, as ``hscale evaluate`` drives a real model: three episodes
    each run a one-second command, then answer."""
    from hscale.harness.tasks import containment
    from hscale.train.lm import drive

    if not containment().strong:
        pytest.skip("run needs a contained shell (bubblewrap or user namespaces)")
    harness = harness_named("S0-T0-O0-C0-W0")
    command = "date +%s.%N; sleep 1; date +%s.%N"

    class Inspects:  # a command first, then the answer
        def generate(self, views, greedy, max_new_tokens, seed):
            return [Generation("Final answer: 1") if len(view) > 3 else
                    _call(harness, "run", command=command) for view in views]

    episodes = drive(Inspects(), [(harness, _shell_task(i), True) for i in range(3)])
    spans = []
    for episode in episodes:
        (_, result), = episode.tool_calls
        lines = result.output.split("\n")
        spans.append((float(lines[1]), float(lines[-1])))
        assert episode.turns == 2 and episode.reward == 1.0
    assert max(start for start, _ in spans) < min(end for _, end in spans)


def test_submitting_a_wave_together_gives_what_submitting_in_turn_gives():
    harness = harness_named("S1-T1-O1-C1-W1")
    wave = [_call(harness, "read", path="notes.txt"), Generation("no call in this one"),
            _call(harness, "run", command="cat notes.txt"), Generation("Final answer: 3"),
            _call(harness, "run", command="ls"), _call(harness, "write", path="a", text="b")]

    def played(together: bool) -> list:
        engines = [TurnEngine(harness, _shell_task(i), max_turns=2) for i in range(len(wave))]
        if together:
            ended = submit_all(engines, wave)
        else:
            ended = [e.submit(g) for e, g in zip(engines, wave, strict=True)]
        out = [(done, [m.content for m in e.history], e.transcript, e.final)
               for done, e in zip(ended, engines, strict=True)]
        for engine in engines:
            engine.env.close()
        return out

    assert played(True) == played(False)


def test_a_tool_call_that_raises_is_raised_after_the_others_have_ended():
    harness = harness_named("S0-T0-O0-C0-W0")
    engines = [TurnEngine(harness, _shell_task(i)) for i in range(4)]
    finished = []

    def slow(command: str) -> str:
        threading.Event().wait(0.3)
        finished.append(command)
        return "ok"

    for engine in engines[1:]:
        engine.env.tools["run"] = slow  # a replaced tool may wait: it runs side by side
    engines[0].env.execute = lambda call: (_ for _ in ()).throw(RuntimeError("tool broke"))
    engines[0].env.waits = lambda call: True
    with pytest.raises(RuntimeError, match="tool broke"):
        submit_all(engines, [_call(harness, "run", command=f"c{i}") for i in range(4)])
    assert sorted(finished) == ["c1", "c2", "c3"]  # none still running in the background
    for engine in engines:
        engine.env.close()


def test_ctrl_c_during_a_wave_lets_its_commands_end_before_it_stops():
    """An interrupted evaluation closes its live episodes' workspaces next: no command may
    still be running in one."""
    import signal

    harness = harness_named("S0-T0-O0-C0-W0")
    engines = [TurnEngine(harness, _shell_task(i)) for i in range(3)]
    started = [threading.Event() for _ in engines]
    finished = []

    def interrupted(command: str) -> str:  # Ctrl-C, once the others run
        assert all(event.wait(10) for event in started[1:])
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        return "ok"

    def slow(command: str) -> str:
        started[int(command[1:])].set()
        threading.Event().wait(0.5)
        finished.append(command)
        return "ok"

    engines[0].env.tools["run"] = interrupted
    for engine in engines[1:]:
        engine.env.tools["run"] = slow
    with pytest.raises(KeyboardInterrupt):
        submit_all(engines, [_call(harness, "run", command=f"c{i}") for i in range(3)])
    assert sorted(finished) == ["c1", "c2"]
    for engine in engines:
        engine.env.close()
