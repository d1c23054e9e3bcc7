"""The embedded trainer's RL math is veRL's, bit for bit: GRPO advantages over groups of any
sizes (ties, single rollouts, unordered ids), GAE over masks with observation gaps, the
dual-clipped policy loss with rollout-correction weights, and the clipped value loss, each
against ``verl.trainer.ppo.core_algos`` on random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")
core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")

# internal: the trainer's own RL math, held to veRL's
import hscale.train.embedded._objectives as objectives  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None)
rewards_of = st.lists(st.sampled_from([0.0, 1.0, 0.5, -1.0, 0.25, 3.0]), min_size=1,
                      max_size=24)


def actor_config(low: float, high: float):
    from verl.workers.config.actor import ActorConfig

    return ActorConfig(strategy="fsdp", clip_ratio=low, clip_ratio_low=low,
                       clip_ratio_high=high, ppo_micro_batch_size_per_gpu=1,
                       ppo_mini_batch_size=1, rollout_n=1, use_dynamic_bsz=False)


@SETTINGS
@given(rewards=rewards_of, data=st.data())
def test_grpo_advantages_are_verls(rewards, data):
    groups = data.draw(st.lists(st.integers(0, 5), min_size=len(rewards),
                                max_size=len(rewards)))
    r = torch.tensor(rewards, dtype=torch.float32)[:, None]
    theirs, _ = core_algos.compute_grpo_outcome_advantage(
        r, torch.ones_like(r), np.asarray(groups, dtype=object))
    assert torch.equal(objectives.grpo_advantages(rewards, groups), theirs[:, 0])


def _tensors(seed: int, rows: int, length: int, low: float = -2.0, high: float = 2.0):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(rows, length, generator=generator) * (high - low) + low


@SETTINGS
@given(seed=st.integers(0, 2**31), rows=st.integers(1, 6), length=st.integers(2, 30),
       gamma=st.sampled_from([1.0, 0.99, 0.9]), lam=st.sampled_from([1.0, 0.95, 0.5]))
def test_gae_is_verls(seed, rows, length, gamma, lam):
    rewards, values = _tensors(seed, rows, length), _tensors(seed + 1, rows, length)
    mask = (_tensors(seed + 2, rows, length, 0.0, 1.0) > 0.3).float()
    mask[0, :2] = 1.0  # at least two tokens to whiten over
    theirs = core_algos.compute_gae_advantage_return(rewards, values, mask,
                                                     torch.tensor(gamma), torch.tensor(lam))
    ours = objectives.gae(rewards, values, mask, gamma, lam)
    assert torch.equal(ours[0], theirs[0]) and torch.equal(ours[1], theirs[1])


@SETTINGS
@given(seed=st.integers(0, 2**31), length=st.integers(1, 200),
       clip=st.sampled_from([(0.2, 0.28), (0.2, 0.2), (0.1, 0.5)]), weighted=st.booleans())
def test_the_policy_loss_is_verls(seed, length, clip, weighted):
    old = _tensors(seed, 1, length, -6.0, 0.0)
    new = (old + _tensors(seed + 1, 1, length, -1.5, 1.5)).requires_grad_()
    advantages = _tensors(seed + 2, 1, length)
    weights = _tensors(seed + 3, 1, length, 0.0, 2.0) if weighted else None
    ones = torch.ones(1, length)
    theirs, info = core_algos.compute_policy_loss_vanilla(
        old, new, advantages, ones, "token-mean", actor_config(*clip),
        rollout_is_weights=weights)
    ours, clip_frac = objectives.policy_loss(old, new, advantages, ones, *clip, weights=weights)
    assert torch.equal(ours, theirs) and clip_frac == info["actor/pg_clipfrac"]
    (their_grad,) = torch.autograd.grad(theirs, new)
    (our_grad,) = torch.autograd.grad(ours, new)
    assert torch.equal(our_grad, their_grad)


@SETTINGS
@given(seed=st.integers(0, 2**31), length=st.integers(1, 200),
       clip=st.sampled_from([0.5, 0.2, 2.0]))
def test_the_value_loss_is_verls(seed, length, clip):
    predicted, returns = _tensors(seed, 1, length), _tensors(seed + 1, 1, length)
    old = predicted + _tensors(seed + 2, 1, length, -1.0, 1.0)
    ones = torch.ones(1, length)
    theirs = core_algos.compute_value_loss(predicted, returns, old, ones, clip, "token-mean")
    theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    assert torch.equal(objectives.value_loss(predicted, returns, old, ones, clip), theirs)


def test_whitening_one_token_fails_as_verls_does():
    one = torch.tensor([[0.0, 1.0]])
    with pytest.raises(ValueError):
        core_algos.compute_gae_advantage_return(one, one, torch.tensor([[0.0, 1.0]]),
                                                torch.tensor(1.0), torch.tensor(1.0))
    with pytest.raises(ValueError):
        objectives.gae(one, one, torch.tensor([[0.0, 1.0]]), 1.0, 1.0)
