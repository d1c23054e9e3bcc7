"""Language models in the harness loop, for evaluation and serving (no training here).

``open_chat_model(name)`` reads a model name the way ``hscale evaluate`` and ``hscale serve``
take it: an OpenAI-compatible endpoint (``http://host:port/v1``), ``smollm2`` (the
SmolLM2-135M-Instruct that a package ships, imported once into a Hugging Face folder), a
Hugging Face model folder (holding config.json), an embedded checkpoint (a ``.pt`` file) or
an embedded preset (``hscale-tiny``). Heavy imports happen in the kind that needs them.
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

from ._base import (
    MAX_NEW_TOKENS,
    ChatModel,
    chat_dicts,
    common_prefix,
    gumbel,
    mix,
    row_generator,
)
from ._drive import drive
from ._hf import HFChat, renders_tools
from ._importer import IMPORTS, content_hash, validate_folder
from ._open import HINT, is_endpoint, open_chat_model, served_model
from ._record import Recorder, read_record
from ._tiny import CHAT_TEMPLATE, char_chat_tokenizer

if TYPE_CHECKING:  # torch: imported on first use
    from ._embedded import EmbeddedChat

__all__ = [
    "CHAT_TEMPLATE",
    "ChatModel",
    "EmbeddedChat",
    "HFChat",
    "HINT",
    "IMPORTS",
    "MAX_NEW_TOKENS",
    "Recorder",
    "char_chat_tokenizer",
    "chat_dicts",
    "common_prefix",
    "content_hash",
    "drive",
    "gumbel",
    "is_endpoint",
    "mix",
    "open_chat_model",
    "read_record",
    "renders_tools",
    "row_generator",
    "served_model",
    "validate_folder",
]

__getattr__ = on_first_use(__name__, __file__)
