"""The six judged capabilities through a scripted judge endpoint: scored per episode when
asked for, NaN otherwise, the same on both drivers' wire, and per arm in the report."""

from __future__ import annotations

import json
import math
import warnings
from http.server import BaseHTTPRequestHandler

import pandas as pd
import pytest

from hscale.harness import (
    BuiltinWorld,
    DoNothing,
    Harness,
    NoisyOracle,
    Oracle,
    behaviour,
    run_episode,
)

# internal: tests the capabilities table parser
from hscale.harness._capabilities import COLUMNS, parse
from hscale.harness.verl_agent_loop import wire_behaviour
from tests.harness.helpers import judge_server, send_json


class ScriptedJudge(BaseHTTPRequestHandler):
    """A chat-completions endpoint that rates a transcript with a tool error 2 on error
    recovery and one without 5; an answer with no tool call 1 on interface handling."""

    asked: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        type(self).asked.append(prompt)
        used_tools = "[tool]" in prompt
        scores = {"instruction_following": 4, "interface_handling": 5 if used_tools else 1,
                  "observation_reading": 3, "state_tracking": 4, "workflow_compliance": 5,
                  "error_recovery": 2 if "[tool] error" in prompt else 5}
        send_json(self, {"choices": [{"message": {"role": "assistant",
                                                  "content": json.dumps(scores)}}]})

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def judge(monkeypatch):
    ScriptedJudge.asked = []
    monkeypatch.setenv("HSCALE_JUDGE_CAPABILITIES", "1")
    with judge_server(ScriptedJudge, monkeypatch, "scripted"):
        yield ScriptedJudge


def _episodes():
    task = BuiltinWorld().tasks(1, 0)[0]
    harness = Harness.from_label("S0-T0-O0-C0-W0")
    clean = run_episode(Oracle(task, harness.fresh()), harness.fresh(), task)
    idle = run_episode(DoNothing(), harness.fresh(), task)
    return clean, idle


def test_each_episode_is_judged_through_the_endpoint_and_the_scores_ride_with_the_counts(
        judge):
    clean, idle = _episodes()
    scores = behaviour(clean)
    assert scores["judged_error_recovery"] == 5 and scores["judged_interface_handling"] == 5
    assert scores["tool_calls"] == len(clean.tool_calls)
    assert behaviour(idle)["judged_interface_handling"] == 1
    assert "[system]" in judge.asked[0] and clean.messages[1].content in judge.asked[0]
    # veRL's wire carries the same numbers (its dump import reads them back)
    assert {k: v for k, v in wire_behaviour(clean, "S0-T0-O0-C0-W0").items()
            if k in COLUMNS} == {k: scores[k] for k in COLUMNS}


def test_without_the_switch_nothing_is_asked_and_the_scores_are_nan(judge, monkeypatch):
    monkeypatch.delenv("HSCALE_JUDGE_CAPABILITIES")
    clean, _ = _episodes()
    assert all(math.isnan(behaviour(clean)[c]) for c in COLUMNS) and not judge.asked
    assert not set(COLUMNS) & set(wire_behaviour(clean, "S0-T0-O0-C0-W0"))


def test_a_dead_judge_leaves_nan_and_says_why_once(monkeypatch):
    monkeypatch.setenv("HSCALE_JUDGE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("HSCALE_JUDGE_MODEL", "scripted")
    monkeypatch.setenv("HSCALE_JUDGE_CAPABILITIES", "1")
    clean, _ = _episodes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert all(math.isnan(behaviour(clean)[c]) for c in COLUMNS)
    assert any("unreachable" in str(w.message) for w in caught)


def test_only_whole_scores_from_1_to_5_count():
    reply = json.dumps({"instruction_following": 0, "interface_handling": 6,
                        "observation_reading": 2.5, "state_tracking": "3",
                        "workflow_compliance": True, "error_recovery": 4})
    got = parse("thinking... " + reply)
    assert got["judged_error_recovery"] == 4
    assert sum(not math.isnan(v) for v in got.values()) == 1


def test_the_report_gives_the_judged_capabilities_per_arm_with_intervals(judge, tmp_path):
    pytest.importorskip("torch")
    from tests.cli import hscale

    result = hscale("evaluate", "hscale-tiny", "--harnesses", "base+in_space", "--tasks", "2",
                    "--out", tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    (frame,) = [pd.read_parquet(p) for p in (tmp_path / "runs").rglob("eval.parquet")]
    assert frame[list(COLUMNS)].notna().all().all()
    assert len(judge.asked) == len(frame)
    from hscale.analysis import load_results

    # internal: tests the behaviour tables' building blocks
    from hscale.analysis._behaviour import behaviour_frame

    data = behaviour_frame(load_results(tmp_path / "runs"))
    judged = data[data.measure.str.contains("judged")]
    assert set(judged.measure) == {f"{c.removeprefix('judged_').replace('_', ' ')} "
                                   "(judged, 1-5)" for c in COLUMNS}
    assert ((judged["mean"] >= 1) & (judged["mean"] <= 5)).all()
    assert judged[["lo", "hi"]].notna().all().all()


def test_a_noisy_episodes_error_is_seen_by_the_judge(judge):
    task = BuiltinWorld().tasks(3, 0)[2]
    harness = Harness.from_label("S0-T0-O0-C0-W0")
    for seed in range(20):
        ep = run_episode(NoisyOracle(task, harness.fresh(), 0.6, seed), harness.fresh(), task)
        if any(not r.ok for _, r in ep.tool_calls):
            assert behaviour(ep)["judged_error_recovery"] == 2
            return
    pytest.skip("no seed gave a tool error")


def test_the_embedded_trainers_evaluation_judges_its_episodes_in_parallel(judge, tmp_path):
    pytest.importorskip("torch")
    import yaml

    from hscale.contracts import Manifest

    # internal: drives the embedded Trainer directly
    from hscale.train.embedded._trainer import Trainer
    from hscale.train.planning import plan

    spec = tmp_path / "judged.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "judged", "model": "hscale-test",
        "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
        "algorithm": {"name": "grpo", "tasks_per_step": 2, "rollouts": 2, "lr": 1e-3},
        "steps": 1, "seeds": [0],
        "evaluation": {"in_space": 18, "out_of_space": [], "runs": 1, "tasks": 1, "episodes": 4,
                       "base_model": False},
        "arms": {"single": {"train": "single", "assignment": {"mode": "repeat", "k": 1}}}}))
    (item,) = plan(spec, tmp_path / "runs")
    Trainer(item.path, Manifest.read(item.path)).run()
    frame = pd.read_parquet(item.path / "eval.parquet")
    assert frame[list(COLUMNS)].notna().all().all() and len(judge.asked) == len(frame)
