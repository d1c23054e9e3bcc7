"""``hscale serve``: a model, or an upstream OpenAI-compatible server, behind the three APIs
agent harnesses speak, every request recorded.

- ``chat``: the conversation every face reads into (Request, Turn, Tool, Call, Reply).
- ``openai_chat``, ``responses``, ``anthropic``: the faces (parse a body, write a reply,
  stream it, say an error), one per API.
- ``tool_prompt``: how tools reach a local model whose template has none, and come back.
- ``engine``: what answers (a local ChatModel, or a proxy), behind a batcher.
- ``scheduler``: continuous batching for a model that decodes step by step (an HF model):
  ``steps`` decodes the rows, ``kv`` holds their keys and values, ``prefix`` what earlier
  requests computed, ``packed`` the linear layers a many-row step runs; ``live`` streams a
  reply's text as it is decoded.
- ``app``: the ASGI routes; ``server``: starting and stopping it (uvicorn).
"""

from ._chat import BadRequest, Call, Reply, Request, Turn, tools_of_record, turns_of
from ._scripted import ScriptedChat, solution_commands
from ._server import Server, serve
from ._tool_prompt import parse_calls, template_chat

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
