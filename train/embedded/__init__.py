"""The embedded CPU trainer: GRPO and PPO on the embedded policy (hscale.train.policy),
batched KV-cached rollouts through hscale's harnesses, evaluation at each checkpoint (a
black-box harness's through its real CLI, the policy served to it).
"""

from ._trainer import train_run

__all__ = [
    "train_run",
]
