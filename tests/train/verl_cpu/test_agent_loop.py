"""veRL's rollout side on the CPU without its trainer (slow: a local Ray): the ``hscale_hf``
replica launched by veRL's ``LLMServerManager`` and veRL's ``AgentLoopManager`` running
hscale's agent loop (hscale.harness.verl_agent_loop) against it, two harnesses, two rollouts a
row; then the worker-side adapter sends new weights to the replica's server, as the
trainer's weight sync does. What a user runs to debug an agent loop on a laptop."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("verl")
pytest.importorskip("torch")
ray = pytest.importorskip("ray")

import numpy as np  # noqa: E402
import verl  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

import hscale.harness.verl_agent_loop as vl  # noqa: E402
from hscale.harness import BuiltinWorld  # noqa: E402
from hscale.train.backends.verl.cpu import ENV, ROLLOUT  # noqa: E402

pytestmark = pytest.mark.slow

LABELS = ["S0-T0-O0-C0-W0", "S1-T1-O1-C1-W1"]
N = 2


@pytest.fixture(scope="module")
def local_ray():
    import hscale.train.backends.verl.cpu.plugin  # noqa: F401 -- here veRL is imported already

    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {**ENV, "OMP_NUM_THREADS": "1"}})
    try:
        yield
    finally:
        ray.shutdown()


def config(tmp_path, model):
    cfg = OmegaConf.load(os.path.join(os.path.dirname(verl.__file__), "trainer", "config",
                                      "_generated_ppo_trainer.yaml"))
    cfg.actor_rollout_ref.model.path = str(model)
    rollout = cfg.actor_rollout_ref.rollout
    rollout.name, rollout.n, rollout.nnodes, rollout.n_gpus_per_node = ROLLOUT, N, 1, 1
    rollout.tensor_model_parallel_size = 1
    rollout.prompt_length, rollout.response_length, rollout.max_model_len = 2048, 96, 2144
    rollout.agent.num_workers = 1
    rollout.agent.default_agent_loop = vl.AGENT_NAME
    rollout.agent.agent_loop_config_path = str(vl.write_agent_loop_config(tmp_path / "a.yaml"))
    return cfg


def batch(tasks):
    from verl.protocol import DataProto

    rows = vl.to_verl_rows(tasks, LABELS, "train")
    rows = rows.loc[rows.index.repeat(N)].reset_index(drop=True)  # n rollouts a row
    columns = {c: rows[c].to_numpy(dtype=object) for c in rows.columns}
    columns["raw_prompt"] = columns["prompt"]
    columns["index"] = np.array([e["index"] for e in rows.extra_info], dtype=object)
    return DataProto.from_dict(non_tensors=columns, meta_info={"global_steps": 1})


def test_verls_agent_loop_manager_runs_hscales_loop_against_the_cpu_replica(
        local_ray, tmp_path, tiny_model):
    import asyncio

    import torch
    from verl.experimental.agent_loop.agent_loop import AgentLoopManager
    from verl.workers.rollout.base import get_rollout_class
    from verl.workers.rollout.llm_server import LLMServerManager

    cfg = config(tmp_path, tiny_model)
    servers = LLMServerManager.create(config=cfg)  # standalone: no trainer worker group
    assert servers.get_addresses() == [f"{ROLLOUT}-0"]
    manager = AgentLoopManager.create(config=cfg, llm_client=servers.get_client())
    tasks = BuiltinWorld().tasks(2, 0, "train")
    out = manager.generate_sequences(batch(tasks))

    assert len(out) == len(tasks) * len(LABELS) * N
    assert sorted(set(out.non_tensor_batch["hscale_harness"])) == LABELS
    mask, responses = out.batch["response_mask"], out.batch["responses"]
    assert responses.shape[1] == 96 and mask.sum() > 0  # the model's tokens are trained
    assert out.batch["rollout_log_probs"][mask.bool()].lt(0).all()  # with their log-probs
    assert set(out.non_tensor_batch["success"].tolist()) <= {0.0, 1.0}
    server = servers.get_replicas()[0].server_handle
    stats = ray.get(server.stats.remote())
    assert stats["requests"] >= len(out)

    # the trainer's weight sync: the adapter in a trainer worker hands tensors to the server
    adapter = get_rollout_class(ROLLOUT, "async")(
        config=cfg.actor_rollout_ref.rollout, model_config=cfg.actor_rollout_ref.model)
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    zeros = ((n, torch.zeros_like(p)) for n, p in model.named_parameters())
    asyncio.run(adapter.update_weights(zeros, global_steps=7))
    after = ray.get(server.stats.remote())
    assert after["checksum"] == 0.0 and after["global_steps"] == 7


def test_a_black_box_row_runs_the_real_cli_against_the_rollout_servers(local_ray, tmp_path,
                                                                       tiny_model):
    """A bb/ validation row: Claude Code through hscale serve in front of veRL's rollout
    replica; each of its model calls is a generate on the replica, and the output is the
    last call's exact tokens with the checker's reward."""
    from verl.experimental.agent_loop.agent_loop import AgentLoopManager
    from verl.protocol import DataProto
    from verl.workers.rollout.llm_server import LLMServerManager

    from hscale.harness import HARNESSES
    from hscale.train.backends.verl.blackbox_rollout import PLAYER

    if not HARNESSES.get("bb/claude-code").installed():
        pytest.skip("bb/claude-code is not installed: hscale harness install bb/claude-code")
    for actor in ray.util.list_named_actors():  # an earlier test's replica holds the name
        if actor.startswith(f"{ROLLOUT}_server"):
            ray.kill(ray.get_actor(actor))
    cfg = config(tmp_path, tiny_model)
    rollout = cfg.actor_rollout_ref.rollout
    rollout.n, rollout.prompt_length, rollout.max_model_len = 1, 16384, 16384 + 96
    rollout.agent.agent_loop_config_path = str(vl.write_agent_loop_config(
        tmp_path / "bb.yaml", blackbox=PLAYER))
    servers = LLMServerManager.create(config=cfg)
    manager = AgentLoopManager.create(config=cfg, llm_client=servers.get_client())
    tasks = BuiltinWorld().tasks(1, 0, "eval")
    rows = vl.to_verl_rows(tasks, ["bb/claude-code"], "val")
    rows["extra_info"] = [{**e, "decoding": "greedy", "max_turns": 2} for e in rows.extra_info]
    assert rows.prompt[0] == [{"role": "user", "content": tasks[0].user_query}]
    columns = {c: rows[c].to_numpy(dtype=object) for c in rows.columns}
    columns["raw_prompt"] = columns["prompt"]
    columns["index"] = np.array([e["index"] for e in rows.extra_info], dtype=object)
    out = manager.generate_sequences(DataProto.from_dict(
        non_tensors=columns, meta_info={"global_steps": 1, "validate": True}))
    assert list(out.non_tensor_batch["hscale_harness"]) == ["bb/claude-code"]
    calls = int(out.non_tensor_batch["hscale_model_calls"][0])
    assert calls >= 1, out.non_tensor_batch["hscale_error"]
    stats = ray.get(servers.get_replicas()[0].server_handle.stats.remote())
    assert stats["requests"] >= calls  # every call the CLI made was the replica's
    assert out.batch["response_mask"].sum() > 0
    assert set(out.non_tensor_batch["success"].tolist()) <= {0.0, 1.0}
