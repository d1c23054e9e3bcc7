"""veRL on a CPU, for tests and for debugging agent loops on a laptop: a CPU platform
(device ``cpu``, ``gloo``; hscale.train.backends.verl.cpu.platform) and an in-process Hugging Face
rollout replica (``hscale_hf``; hscale.train.backends.verl.cpu.rollout), registered through veRL
0.9.1's extension points by :data:`PLUGIN`, none of veRL's source copied or patched.

veRL imports :data:`PLUGIN` in every process when ``VERL_USE_EXTERNAL_MODULES`` names it;
:data:`ENV` is the environment a launch needs. This package itself imports nothing heavy:
``tiny_model`` (hscale.train.backends.verl.cpu.model) builds a model folder veRL can train here.
"""

from __future__ import annotations

PLATFORM = "cpu"  # VERL_PLATFORM
ROLLOUT = "hscale_hf"  # actor_rollout_ref.rollout.name
PLUGIN = f"{__name__}.plugin"
ENV = {"VERL_USE_EXTERNAL_MODULES": PLUGIN, "VERL_PLATFORM": PLATFORM}

__all__ = ["ENV", "PLATFORM", "PLUGIN", "ROLLOUT"]
