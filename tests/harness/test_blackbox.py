"""The real black-box harnesses (Claude Code, Codex CLI, OpenClaw) through ``hscale serve`` of
the scripted model: they solve built-in and ClawGym-format tasks (reward 1 by each task's own
checker), a model that answers without acting scores 0, the record holds every turn of every
session, and the server's turn bound ends an episode. Each needs its pinned install (``hscale
harness install NAME``; CI installs them); slow, as the CLIs take seconds to start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hscale.harness.blackbox import HARNESSES
from hscale.harness.blackbox_run import Served, run_blackbox
from hscale.harness.task_sources import open_benchmark
from hscale.harness.world import generate
from hscale.train.lm.blackbox_eval import play
from hscale.train.lm.record import read_record
from hscale.train.serving import serve
from hscale.train.serving.scripted import ScriptedChat, solution_commands

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "experiments" / "examples" / "tasks"


def _installed(name: str) -> None:
    if not HARNESSES.get(name).installed():
        pytest.skip(f"{name} is not installed here: hscale harness install {name}")


def _tasks() -> list:
    builtin = generate(4, seed=1)[2:4]  # a calculation written to a file, a recovery
    clawgym = open_benchmark("clawgym", str(EXAMPLES)).tasks(1, 0, "train")
    return [*builtin, *clawgym]


@pytest.mark.parametrize("name", list(HARNESSES))
def test_the_real_cli_solves_tasks_through_hscale_serve(name):
    """Several sessions at once, as an evaluation plays them (hscale.train.lm.blackbox_eval:
    the model served in process, the CLIs side by side)."""
    _installed(name)
    tasks = _tasks()
    model = ScriptedChat({t.user_query: solution_commands(t) for t in tasks})
    episodes: dict[int, object] = {}
    play(model, [(name, task) for task in tasks], episodes.__setitem__,
         concurrency=len(tasks), timeout_s=240)
    assert [episodes[i].reward for i in range(len(tasks))] == [1.0] * len(tasks), [
        (episodes[i].final_answer, episodes[i].error) for i in range(len(tasks))]
    for i, task in enumerate(tasks):
        assert episodes[i].turns == len(solution_commands(task)) + 1, episodes[i].error
        assert episodes[i].termination == "answer" and episodes[i].error == ""


@pytest.mark.parametrize("name", list(HARNESSES))
def test_a_model_that_does_not_act_scores_zero_and_every_turn_is_recorded(name, tmp_path):
    _installed(name)
    task = _tasks()[0]
    record = tmp_path / "record"
    with serve(ScriptedChat(wrong=True), port=0, record=record) as server:
        service = server.service
        served = Served(server.url, "scripted", 32768, service.limit, service.requests)
        wrong = run_blackbox(name, task, served, timeout_s=240)
    assert wrong.reward == 0.0 and wrong.final_answer == "i cannot do this task."
    with serve(ScriptedChat({task.user_query: solution_commands(task)}), port=0,
               record=record) as server:
        service = server.service
        served = Served(server.url, "scripted", 32768, service.limit, service.requests)
        right = run_blackbox(name, task, served, timeout_s=240)
    assert right.reward == 1.0
    rows = read_record(record)
    sessions = rows[rows.session.str.startswith("bb-")].groupby("session", sort=False)
    turns = sorted(len(group) for _, group in sessions)
    assert turns == sorted([wrong.turns, right.turns])
    solved = next(g for _, g in sessions if len(g) == right.turns)
    calls = [json.loads(c) for c in solved.tool_calls]
    assert sum(bool(c) for c in calls) == len(solution_commands(task))  # every call kept
    assert solved.iloc[-1].finish_reason == "stop" and (solved.status == 200).all()
    assert task.final_answer is None or solved.iloc[-1].reply.strip() == task.final_answer


def test_the_servers_turn_bound_ends_an_episode(tmp_path):
    name = "bb/claude-code"
    _installed(name)
    task = _tasks()[0]  # four commands, then the answer
    with serve(ScriptedChat({task.user_query: solution_commands(task)}), port=0) as server:
        service = server.service
        served = Served(server.url, "scripted", 32768, service.limit, service.requests)
        bounded = run_blackbox(name, task, served, timeout_s=240, max_turns=2)
    assert bounded.reward == 0.0 and "turn limit" in bounded.final_answer
    assert bounded.turns == 3  # two answered, the third told the episode is over
