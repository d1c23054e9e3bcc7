"""Harness components: S system prompt, T tool interface, O observation, C context, W workflow.

Realizations register by name (``tool_interface/json_call``); see :mod:`.registry`.
"""

from hscale.harness.components.registry import available, get, load_builtins, register

__all__ = ["available", "get", "load_builtins", "register"]
