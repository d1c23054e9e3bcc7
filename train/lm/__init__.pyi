"""The public API of hscale.train.lm (read lazily by __init__.py)."""

from ._base import (
    MAX_NEW_TOKENS as MAX_NEW_TOKENS,
)
from ._base import (
    ChatModel as ChatModel,
)
from ._base import (
    chat_dicts as chat_dicts,
)
from ._base import (
    common_prefix as common_prefix,
)
from ._base import (
    gumbel as gumbel,
)
from ._base import (
    mix as mix,
)
from ._base import (
    row_generator as row_generator,
)
from ._drive import (
    drive as drive,
)
from ._embedded import (
    EmbeddedChat as EmbeddedChat,
)
from ._hf import (
    HFChat as HFChat,
)
from ._hf import (
    renders_tools as renders_tools,
)
from ._importer import (
    IMPORTS as IMPORTS,
)
from ._importer import (
    content_hash as content_hash,
)
from ._importer import (
    validate_folder as validate_folder,
)
from ._open import (
    HINT as HINT,
)
from ._open import (
    is_endpoint as is_endpoint,
)
from ._open import (
    open_chat_model as open_chat_model,
)
from ._open import (
    served_model as served_model,
)
from ._record import (
    Recorder as Recorder,
)
from ._record import (
    read_record as read_record,
)
from ._tiny import (
    CHAT_TEMPLATE as CHAT_TEMPLATE,
)
from ._tiny import (
    char_chat_tokenizer as char_chat_tokenizer,
)

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
