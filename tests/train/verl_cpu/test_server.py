"""The ``hscale_hf`` model server without Ray: veRL's token-in, token-out ``generate``
(token ids, log-probs under the sampling distribution, stop reason), greedy decoding,
the token budget, end-of-turn stops, sampling filters, and weights sent by the trainer."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("verl")
torch = pytest.importorskip("torch")

from omegaconf import OmegaConf  # noqa: E402

# internal: tests the CPU server's device picker
from hscale.train.backends.verl.cpu.server import HFServer, _pick  # noqa: E402

PROMPT = [256, 117, 115, 101, 114, 10, 104, 105, 257, 10, 256, 97, 10]


@pytest.fixture(scope="module")
def server(tiny_model):
    config = OmegaConf.create({"_target_": "verl.workers.config.RolloutConfig",
                               "name": "hscale_hf", "prompt_length": 64,
                               "response_length": 32, "max_model_len": 96})
    return HFServer(config, {"path": str(tiny_model)})


def generate(server, **params):
    return asyncio.run(server.generate(PROMPT, {"logprobs": True, **params}, "r1"))


def test_log_probs_are_the_models_under_the_sampling_temperature(server):
    out = generate(server, temperature=0.7, max_tokens=8, seed=3)
    assert out.stop_reason == "completed" and 1 <= len(out.token_ids) <= 8
    ids = torch.tensor([PROMPT + out.token_ids])
    with torch.no_grad():
        logits = server.model(input_ids=ids).logits[0, len(PROMPT) - 1:-1] / 0.7
    expect = torch.log_softmax(logits, -1).gather(1, torch.tensor(out.token_ids)[:, None])
    assert out.log_probs == pytest.approx(expect[:, 0].tolist(), abs=1e-4)


def test_greedy_decoding_repeats_and_a_seed_fixes_sampling(server):
    assert generate(server, temperature=0, max_tokens=6).token_ids == \
        generate(server, temperature=0, max_tokens=6).token_ids
    assert generate(server, temperature=1.0, max_tokens=6, seed=5).token_ids == \
        generate(server, temperature=1.0, max_tokens=6, seed=5).token_ids


def test_the_budget_is_the_smaller_of_max_tokens_and_the_models_room(server):
    assert len(generate(server, temperature=1.0, max_tokens=5, ignore_eos=True).token_ids) == 5
    # no max_tokens: the response length (32) caps it; 90 prompt tokens leave 6 of 96
    long = asyncio.run(server.generate(PROMPT * 7, {"ignore_eos": True}, "r2"))
    assert len(long.token_ids) == 96 - 7 * len(PROMPT) and long.log_probs is None
    with pytest.raises(ValueError, match="no room"):
        asyncio.run(server.generate(PROMPT * 8, {}, "r3"))


def test_an_end_of_turn_token_stops_generation(server):
    end = 257  # <|im_end|>
    assert end in server.stop_ids

    def prefer_end(module, inputs, logits):  # the model's logits, <|im_end|> far ahead
        logits = logits.clone()
        logits[..., end] += 1e4
        return logits

    hook = server.model.get_output_embeddings().register_forward_hook(prefer_end)
    try:
        assert generate(server, temperature=1.0, max_tokens=10).token_ids == [end]
        assert len(generate(server, temperature=1.0, max_tokens=4,
                            ignore_eos=True).token_ids) == 4
    finally:
        hook.remove()


def test_top_k_and_top_p_keep_the_likeliest_tokens():
    logits = torch.tensor([0.0, 3.0, 1.0, 2.0])
    generator = torch.Generator().manual_seed(0)
    assert {_pick(logits, 1.0, 1.0, 1, generator)[0] for _ in range(20)} == {1}
    assert {_pick(logits, 1.0, 0.5, -1, generator)[0] for _ in range(20)} == {1}
    assert {_pick(logits, 1.0, 1.0, 2, generator)[0] for _ in range(200)} == {1, 3}
    token, logprob = _pick(logits, 0.0, 1.0, -1, None)
    assert token == 1 and logprob == pytest.approx(float(torch.log_softmax(logits, -1)[1]))


def test_weights_from_the_trainer_replace_the_models(server):
    before = server.stats()["checksum"]
    named = [(n, torch.zeros_like(p)) for n, p in server.model.named_parameters()]
    saved = {n: p.detach().clone() for n, p in server.model.named_parameters()}
    try:
        assert server.load_weights(named, global_steps=3) == len(named)
        assert server.stats() == {"requests": server.requests, "global_steps": 3,
                                  "checksum": 0.0}
        assert generate(server, temperature=0, max_tokens=1).extra_fields["global_steps"] == 3
    finally:
        server.load_weights(list(saved.items()))
    assert server.stats()["checksum"] == pytest.approx(before)
