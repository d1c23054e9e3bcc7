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

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
