"""Trajectories from the serving record: a recorded black-box episode becomes one training
sample a model call whose token ids and written-token mask are exactly what the served model
produced; a record that cannot give them is refused with the session and the reason."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from hscale.errors import HscaleError
from hscale.harness import HARNESSES, Served, generate, new_session, run_blackbox
from hscale.train.blackbox import EpisodeLog, samples
from hscale.train.lm import read_record

# internal: tests the record file's columns
from hscale.train.lm._record import RECORD_COLUMNS
from hscale.train.serving import ScriptedChat, serve, solution_commands


def _row(session, k, prompt="[1, 2]", ids="[3]", status=200, by="model",
         path="/v1/messages"):
    row = dict.fromkeys(RECORD_COLUMNS, "")
    row.update(time=pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(seconds=k),
               session=session, status=status, by=by, path=path, prompt_ids=prompt,
               token_ids=ids, logprobs="[-0.5, -0.1]", model="m")
    return row


def test_each_model_call_is_a_sample_with_the_models_tokens_masked_in():
    frame = pd.DataFrame([_row("b", 0), _row("a", 1, "[5, 6, 7]", "[8, 9]"),
                          _row("a", 0, "[1]", "[2]"),
                          _row("a", 2, "", "[]", by="server"),  # the turn limit's text
                          _row("a", 3, "", "", path="/v1/messages/count_tokens")])
    got = samples(frame, [{"session": "a", "harness": "bb/x", "task_id": "t", "reward": 1.0},
                          {"session": "b", "harness": "bb/x", "task_id": "u", "reward": 0.0}])
    assert [(s.session, s.call, s.calls) for s in got] == [("a", 0, 2), ("a", 1, 2),
                                                            ("b", 0, 1)]
    assert got[1].ids == (5, 6, 7, 8, 9) and got[1].mask == (0, 0, 0, 1, 1)
    assert got[1].logprobs == (-0.5, -0.1) and got[2].reward == 0.0


@pytest.mark.parametrize(("rows", "said"), [
    ([_row("a", 0, prompt="")], "no prompt ids"),
    ([_row("a", 0, status=400)], "request failed"),
    ([_row("z", 0)], "no model call"),
])
def test_a_record_that_cannot_replay_the_episode_exactly_is_refused(rows, said):
    with pytest.raises(HscaleError, match=said) as caught:
        samples(pd.DataFrame(rows), [{"session": "a", "harness": "bb/x", "task_id": "t",
                                      "reward": 1.0}])
    assert "session a" in caught.value.one_line()


class _Seen(ScriptedChat):
    """The scripted solver, keeping every generation it returns."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.generations = []

    def generate(self, conversations, **kwargs):
        out = super().generate(conversations, **kwargs)
        self.generations += out
        return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bb/claude-code"])  # the reader is the same for every CLI
def test_a_recorded_black_box_episode_replays_the_served_models_tokens(name, tmp_path):
    if not HARNESSES.get(name).installed():
        pytest.skip(f"{name} is not installed here: hscale harness install {name}")
    task = generate(4, seed=1)[2]
    model = _Seen({task.user_query: solution_commands(task)})
    record, session = tmp_path / "record", new_session()
    with serve(model, port=0, record=record) as server:
        service = server.service
        served = Served(server.url, "scripted", 32768, service.limit, service.requests)
        episode = run_blackbox(name, task, served, timeout_s=240, session=session)
    log = EpisodeLog(record)
    log.add(session, name, task.task_id, episode.reward)
    got = samples(record, log.read())
    assert episode.reward == 1.0 and len(got) == len(model.generations) == episode.turns
    for sample, gen in zip(got, model.generations, strict=True):
        assert sample.prompt_ids == gen.prompt_ids and sample.response_ids == gen.token_ids
        assert sample.logprobs == gen.logprobs and sum(sample.mask) == len(gen.token_ids)
        assert (sample.harness, sample.task_id, sample.reward) == (name, task.task_id, 1.0)
    rows = read_record(record)
    assert json.loads(rows[rows.session == session].iloc[0].prompt_ids)  # kept as JSON


def test_a_teachers_calls_without_ids_are_kept_as_text_when_asked():
    row = _row("a", 0, prompt="", ids="")
    row.update(messages='[{"role": "user", "content": "hi"}]', reply="hello")
    [got] = samples(pd.DataFrame([row]), [{"session": "a", "harness": "bb/x", "task_id": "t",
                                           "reward": 1.0}], exact=False)
    assert got.ids == () and json.loads(got.messages)[0]["content"] == "hi"
    assert got.reply == "hello"


@pytest.mark.slow
def test_hscale_collect_records_a_teacher_and_resumes(tmp_path):
    from tests.cli import hscale

    name = "bb/codex"
    if not HARNESSES.get(name).installed():
        pytest.skip(f"{name} is not installed here: hscale harness install {name}")
    out = tmp_path / "collected"
    first = hscale("collect", "scripted", "--harness", name, "--tasks", "3", "--out", out)
    assert first.returncode == 0, first.stderr
    assert "3 episodes" in first.stdout and "3 solved" in first.stdout
    log = EpisodeLog(out / "record").read()
    again = hscale("collect", "scripted", "--harness", name, "--tasks", "3", "--out", out)
    assert again.returncode == 0 and EpisodeLog(out / "record").read() == log  # nothing new
    other = hscale("collect", "scripted", "--harness", "bb/claude-code", "--tasks", "3",
                   "--out", out)
    assert other.returncode == 2 and "another collection" in other.stderr
    got = samples(out / "record", log)
    assert {s.session for s in got} == {r["session"] for r in log}
    assert all(s.reward == 1.0 and sum(s.mask) == len(s.response_ids) for s in got)
