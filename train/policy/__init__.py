"""The embedded policy: TinyGPT, a word-level transformer small enough to train on a laptop,
its checkpoints, and the base models of the presets (spec's ``PRESETS``), built by warm start
on demonstrations and found in the cache or among the checkpoints hscale ships. Below ``lm``,
which opens it as a chat model, and ``embedded``, which trains it by RL.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
