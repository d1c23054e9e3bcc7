"""The public API of hscale.harness.components (read lazily by __init__.py)."""

from ._context import (
    Context as Context,
)
from ._context import (
    Segment as Segment,
)
from ._extra import (
    EXTRA_KINDS as EXTRA_KINDS,
)
from ._extra import (
    Extra as Extra,
)
from ._extra import (
    component_kind as component_kind,
)
from ._observation import (
    Observation as Observation,
)
from ._registry import (
    BUILTIN_MODULES as BUILTIN_MODULES,
)
from ._registry import (
    available as available,
)
from ._registry import (
    factory as factory,
)
from ._registry import (
    from_spec as from_spec,
)
from ._registry import (
    get as get,
)
from ._registry import (
    load_builtins as load_builtins,
)
from ._registry import (
    name_of as name_of,
)
from ._registry import (
    params_of as params_of,
)
from ._registry import (
    register as register,
)
from ._registry import (
    spec_of as spec_of,
)
from ._registry import (
    unregister as unregister,
)
from ._system_prompt import (
    PromptParts as PromptParts,
)
from ._system_prompt import (
    SystemPrompt as SystemPrompt,
)
from ._tool_interface import (
    MSG_LONG as MSG_LONG,
)
from ._tool_interface import (
    MSG_ONE as MSG_ONE,
)
from ._tool_interface import (
    Parsed as Parsed,
)
from ._tool_interface import (
    ToolInterface as ToolInterface,
)
from ._tool_interface import (
    ToolSpec as ToolSpec,
)
from ._tool_interface import (
    bounded as bounded,
)
from ._tool_interface import (
    no_call_or_error as no_call_or_error,
)
from ._workflow import (
    Action as Action,
)
from ._workflow import (
    Kind as Kind,
)
from ._workflow import (
    Workflow as Workflow,
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
