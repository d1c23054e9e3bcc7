"""The paper's profile router through a scripted judge endpoint: (When, Behavior) profiles
written from paired trajectories, several judges' top-k votes counted Borda-wise, profiles
re-anchored at every checkpoint, Rank-1 routing at evaluation; refused where it cannot run."""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler

import numpy as np
import pandas as pd
import pytest

from hscale.errors import HscaleError
from hscale.train.harness_s import PROFILES

# internal: tests the profile router's voting pieces
from hscale.train.harness_s._profiles import (
    PROFILE_SYSTEM,
    Entry,
    Tally,
    borda,
    judges,
    parse_profile,
    parse_ranking,
    record_profiles,
    vote,
)
from tests.cli import hscale
from tests.harness.helpers import judge_server, send_json
from tests.train.test_evolve import _frozen, _spec


def _ranking(model: str, names: list[str]) -> list[str] | None:
    """judge-a: names in reverse order; judge-b: the same first, the rest in order;
    judge-c: no usable reply (its vote is lost)."""
    ordered = sorted(names, reverse=True)
    if model == "judge-a":
        return ordered
    if model == "judge-b":
        return [ordered[0], *sorted(ordered[1:])]
    return None


class Judges(BaseHTTPRequestHandler):
    asked: list[tuple[str, str]] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        system, prompt = (m["content"] for m in body["messages"])
        model = body["model"]
        if system == PROFILE_SYSTEM:
            name = re.match(r"Harness (\S+) against", prompt).group(1)
            helps = "(none)" not in prompt.split("## Tasks the base harness solved")[0]
            content = json.dumps({
                "prefer": [{"when": "the task names a file", "behavior": f"{name} reads it"}]
                if helps else [],
                "avoid": [{"when": "a sum is asked", "behavior": f"{name} answers early"}]})
            type(self).asked.append((model, "profile"))
        else:
            names = re.findall(r"^- (\S+)$", prompt, re.M)
            ranking = _ranking(model, names)
            content = json.dumps({"ranking": ranking}) if ranking else "I cannot decide."
            type(self).asked.append((model, "vote"))
        send_json(self, {"choices": [{"message": {"role": "assistant", "content": content}}]})

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch):
    Judges.asked = []
    monkeypatch.setenv("HSCALE_ROUTER_JUDGES", "judge-a,judge-b,judge-c")
    with judge_server(Judges, monkeypatch, "judge-a"):
        yield Judges


def test_votes_count_borda_wise_and_bad_replies_are_dropped():
    names = ["a", "b", "c"]
    assert list(borda([["c", "a"], ["c", "b", "a"]], names, 2)) == [1.0, 1.0, 4.0]
    assert parse_ranking('{"ranking": ["c", "x", "c", "a"]}', names) == ["c", "a"]
    assert parse_ranking("no idea", names) == []
    entries = parse_profile(json.dumps({"prefer": [{"when": "w", "behavior": "b"}, "junk"],
                                        "avoid": [{"when": 1, "behavior": "b"}]}))
    assert entries == (Entry("prefer", "w", "b"),)


def test_several_judges_vote_through_the_endpoint(endpoint):
    voters = judges()
    assert [name for name, _ in voters] == ["judge-a", "judge-b", "judge-c"]
    profiles = {"evo/a": (), "evo/b": (Entry("prefer", "w", "b"),), "evo/c": ()}
    tally = Tally()
    points = vote(voters, "sum the numbers in a.txt", "sum", profiles, 2, tally)
    assert list(points) == [1.0, 1.0, 4.0]  # c first for both; b second for one, a for one
    assert tally.votes == 2 and tally.lost == 1


def test_the_judges_of_a_vote_are_asked_at_once(monkeypatch):
    """Each judge answers only once all three are asking (a barrier): asked one after
    another, every vote would be lost."""
    import threading

    barrier = threading.Barrier(3, timeout=5)

    class Together(Judges):
        def do_POST(self) -> None:  # noqa: N802
            try:
                barrier.wait()
            except threading.BrokenBarrierError:
                self.send_error(503)
                return
            super().do_POST()

    monkeypatch.setenv("HSCALE_ROUTER_JUDGES", "judge-a,judge-b,judge-a")
    with judge_server(Together, monkeypatch, "judge-a"):
        tally = Tally()
        points = vote(judges(), "sum the numbers in a.txt", "sum",
                      {"evo/a": (), "evo/b": (), "evo/c": ()}, 2, tally)
    assert tally.votes == 3 and tally.lost == 0
    assert list(points) == [1.0, 2.0, 6.0]  # c first for all; b second for two, a for one


def test_a_resumed_run_records_a_checkpoints_profiles_once(tmp_path):
    """A run killed after the judge wrote checkpoint 2's profiles resumes from checkpoint 1
    and writes 1 and 2 again: each checkpoint's lines are in the file once, the latest."""
    path = tmp_path / PROFILES
    old, new = ({"a": [Entry("prefer", f"when {w}", "b")]} for w in ("old", "new"))
    for step in (0, 1, 2):
        record_profiles(path, old, step)
    record_profiles(path, new, 1)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["step"], x["when"]) for x in lines] == [(0, "when old"), (1, "when new")]


def test_no_judge_means_no_voters(monkeypatch):
    monkeypatch.delenv("HSCALE_JUDGE_URL", raising=False)
    assert judges() == []


def _profiles_spec(tmp_path, verl: bool = False):
    pool = _frozen(tmp_path)
    return pool, _spec(tmp_path, "pool.json", "profiles", {"every": 1}, verl=verl)


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_profiles_are_re_anchored_at_every_checkpoint_and_rank_1_routes_evaluation(
        endpoint, tmp_path):
    pytest.importorskip("torch")
    from hscale.analysis import build_report, load_results
    from hscale.contracts import Manifest

    # internal: drives the embedded Trainer directly
    from hscale.train.embedded._trainer import Trainer
    from hscale.train.planning import plan

    pool, spec = _profiles_spec(tmp_path)
    (item,) = plan(spec, tmp_path / "runs")
    trainer = Trainer(item.path, Manifest.read(item.path))
    trainer.run()
    lines = [json.loads(x) for x in (item.path / "router_profiles.jsonl").read_text()
             .splitlines()]
    assert sorted({x["step"] for x in lines}) == [0, 1, 2]  # written again at each checkpoint
    assert {x["harness"] for x in lines} == set(pool.names)
    assert all(x["kind"] in ("prefer", "avoid") and x["when"] for x in lines)
    assert set(trainer.router.profiles) == set(pool.names)
    train = pd.read_parquet(item.path / "train.parquet")
    rescued = train[train.rescue_groups > 0]
    assert len(rescued) and (rescued.router_votes > 0).all()
    assert (rescued.router_votes_lost * 2 == rescued.router_votes).all()  # judge-c: none
    frame = pd.read_parquet(item.path / "eval.parquet")
    routed = frame[frame.setting == "routed"]
    assert sorted(set(routed.step)) == [0, 1, 2]
    assert set(routed.harness) == {max(pool.names)}  # both voters put it first for every task
    held_out = frame[frame.setting == "base"]
    assert set(routed.task_id) >= set(held_out.task_id)
    results = load_results(tmp_path / "runs")
    assert "routed" not in set(results.episodes.setting.astype(str))
    report = build_report(results, tmp_path / "report", n_boot=50)
    table = {t.name: t for t in report.tables}["rank1_routing"].data
    assert table["step"].tolist() == [2] and max(pool.names) in table["picks"].iloc[0]
    assert np.isfinite(table["base_harness_paired"]).all()


def test_a_profiles_arm_without_judges_stops_before_writing(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.delenv("HSCALE_JUDGE_URL", raising=False)
    _, spec = _profiles_spec(tmp_path)
    result = hscale("run", spec, "--out", tmp_path / "runs")
    assert result.returncode == 2 and "router profiles needs judges" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_veRL_refuses_the_profiles_router_without_judges(tmp_path, monkeypatch):
    from hscale.contracts import Manifest
    from hscale.train.backends.verl.rescue import check_rescue
    from hscale.train.planning import plan

    monkeypatch.delenv("HSCALE_JUDGE_URL", raising=False)
    _, spec = _profiles_spec(tmp_path)
    (item,) = plan(spec, tmp_path / "runs")
    with pytest.raises(HscaleError, match="router profiles needs judges"):
        check_rescue([Manifest.read(item.path)])


def test_veRLs_routing_rows_are_the_embedded_ones_and_read_back_under_their_pick(
        endpoint, tmp_path):
    pytest.importorskip("verl")
    from hscale.contracts import Manifest
    from hscale.train.backends.verl import import_validation, prepare_verl_run
    from hscale.train.planning import plan, write_plan

    # internal: tests the workload's job builders
    from hscale.train.planning._workload import routed_jobs

    pool, spec = _profiles_spec(tmp_path, verl=True)

    (item,) = plan(spec, tmp_path / "runs")
    write_plan([item])
    manifest = Manifest.read(item.path)
    prepared = prepare_verl_run(item.path, manifest, validate=False)
    # the rollout workers record the judges' profiles in verl/, imported beside eval.parquet
    assert (f"+ray_kwargs.ray_init.runtime_env.env_vars.HSCALE_ROUTER_PROFILES="
            f"{item.path / 'verl' / PROFILES}") in prepared["overrides"]
    val = pd.read_parquet(prepared["val"])
    info = [json.loads(x) if isinstance(x, str) else dict(x) for x in val.extra_info]
    routed = [i for i, x in enumerate(info) if x.get("route")]
    assert [(info[i]["decoding"], info[i]["run"], info[i]["task_id"]) for i in routed] == [
        (j.decoding, j.run, j.task.task_id) for j in routed_jobs(manifest)]
    assert all(x.get("routing") for x in info)  # every row says its pick (-1: none)
    dumps = item.path / "verl" / "validation"
    dumps.mkdir(parents=True)
    lines = [{"input": "", "output": "", "score": 1.0, "step": 2, "success": 1.0,
              "routed_to": 2.0 if info[i].get("route") else -1.0,
              "gts": val.reward_model.iloc[i]["ground_truth"]} for i in range(len(val))]
    (dumps / "2.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    rows = import_validation(item.path, manifest)
    assert set(rows[rows.setting == "routed"].harness) == {pool.names[2]}
    assert set(rows[rows.setting == "base"].harness) == {manifest.train_harnesses[0]}
