"""GRPO and PPO updates on rolled-out episodes, with veRL's math.

Advantages (GRPO's group normalisation, GAE), the clipped policy loss (clip 0.2 / 0.28,
dual clip 3, token-mean) and the value loss are veRL's ``core_algos`` computed by
hscale.train.embedded._objectives, bit for bit. Only tokens the model wrote are in the
loss. Every segment of a rollout carries the rollout's advantage; GRPO groups are normalised
over the original rollouts, not over segments.

Groups whose rewards are all equal have zero advantage: their sequences skip the forward and
backward passes but still count in the token-mean denominator (spread over the minibatches
in proportion to their sequences), so the gradient approximates veRL's closely without paying
for tokens that contribute nothing; a batch with no signal takes no optimizer step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from hscale.harness import Episode, WordTokenizer
from hscale.train.embedded._objectives import gae, grpo_advantages, policy_loss, value_loss
from hscale.train.embedded._optimizer import AdamW
from hscale.train.policy import Sequences, TinyGPT, sequences, token_logprobs

CLIP_WEIGHT = 2.0  # Harness-S: w = clip(pi_old / q, 0, 2)
KL_ROWS = 16  # sequences the KL-to-base metric is measured on


@dataclass(frozen=True)
class Hyper:
    algorithm: str = "grpo"
    lr: float = 3e-4
    clip_low: float = 0.2
    clip_high: float = 0.28
    gamma: float = 1.0
    lam: float = 1.0
    minibatches: int = 2
    value_coef: float = 0.5
    value_clip: float = 0.5
    max_grad_norm: float = 1.0


def update(model: TinyGPT, ref: TinyGPT, opt: AdamW, tok: WordTokenizer,
           episodes: Sequence[Episode], groups: Sequence[int], hp: Hyper,
           generator: torch.Generator) -> dict[str, float]:
    """One training step on ``episodes`` (group ids in ``groups``); returns metrics."""
    seqs = sequences(tok, episodes, model.cfg.max_positions)
    rewards = [e.reward for e in episodes]
    n_tokens = int(seqs.mask.sum())
    recorded = seqs.rollout_logp[seqs.mask]
    values = None  # (N, T-1) critic values, PPO only
    if hp.algorithm == "ppo" or bool(torch.isnan(recorded).any()):
        # veRL recomputes pi_old with the actor; the sampler's log-probs are the same numbers
        # (same weights, same restricted distribution), so that pass runs only when needed
        with torch.no_grad():
            old_logp, _, values = token_logprobs(model, seqs,
                                                 with_values=hp.algorithm == "ppo")
    else:
        old_logp = recorded.clone()
    old_values = None if values is None else values[seqs.mask]  # (K,) like the others
    metrics = {"kl": _kl_to_reference(ref, seqs, old_logp), "train_tokens": n_tokens}
    token_adv, returns = _token_advantages(seqs, values, rewards, groups, hp)
    # per-token tensors are laid out (K,) in row-major mask order; rows index sequences
    offsets = torch.cumsum(seqs.mask.sum(1), 0) - seqs.mask.sum(1)
    trainable = [i for i in range(len(seqs)) if hp.algorithm == "ppo" or
                 bool(token_adv[offsets[i]:offsets[i] + seqs.mask[i].sum()].abs().sum() > 0)]
    clip_fracs, losses = [], []
    model.train()
    order = torch.randperm(len(trainable), generator=generator).tolist()
    for part in np.array_split(np.asarray([trainable[i] for i in order], dtype=int),
                               hp.minibatches):
        if len(part) == 0:
            continue
        rows = torch.as_tensor(np.sort(part))
        sub = seqs.select(rows)
        picks = torch.cat([torch.arange(int(offsets[i]), int(offsets[i] + seqs.mask[i].sum()))
                           for i in rows.tolist()])
        # token-mean over the minibatch's share of *all* tokens, zero-advantage ones included
        share = max(1, round(n_tokens * len(part) / max(len(trainable), 1)))
        loss, clip_frac = _loss(model, sub, old_logp[picks], token_adv[picks],
                                recorded[picks],
                                None if returns is None else returns[picks],
                                None if old_values is None else old_values[picks],
                                hp, share)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), hp.max_grad_norm)
        opt.step()
        clip_fracs.append(clip_frac)
        losses.append(float(loss.detach()))
    model.eval()
    metrics["clip_frac"] = float(np.mean(clip_fracs)) if clip_fracs else 0.0
    metrics["loss"] = float(np.mean(losses)) if losses else 0.0
    metrics["trained_sequences"] = len(trainable)
    return metrics


def _token_advantages(seqs: Sequences, values: torch.Tensor | None,
                      rewards: Sequence[float], groups: Sequence[int], hp: Hyper
                      ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(K,) advantages of the trained tokens, and (K,) returns for PPO."""
    owner = seqs.owner.tolist()
    if hp.algorithm == "grpo":
        per_rollout = grpo_advantages(rewards, groups)
        counts = seqs.mask.sum(1)
        return torch.repeat_interleave(per_rollout[seqs.owner], counts), None
    # PPO: the reward sits on each sequence's last trained token (gamma = lam = 1 makes
    # every token's return the rollout's reward; the critic supplies the baseline)
    mask = seqs.mask.float()
    token_rewards = torch.zeros_like(mask)
    last = (torch.arange(mask.shape[1])[None, :] * seqs.mask).argmax(1)
    token_rewards[torch.arange(len(seqs)), last] = torch.tensor([rewards[o] for o in owner])
    adv, ret = gae(token_rewards, values, mask, hp.gamma, hp.lam)
    return adv[seqs.mask], ret[seqs.mask]


def _loss(model: TinyGPT, sub: Sequences, old_logp: torch.Tensor, adv: torch.Tensor,
          rollout_logp: torch.Tensor, returns: torch.Tensor | None,
          old_values: torch.Tensor | None, hp: Hyper, share: int
          ) -> tuple[torch.Tensor, float]:
    logp, _, values = token_logprobs(model, sub, with_values=returns is not None)
    # Harness-S correction for rollout/trainer mismatch, detached: w = clip(pi_old / q, 0, 2)
    weight = torch.exp(old_logp - torch.nan_to_num(rollout_logp, nan=0.0))
    weight = torch.where(torch.isnan(rollout_logp), torch.ones_like(weight),
                         weight.clamp(0, CLIP_WEIGHT)).detach()
    ones = torch.ones(1, len(logp))
    pg, clip_frac = policy_loss(old_logp[None], logp[None], adv[None], ones, hp.clip_low,
                                hp.clip_high, weights=weight[None])
    # the policy loss means over this minibatch's tokens; rescale to the share
    loss = pg * len(logp) / share
    if returns is not None:
        vf_loss = value_loss(values[sub.mask][None], returns[None], old_values[None], ones,
                             hp.value_clip)
        loss = loss + hp.value_coef * vf_loss
    return loss, clip_frac


def _kl_to_reference(ref: TinyGPT, seqs: Sequences, old_logp: torch.Tensor,
                     rows: int = KL_ROWS) -> float:
    """Mean log(pi_old / pi_ref) over the trained tokens of the first ``rows`` sequences:
    a drift metric only (no KL term in the loss), so a sample keeps it cheap."""
    if not len(seqs) or not seqs.mask.any():
        return 0.0
    sub = seqs.select(torch.arange(min(rows, len(seqs))))
    with torch.no_grad():
        ref_logp, _, _ = token_logprobs(ref, sub)
    return float((old_logp[:len(ref_logp)] - ref_logp).mean())
