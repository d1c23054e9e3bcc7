"""Harness components: S system prompt, T tool interface, O observation, C context, W workflow.

Realizations register by name (``tool_interface/json_call``); see :mod:`.registry`.
"""

from ._context import (
    Context,
    Segment,
)
from ._extra import (
    EXTRA_KINDS,
    Extra,
    component_kind,
)
from ._observation import Observation
from ._registry import (
    BUILTIN_MODULES,
    available,
    factory,
    from_spec,
    get,
    load_builtins,
    name_of,
    params_of,
    register,
    spec_of,
    unregister,
)
from ._system_prompt import (
    PromptParts,
    SystemPrompt,
)
from ._tool_interface import (
    MSG_LONG,
    MSG_ONE,
    Parsed,
    ToolInterface,
    ToolSpec,
    bounded,
    no_call_or_error,
)
from ._workflow import (
    Action,
    Kind,
    Workflow,
)

__all__ = [
    "Action",
    "BUILTIN_MODULES",
    "Context",
    "EXTRA_KINDS",
    "Extra",
    "component_kind",
    "Kind",
    "MSG_LONG",
    "MSG_ONE",
    "Observation",
    "Parsed",
    "PromptParts",
    "Segment",
    "SystemPrompt",
    "ToolInterface",
    "ToolSpec",
    "Workflow",
    "available",
    "bounded",
    "factory",
    "from_spec",
    "get",
    "load_builtins",
    "name_of",
    "no_call_or_error",
    "params_of",
    "register",
    "spec_of",
    "unregister",
]
