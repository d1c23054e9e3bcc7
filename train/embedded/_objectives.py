"""The RL math of the embedded trainer: GRPO group advantages, GAE, the clipped policy loss
and the clipped value loss, as veRL 0.9.1's ``verl.trainer.ppo.core_algos`` computes them.

The same operations in the same order, so the same numbers bit for bit
(``tests/train/embedded/test_objectives.py`` holds them to veRL's on random inputs): a run
trained here is the run veRL's math would train. Written here rather than imported because
importing ``core_algos`` pulls in ``transformers`` and ``torch._dynamo`` (about 3 s a
process, most of a smoke run's start-up).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

CLIP_C = 3.0  # dual-clip PPO: the loss of a negative advantage is capped at -A * c (veRL's)
EPSILON = 1e-6  # GRPO: (r - mean) / (std + EPSILON)


def masked_sum(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (torch.where(mask.bool(), values, 0.0) * mask).sum()


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return masked_sum(values, mask) / (mask.sum() + 1e-8)


def token_mean(losses: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """veRL's ``token-mean`` aggregation: the mean over the mask's tokens."""
    return masked_sum(losses, mask) / mask.sum()


def grpo_advantages(rewards: Sequence[float], groups: Sequence[object]) -> torch.Tensor:
    """One advantage a rollout: (r - mean) / (std + eps) over its group (the unbiased std);
    a group of one rollout keeps its reward (mean 0, std 1)."""
    scores = torch.tensor(rewards, dtype=torch.float32)
    members: dict[object, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    stats = {}
    for group, rows in members.items():
        if len(rows) == 1:
            stats[group] = (torch.tensor(0.0), torch.tensor(1.0))
        else:
            together = torch.stack([scores[i] for i in rows])
            stats[group] = (torch.mean(together), torch.std(together))
    out = scores.clone()
    for i, group in enumerate(groups):
        mean, std = stats[group]
        out[i] = (scores[i] - mean) / (std + EPSILON)
    return out


def gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float,
        lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages whitened over the mask, returns) of token rewards and critic values
    (N, T); tokens outside the mask (observations) pass values and advantages through."""
    gamma_t, lam_t = torch.tensor(gamma), torch.tensor(lam)
    with torch.no_grad():
        next_value, last = 0, 0
        backwards = []
        for t in reversed(range(rewards.shape[-1])):
            delta = rewards[:, t] + gamma_t * next_value - values[:, t]
            step = delta + gamma_t * lam_t * last
            next_value = values[:, t] * mask[:, t] + (1 - mask[:, t]) * next_value
            last = step * mask[:, t] + (1 - mask[:, t]) * last
            backwards.append(last)
        advantages = torch.stack(backwards[::-1], dim=1)
        returns = advantages + values
        mean = masked_mean(advantages, mask)
        variance = masked_mean((advantages - mean) ** 2, mask)
        count = mask.sum()
        if count <= 1:
            raise ValueError("whitening GAE advantages needs at least two tokens in the mask")
        variance = variance * (count / (count - 1))  # unbiased
        advantages = (advantages - mean) * torch.rsqrt(variance + 1e-8)
    return advantages, returns


def policy_loss(old_logp: torch.Tensor, logp: torch.Tensor, advantages: torch.Tensor,
                mask: torch.Tensor, clip_low: float, clip_high: float,
                weights: torch.Tensor | None = None) -> tuple[torch.Tensor, float]:
    """(the token-mean clipped policy loss, the share of tokens the clip bound): PPO's ratio
    clipped to [1 - clip_low, 1 + clip_high], dual-clipped at :data:`CLIP_C` for negative
    advantages, each token's loss times its rollout-correction ``weights``."""
    log_ratio = torch.clamp(logp - old_logp, min=-20.0, max=20.0)
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1 - clip_low, 1 + clip_high)
    worse = torch.maximum(unclipped, clipped)
    clip_frac = masked_mean(torch.gt(clipped, unclipped).float(), mask)
    capped = torch.min(-advantages * CLIP_C, worse)
    losses = torch.where(advantages < 0, capped, worse)
    if weights is not None:
        losses = losses * weights
    return token_mean(losses, mask), clip_frac.item()


def value_loss(predicted: torch.Tensor, returns: torch.Tensor, old_values: torch.Tensor,
               mask: torch.Tensor, clip: float) -> torch.Tensor:
    """Half the token-mean of the larger of the squared errors of the prediction and of the
    prediction clipped to ``old_values`` +- ``clip``."""
    bounded = torch.max(torch.min(predicted, old_values + clip), old_values - clip)
    losses = torch.max((predicted - returns) ** 2, (bounded - returns) ** 2)
    return 0.5 * token_mean(losses, mask)
