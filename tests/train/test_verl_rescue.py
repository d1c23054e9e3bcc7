"""Harness-S on veRL, on CPU: veRL's TransferQueue rollout worker with hscale's rescue mixed
in, a fake generate (scripted policies behind veRL's server interface), veRL's DataProto and
its rollout-correction weights. A zero-signal group is replaced by routed siblings; a group
with signal is untouched; the correction weights stay within [0, 2]."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("verl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.trainer.ppo.rollout_corr_helper import (  # noqa: E402
    compute_rollout_correction_and_add_to_batch,
)
from verl.trainer.ppo.v1 import agent_loop_tq  # noqa: E402

from hscale.harness import DoNothing, Harness, Oracle, factor_space  # noqa: E402

# internal: tests the veRL dump importers
from hscale.train.backends.verl._dumps import import_profiles  # noqa: E402

# internal: tests the rescue module's class table
from hscale.train.backends.verl.rescue import _classes  # noqa: E402

RESCUE, ROUTE = "rescue", "route"  # the rows' extra_info keys (hscale.contracts.RowInfo)
from hscale.train.harness_s import PROFILES, PROFILES_ENV  # noqa: E402
from tests.harness.test_verl_agent_loop import (  # noqa: E402
    FULL,
    PerRequestServer,
    chat_tokenizer,
    row_kwargs,
    two_tasks,
)
from tests.harness.test_verl_worker import worker_config  # noqa: E402

N = 4
# siblings that differ from h0 only where the scripted oracle's turns do not (prompt,
# observation), so one oracle script solves the task under each of them
POOL = ["S1-T0-O0-C0-W0", "S2-T0-O0-C0-W0", "S0-T0-O1-C0-W0", "S0-T0-O2-C0-W0",
        "S1-T0-O1-C0-W0"]


@pytest.fixture(scope="module")
def tokenizer():
    return chat_tokenizer()


@pytest.fixture(scope="module")
def task():
    return two_tasks()["answer"]


def rescue_row(task, router: str, index: int = 0) -> dict:
    row = row_kwargs(task, FULL)
    factors = {f.name: list(f.levels) for f in factor_space().factors}
    info = {"router": router, "pool": POOL, "base": FULL, "factors": factors, "seed": 7,
            "measure_on": {"benchmark": {"name": "builtin", "tasks": 20, "seed": 0},
                           "count": 3},
            "every": 10}
    return {**row, "extra_info": {**row["extra_info"], RESCUE: info, "index": index}}


def run_worker(tmp_path, tokenizer, make_policy, prompts, monkeypatch, validate=False):
    puts = []

    async def kv_put(key, partition_id, tag):
        pass

    async def kv_batch_put(keys, fields, tags, partition_id):
        puts.append((keys, fields))

    monkeypatch.setattr(agent_loop_tq.tq, "async_kv_put", kv_put)
    monkeypatch.setattr(agent_loop_tq.tq, "async_kv_batch_put", kv_batch_put)
    cfg = worker_config(tmp_path, tokenizer, 4096)
    cfg.actor_rollout_ref.rollout.n = N
    worker = object.__new__(_classes()[0])
    AgentLoopWorker.__init__(worker, cfg, llm_client=PerRequestServer(tokenizer, make_policy))
    for uid, row in prompts:
        asyncio.run(worker._run_prompt({**row, "uid": uid, "global_steps": 1},
                                       {"temperature": 1.0, "logprobs": True},
                                       {"step": 1, "sample_index": 0, "rollout_n": 0,
                                        "validate": validate}))
    return {key: {name: fields[name][i] for name in ("extra_fields", "rm_scores",
                                                      "response_mask", "rollout_log_probs")}
            for keys, fields in puts for i, key in enumerate(keys)}


def test_a_zero_signal_group_is_replaced_and_a_group_with_signal_is_not(
        tmp_path, tokenizer, task, monkeypatch):
    made = []

    def policy():  # the first group fails whole; later rollouts alternate solve / fail
        made.append(1)
        if len(made) <= N:
            return DoNothing()
        if len(made) <= 2 * N:  # the rescue rollouts
            return Oracle(task, Harness.from_name(FULL))
        return Oracle(task, Harness.from_name(FULL)) if len(made) % 2 else DoNothing()

    rows = run_worker(tmp_path, tokenizer, policy,
                      [("u1", rescue_row(task, "random")),
                       ("u2", rescue_row(task, "random", index=1))], monkeypatch)
    assert sorted(rows) == [f"{u}_{s}_0" for u in ("u1", "u2") for s in range(N)]
    rescued = [rows[f"u1_{s}_0"] for s in range(N)]
    assert all(r["extra_fields"]["hscale_rescued"] == 1 for r in rescued)
    assert {r["extra_fields"]["hscale_harness"] for r in rescued} <= set(POOL)
    assert len({r["extra_fields"]["hscale_harness"] for r in rescued}) == N  # N siblings
    assert all(float(r["rm_scores"].sum()) == 1.0 for r in rescued)
    untouched = [rows[f"u2_{s}_0"] for s in range(N)]
    assert all("hscale_rescued" not in r["extra_fields"] for r in untouched)
    assert {r["extra_fields"]["hscale_harness"] for r in untouched} == {FULL}
    assert sorted(float(r["rm_scores"].sum()) for r in untouched) == [0.0, 0.0, 1.0, 1.0]

    # veRL's rollout correction over the rescued rows: w = clip(pi_old / q, 0, 2), detached
    def pad(name):
        return torch.nn.utils.rnn.pad_sequence([r[name] for r in rescued], batch_first=True)

    q = pad("rollout_log_probs")
    mask = pad("response_mask")
    shift = torch.from_numpy(np.random.default_rng(0).uniform(-1.5, 1.5, q.shape)).float()
    batch = DataProto(batch=TensorDict({"old_log_probs": q + shift, "rollout_log_probs": q,
                                        "response_mask": mask}, batch_size=len(rescued)))
    batch, _ = compute_rollout_correction_and_add_to_batch(
        batch, {"rollout_is": "token", "rollout_is_threshold": 2.0})
    weights = batch.batch["rollout_is_weights"][mask.bool()]
    assert float(weights.min()) >= 0.0 and float(weights.max()) <= 2.0
    expected = torch.exp(shift)[mask.bool()].clamp(max=2.0)
    assert torch.allclose(weights, expected, atol=1e-5)
    assert (weights < 1).any() and (weights == 2.0).any()  # both sides of the clip are seen


def test_the_rule_router_measures_the_siblings_once_per_worker(
        tmp_path, tokenizer, task, monkeypatch):
    measured = []

    def policy():
        measured.append(1)
        return DoNothing()  # nothing ever succeeds: every group is zero-signal

    rows = run_worker(tmp_path, tokenizer, policy,
                      [("u1", rescue_row(task, "rule")), ("u2", rescue_row(task, "rule", 1))],
                      monkeypatch)
    # two groups of N, two rescues of N, and one measurement: every sibling on 3 tasks
    assert len(measured) == 2 * N + 2 * N + len(POOL) * 3
    assert all(rows[f"u{u}_{s}_0"]["extra_fields"]["hscale_rescued"] == 1
               for u in (1, 2) for s in range(N))


def _judges(asked: list):
    """A judge endpoint's handler: a profile for every sibling, votes by _ranking."""
    import json as json_module
    import re
    from http.server import BaseHTTPRequestHandler

    # internal: tests the profile router's voting pieces
    from hscale.train.harness_s._profiles import PROFILE_SYSTEM
    from tests.harness.helpers import send_json
    from tests.train.test_profile_router import _ranking

    class Judges(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json_module.loads(self.rfile.read(int(self.headers["Content-Length"])))
            system, prompt = (m["content"] for m in body["messages"])
            if system == PROFILE_SYSTEM:
                asked.append(("profile", prompt))
                content = json_module.dumps({"prefer": [{"when": "w", "behavior": "b"}]})
            else:
                asked.append(("vote", prompt))
                names = re.findall(r"^- (\S+)$", prompt, re.M)
                content = json_module.dumps({"ranking": _ranking(body["model"], names)})
            send_json(self, {"choices": [{"message": {"role": "assistant",
                                                      "content": content}}]})

        def log_message(self, *args) -> None:
            pass

    return Judges


def test_the_profiles_router_writes_profiles_from_the_workers_trajectories_and_votes(
        tmp_path, tokenizer, task, monkeypatch):
    """veRL's worker measures the pool and the base harness, its first judge writes a profile
    per sibling from the paired trajectories, and the judges' votes pick the rescue."""
    import re

    from tests.harness.helpers import judge_server

    asked = []
    made = []

    def policy():  # the group fails whole; measured episodes alternate solve / fail
        made.append(1)
        if len(made) <= N:
            return DoNothing()
        return Oracle(task, Harness.from_name(FULL)) if len(made) % 3 == 0 else DoNothing()

    monkeypatch.setenv("HSCALE_ROUTER_JUDGES", "judge-a,judge-a")  # two votes of one order
    recorded = tmp_path / "verl" / PROFILES  # where the backend points the workers
    recorded.parent.mkdir()
    monkeypatch.setenv(PROFILES_ENV, str(recorded))
    with judge_server(_judges(asked), monkeypatch, "judge-a"):
        row = rescue_row(task, "profiles")  # measured on the first 3 tasks: task among them
        row["extra_info"][RESCUE]["measure_on"]["benchmark"]["tasks"] = 0
        rows = run_worker(tmp_path, tokenizer, policy, [("u1", row)], monkeypatch)
    # the profiles as the embedded trainer records them: step 1 is in the checkpoint 0 epoch
    lines = [json.loads(x) for x in recorded.read_text().splitlines()]
    assert lines == [{"step": 0, "harness": name, "kind": "prefer", "when": "w",
                      "behavior": "b"} for name in POOL]
    import_profiles(tmp_path)
    assert (tmp_path / PROFILES).read_text() == recorded.read_text()
    profiles = [p for kind, p in asked if kind == "profile"]
    assert sorted(re.match(r"Harness (\S+) against", p).group(1) for p in profiles) == \
        sorted(POOL)
    assert any("### base harness\n<<<\n[user]" in p for p in profiles)  # trajectories shown
    assert sum(kind == "vote" for kind, _ in asked) == 2  # one vote a judge
    rescued = {rows[f"u1_{s}_0"]["extra_fields"]["hscale_harness"] for s in range(N)}
    assert rescued == set(sorted(POOL, reverse=True)[:N])  # the judges' top N


def test_rank_1_routing_rows_run_under_the_judges_first_pick_and_read_back(
        tmp_path, tokenizer, task, monkeypatch):
    from tests.harness.helpers import judge_server

    row = rescue_row(task, "profiles")
    info = dict(row["extra_info"])
    route = info.pop(RESCUE)
    routed = {**row, "extra_info": {**info, ROUTE: route, "routing": True,
                                    "setting": "routed"}}
    again = {**routed, "extra_info": {**routed["extra_info"], "index": 5, "run": 1}}
    plain = {**row, "extra_info": {**info, "routing": True, "setting": "base"}}
    monkeypatch.setenv("HSCALE_ROUTER_JUDGES", "judge-a")
    asked = []
    with judge_server(_judges(asked), monkeypatch, "judge-a"):
        rows = run_worker(tmp_path, tokenizer, DoNothing,
                          [("r", routed), ("r2", again), ("p", plain)], monkeypatch,
                          validate=True)
    first = sorted(POOL, reverse=True)[0]
    for uid in ("r", "r2"):  # both runs of the task under the judges' first
        assert rows[f"{uid}_0_0"]["extra_fields"]["hscale_harness"] == first
        extra = rows[f"{uid}_0_0"]["extra_fields"]["reward_extra_info"]
        assert extra["routed_to"] == float(POOL.index(first))
    assert rows["p_0_0"]["extra_fields"]["reward_extra_info"]["routed_to"] == -1.0
    assert rows["p_0_0"]["extra_fields"]["hscale_harness"] == FULL
    assert any(kind == "profile" for kind, _ in asked)  # measured and profiled first
