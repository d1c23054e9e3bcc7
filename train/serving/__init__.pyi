"""The public API of hscale.train.serving (read lazily by __init__.py)."""

from ._chat import (
    BadRequest as BadRequest,
)
from ._chat import (
    Call as Call,
)
from ._chat import (
    Reply as Reply,
)
from ._chat import (
    Request as Request,
)
from ._chat import (
    Turn as Turn,
)
from ._chat import (
    tools_of_record as tools_of_record,
)
from ._chat import (
    turns_of as turns_of,
)
from ._scripted import (
    ScriptedChat as ScriptedChat,
)
from ._scripted import (
    solution_commands as solution_commands,
)
from ._server import (
    Server as Server,
)
from ._server import (
    serve as serve,
)
from ._tool_prompt import (
    parse_calls as parse_calls,
)
from ._tool_prompt import (
    template_chat as template_chat,
)

__all__ = [
    "BadRequest",
    "Call",
    "Reply",
    "Request",
    "ScriptedChat",
    "Server",
    "Turn",
    "parse_calls",
    "serve",
    "solution_commands",
    "template_chat",
    "tools_of_record",
    "turns_of",
]
