"""Language models in the harness loop, for evaluation and serving (no training here).

``open_chat_model(name)`` reads a model name the way ``hscale evaluate`` and ``hscale serve``
take it: an OpenAI-compatible endpoint (``http://host:port/v1``), ``smollm2`` (the
SmolLM2-135M-Instruct that a package ships, imported once into a Hugging Face folder), a
Hugging Face model folder (holding config.json), an embedded checkpoint (a ``.pt`` file) or
an embedded preset (``hscale-tiny``). Heavy imports happen in the kind that needs them.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
