"""hscale's agent loop through veRL's default worker path: the TransferQueue (v1) trainer's
AgentLoopWorkerTQ runs a prompt's sessions and post-processes their outputs (every context
segment a row), then the trainer's GRPO step gives every segment its session's advantage.
Full, window and compact context, at a roomy and a tight response budget."""

from __future__ import annotations

import asyncio
import os

import pytest

pytest.importorskip("verl")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import verl  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from transformers import LlamaConfig  # noqa: E402
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker  # noqa: E402
from verl.protocol import DataProto  # noqa: E402
from verl.trainer.ppo.v1 import agent_loop_tq  # noqa: E402
from verl.trainer.ppo.v1.utils import compute_advantage_for_multi_trajectories  # noqa: E402
from verl.utils.config import omega_conf_to_dataclass  # noqa: E402

import hscale.harness.verl_agent_loop as vl  # noqa: E402
from hscale.harness import DoNothing, Harness, Oracle  # noqa: E402
from tests.harness.test_verl_agent_loop import (  # noqa: E402
    COMPACT_VERIFY,
    FULL,
    WINDOW_PLAN,
    PerRequestServer,
    chat_tokenizer,
    row_kwargs,
    two_tasks,
)

N = 4  # sessions a prompt: solving and failing alternate


@pytest.fixture(scope="module")
def tokenizer():
    return chat_tokenizer()


@pytest.fixture(scope="module")
def tasks():
    return two_tasks()


def worker_config(tmp_path, tokenizer, response_length: int):
    model = tmp_path / "model"  # veRL's HFModelConfig loads the tokenizer and config here
    tokenizer.save_pretrained(model)
    LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                num_hidden_layers=1, num_attention_heads=2,
                architectures=["LlamaForCausalLM"]).save_pretrained(model)
    cfg = OmegaConf.load(os.path.join(os.path.dirname(verl.__file__), "trainer", "config",
                                      "_generated_ppo_trainer.yaml"))
    rollout = cfg.actor_rollout_ref.rollout
    cfg.actor_rollout_ref.model.path = str(model)
    rollout.name, rollout.n = "vllm", N
    rollout.prompt_length, rollout.response_length = 4096, response_length
    rollout.agent.agent_loop_config_path = str(vl.write_agent_loop_config(tmp_path / "a.yaml"))
    cfg.transfer_queue.enable = True  # as veRL's TaskRunnerV1 sets it
    return cfg


@pytest.mark.parametrize("label", [FULL, WINDOW_PLAN, COMPACT_VERIFY])
@pytest.mark.parametrize("response_length", [512, 4096])
def test_the_transfer_queue_worker_trains_every_segment_with_its_sessions_advantage(
        tokenizer, tasks, tmp_path, monkeypatch, label, response_length):
    puts, statuses = [], []

    async def kv_put(key, partition_id, tag):
        statuses.append(tag["status"])

    async def kv_batch_put(keys, fields, tags, partition_id):
        puts.append((keys, fields))

    monkeypatch.setattr(agent_loop_tq.tq, "async_kv_put", kv_put)
    monkeypatch.setattr(agent_loop_tq.tq, "async_kv_batch_put", kv_batch_put)
    task, made = tasks["answer"], []

    def policy():
        made.append(1)
        return Oracle(task, Harness.from_name(label)) if len(made) % 2 else DoNothing()

    worker = object.__new__(agent_loop_tq.AgentLoopWorkerTQ.__ray_actor_class__)
    AgentLoopWorker.__init__(worker, worker_config(tmp_path, tokenizer, response_length),
                             llm_client=PerRequestServer(tokenizer, policy))
    prompt = {**row_kwargs(task, label), "uid": "u1", "global_steps": 1}
    asyncio.run(worker._run_prompt(prompt, {"temperature": 1.0, "logprobs": True},
                                   {"step": 1, "sample_index": 0, "rollout_n": 0,
                                    "validate": False}))
    assert statuses == ["running", "finished"]
    keys = [k for ks, _ in puts for k in ks]
    rows = [{k: f[k][i] for k in ("uid", "response_mask", "rm_scores", "rollout_log_probs")}
            for ks, f in puts for i in range(len(ks))]
    sessions = {k.rsplit("_", 1)[0] for k in keys}
    assert len(sessions) == N and len(keys) >= N
    if label != FULL and response_length == 4096:
        assert len(keys) > N, "window/compact sessions train several segments"
    for row in rows:  # v1 post-processing cuts nothing: the loop keeps every sequence in budget
        assert 0 < int(row["response_mask"].sum()) <= len(row["response_mask"]) \
            <= response_length

    def pad(name):
        return torch.nn.utils.rnn.pad_sequence([r[name] for r in rows], batch_first=True)

    data = DataProto(batch=TensorDict({k: pad(k) for k in ("response_mask", "rm_scores",
                                                            "rollout_log_probs")},
                                      batch_size=len(rows)),
                     non_tensor_batch={"uid": np.array([r["uid"] for r in rows], dtype=object)})
    data.batch["token_level_rewards"] = data.batch["rm_scores"]
    algo = omega_conf_to_dataclass(OmegaConf.create(
        {"_target_": "verl.trainer.config.AlgoConfig", "adv_estimator": "grpo"}))
    data = compute_advantage_for_multi_trajectories(data, batch_keys=keys, adv_estimator="grpo",
                                                    num_repeat=N, config=algo)
    advantage = {k: data.batch["advantages"][i][data.batch["response_mask"][i].bool()]
                 .unique().tolist() for i, k in enumerate(keys)}
    last = {s: max(k for k in keys if k.rsplit("_", 1)[0] == s) for s in sessions}
    for key, value in advantage.items():
        assert value == advantage[last[key.rsplit("_", 1)[0]]]
    signs = {np.sign(advantage[k][0]) for k in last.values()}
    assert signs == {1.0, -1.0} or response_length == 512  # solvers above, failers below
