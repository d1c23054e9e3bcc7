"""``hscale serve``: a model, or an upstream OpenAI-compatible server, behind the three APIs
agent harnesses speak, every request recorded.

- ``chat``: the conversation every face reads into (Request, Turn, Tool, Call, Reply).
- ``openai_chat``, ``responses``, ``anthropic``: the faces (parse a body, write a reply,
  stream it, say an error), one per API.
- ``tool_prompt``: how tools reach a local model whose template has none, and come back.
- ``engine``: what answers (a local ChatModel, or a proxy), behind a batcher.
- ``app``: the ASGI routes; ``server``: starting and stopping it (uvicorn).
"""

from hscale.lazy import lazy_exports

_EXPORTS = {"serve": "hscale.train.serving.server", "Server": "hscale.train.serving.server"}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
