"""The embedded CPU trainer: GRPO and PPO on the embedded policy (hscale.train.policy),
batched KV-cached rollouts through hscale's harnesses, evaluation at each checkpoint (a
black-box harness's through its real CLI, the policy served to it).
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
