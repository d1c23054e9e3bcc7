"""The embedded policy: TinyGPT, a word-level transformer small enough to train on a laptop,
its checkpoints, and the base models of the presets (spec's ``PRESETS``), built by warm start
on demonstrations and found in the cache or among the checkpoints hscale ships. Below ``lm``,
which opens it as a chat model, and ``embedded``, which trains it by RL.
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

from ._lookup import available, base_model_path, content_hash

if TYPE_CHECKING:  # torch: imported on first use
    from ._model import MIN_QUERIES, MIN_SLOTS, TinyGPT, cache_slots, load
    from ._sequences import Sequences, banned, sequences, token_logprobs
    from ._warmstart import base_model, build

__all__ = [
    "MIN_QUERIES",
    "MIN_SLOTS",
    "Sequences",
    "TinyGPT",
    "available",
    "banned",
    "base_model",
    "base_model_path",
    "build",
    "cache_slots",
    "content_hash",
    "load",
    "sequences",
    "token_logprobs",
]

__getattr__ = on_first_use(__name__, __file__)
