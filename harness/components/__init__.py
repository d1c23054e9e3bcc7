"""Harness components: S system prompt, T tool interface, O observation, C context, W workflow.

Realizations register by name (``tool_interface/json_call``); see :mod:`.registry`.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
