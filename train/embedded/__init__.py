"""The embedded CPU trainer: a small GPT over the built-in world's vocabulary, its
base models (warm start), batched KV-cached rollouts, GRPO and PPO updates.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
