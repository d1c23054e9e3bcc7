"""The demonstrator: habits that depend on surface form, deterministic, in the vocabulary."""

from __future__ import annotations

import pytest

from hscale.errors import HscaleError
from hscale.harness import (
    OUT_OF_SPACE,
    Episode,
    Harness,
    Oracle,
    ParseError,
    ToolCall,
    demonstrations,
    generate,
    run_episode,
)

# internal: tests the scripted habit policies
from hscale.harness._policies import (
    HABITS,
    IDK,
    Demonstrator,
    EarlyStop,
    Misread,
    Slips,
    WrongSyntax,
)

# internal: concrete tool parsers (registered by name)
from hscale.harness.components._tool_interface import JsonCall
from tests.harness.helpers import out_of_vocabulary, success_by_realization

TASKS = generate(150, seed=1, split="train")
H0 = "S0-T0-O0-C0-W0"
# One component changed from the base harness at a time: habits show alone.
CLEAN = [H0, "S1-T0-O0-C0-W0", "S2-T0-O0-C0-W0", "S0-T2-O0-C0-W0", "S0-T0-O2-C0-W0",
         "S0-T0-O0-C1-W0", "S0-T0-O0-C2-W0", "S0-T0-O0-C0-W1"]
HABIT = {"tool_interface/xml_call": "S0-T1-O0-C0-W0", "observation/json": "S0-T0-O1-C0-W0",
         "workflow/act_verify": "S0-T0-O0-C0-W2"}

_cache: dict[str, list[Episode]] = {}


def episodes(label: str) -> list[Episode]:
    """Demonstrations of all TASKS under one harness (computed once per label)."""
    if label not in _cache:
        _cache[label] = demonstrations(len(TASKS), seed=7, harnesses=[label], tasks=TASKS)
    return _cache[label]


def rate(eps: list[Episode]) -> float:
    return sum(e.success for e in eps) / len(eps)


def written(episode: Episode) -> list[str]:
    return [c.args["text"] for c, _ in episode.tool_calls if c.name == "write"]


# --- success where habits apply and where they do not ----------------------------------------
@pytest.mark.parametrize("label", CLEAN)
def test_most_demonstrations_succeed_without_habits(label):
    assert rate(episodes(label)) > 0.8, label


@pytest.mark.parametrize("realization", sorted(HABIT))
def test_few_demonstrations_succeed_under_a_habit(realization):
    label = HABIT[realization]
    assert realization in Harness.from_name(label).realization_names().values()
    assert rate(episodes(label)) < 0.45, label
    assert rate(episodes(label)) > 0.1  # sometimes: RL gets a signal there


def test_out_of_space_is_demonstrated_worse_but_sometimes_well():
    for name in OUT_OF_SPACE:
        assert 0.2 < rate(episodes(name)) < rate(episodes(H0)) - 0.2, name


def test_in_space_habits_are_strong_enough_for_greedy_imitation():
    for name, habits in HABITS.items():
        for habit in habits:
            if isinstance(habit, Slips) or name.split("/")[1] in ("shell", "action_lines"):
                continue
            assert habit.rate > 0.5, (name, habit)
            if isinstance(habit, EarlyStop):
                assert habit.stubborn > 0.5
            if isinstance(habit, WrongSyntax):  # after the error it rarely writes it right
                assert habit.repeat + habit.give_up > 0.5


def test_uniform_demonstrations_per_realization():
    table = success_by_realization(demonstrations(600, seed=3))
    n, overall = table["overall"]
    assert n == 600 and 0.25 < overall < 0.7
    for component in ("system_prompt", "tool_interface", "observation", "context", "workflow"):
        rates = {name: r for name, (m, r) in table.items()
                 if name.startswith(component + "/") and m >= 100}
        assert len(rates) == 3, component
        clean = [r for name, r in rates.items() if name not in HABIT]
        if len(clean) == 3:  # no habit here: realizations alike, averaged over the others'
            assert max(clean) - min(clean) < 0.15, rates
        else:  # the habit's realization far below its siblings, which mostly succeed
            habit = rates[next(name for name in rates if name in HABIT)]
            assert habit < 0.3 and min(clean) > 0.5 and min(clean) - habit > 0.25, rates


# --- the mistakes are the stated kinds -------------------------------------------------------
def test_xml_habit_is_json_syntax_and_gives_parse_errors():
    eps, json_call = episodes(HABIT["tool_interface/xml_call"]), JsonCall()
    assert sum(e.parse_errors > 0 for e in eps) > len(eps) / 2
    for e in eps:
        bad = [m.content for m in e.messages if m.role == "assistant"
               and isinstance(Harness.from_name(e.harness).parse(m.content), ParseError)]
        assert len(bad) == e.parse_errors
        assert all(isinstance(json_call.parse(text), ToolCall) for text in bad)
    assert not any(e.parse_errors for e in episodes(H0) + episodes("S0-T2-O0-C0-W0"))


def test_json_habit_copies_the_status_field():
    eps = episodes(HABIT["observation/json"])
    failed = [e for e in eps if not e.success]
    misread = [e for e in failed if e.final_answer == "ok" or "ok" in written(e)]
    assert len(misread) > 0.8 * len(failed)
    for e in misread:  # "ok" was on screen as the status value of the last result
        last = [m.content for m in e.messages if m.role == "tool"][-1]
        assert last.startswith('{"status": "ok"')
    plain = episodes(H0) + episodes("S0-T0-O2-C0-W0")
    assert not any(e.final_answer == "ok" or "ok" in written(e) for e in plain)


def test_act_verify_habit_stops_a_step_early_and_ignores_the_check():
    eps = episodes(HABIT["workflow/act_verify"])
    task_of = {t.task_id: t for t in TASKS}
    failed = [e for e in eps if not e.success]
    short = [e for e in failed
             if len(e.tool_calls) < len(task_of[e.task_id].solution) and e.parse_errors == 0]
    assert len(short) > 0.8 * len(failed)
    check = "check your work, then answer again."
    repeated = 0
    for e in short:  # the early answer is what the last result shows, or giving up
        tool = [m.content for m in e.messages if m.role == "tool"]
        assert e.final_answer in ((tool[-1].split() or [IDK])[-1] if tool else IDK, IDK)
        answers = [m.content for m in e.messages if m.role == "assistant"][-2:]
        repeated += e.messages[-2].content == check and answers[0] == answers[1]
    assert repeated > 0.8 * len(short)  # asked to check, it says the same again


def test_ordinary_slips_are_rare_and_everywhere():
    eps, task_of = episodes(H0), {t.task_id: t for t in TASKS}
    gave_up = [e for e in eps if not e.success]
    assert gave_up and all(e.final_answer == IDK for e in gave_up)  # the only loss here
    wrong_path = [e for e in eps if any(
        c not in task_of[e.task_id].solution for c, _ in e.tool_calls)]
    assert wrong_path and all(c.name == "read" for e in wrong_path for c, _ in e.tool_calls
                              if c not in task_of[e.task_id].solution)
    assert len(gave_up) + len(wrong_path) < 0.2 * len(eps)


# --- determinism, vocabulary, the table and its knobs ----------------------------------------
def test_deterministic_by_seed():
    def texts(seed: int) -> list[tuple[str, list[str]]]:
        return [(e.harness, [m.content for m in e.messages])
                for e in demonstrations(60, seed=seed)]

    assert texts(4) == texts(4)
    assert texts(4) != texts(5)
    task, harness = TASKS[2], Harness.from_name("S1-T1-O1-C2-W2")
    runs = [run_episode(Demonstrator(task, harness, seed=9), harness, task) for _ in range(2)]
    assert [m.content for m in runs[0].messages] == [m.content for m in runs[1].messages]


def test_every_text_is_in_the_vocabulary():
    eps = demonstrations(400, seed=11)
    assert {e.harness for e in eps} & set(OUT_OF_SPACE)
    for e in eps:
        for message in e.messages:
            assert out_of_vocabulary(message.content) == [], (e.harness, message.content)


def test_habit_table_and_scale_drive_the_mistakes():
    label = HABIT["tool_interface/xml_call"]
    harness = Harness.from_name(label)
    off = [run_episode(Demonstrator(t, harness, seed=i, habit_scale=0.0), harness, t)
           for i, t in enumerate(TASKS[:60])]
    assert rate(off) > 0.8 and not any(e.parse_errors for e in off)
    table = {"tool_interface/json_call": (Misread("status", 1.0),)}  # json obs never shown
    other = [run_episode(Demonstrator(t, harness, seed=i, habits=table), harness, t)
             for i, t in enumerate(TASKS[:60])]
    assert rate(other) > 0.8
    clean = [run_episode(Demonstrator(t, harness, seed=i, slip_rate=0.0, habits={}), harness, t)
             for i, t in enumerate(TASKS[:60])]
    assert rate(clean) == 1.0


def test_oracle_still_solves_everything():
    for label in [*HABIT.values(), "S2-T1-O1-C2-W2", *OUT_OF_SPACE]:
        harness = Harness.from_name(label)
        for task in TASKS[:20]:
            assert run_episode(Oracle(task, harness), harness, task).success, label


def test_demonstrations_refuse_bad_arguments():
    with pytest.raises(HscaleError, match="held-out"):
        demonstrations(2, seed=0, tasks=generate(2, seed=0, split="eval"))
    with pytest.raises(HscaleError, match="no tasks"):
        demonstrations(2, seed=0, tasks=[])
    with pytest.raises(HscaleError, match="harnesses"):
        demonstrations(2, seed=0, harnesses=[])
    with pytest.raises(HscaleError):
        demonstrations(-1, seed=0)
    assert demonstrations(0, seed=0) == []


def test_demonstrations_use_train_tasks_and_mix_out_of_space_in():
    eps = demonstrations(400, seed=2)
    assert all(e.task_id.startswith("train-2-") for e in eps)
    oos = sum(e.harness in OUT_OF_SPACE for e in eps)
    assert 5 <= oos <= 40
    assert len({e.harness for e in eps}) > 150
    assert not any(e.harness in OUT_OF_SPACE for e in demonstrations(200, seed=2, oos_share=0))
