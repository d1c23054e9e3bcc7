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
    gumbel as gumbel,
)
from ._base import (
    mix as mix,
)
from ._base import (
    row_generator as row_generator,
)
from ._blackbox_eval import (
    check_context as check_context,
)
from ._blackbox_eval import (
    play_clis as play_clis,
)
from ._blackbox_eval import (
    played as played,
)
from ._blackbox_sft import (
    MODEL as MODEL,
)
from ._blackbox_sft import (
    SFT_DIR as SFT_DIR,
)
from ._blackbox_sft import (
    collect_teacher as collect_teacher,
)
from ._blackbox_sft import (
    fine_tuned as fine_tuned,
)
from ._blackbox_sft import (
    sft_rows as sft_rows,
)
from ._blackbox_sft import (
    teacher_samples as teacher_samples,
)
from ._collect import (
    Collection as Collection,
)
from ._collect import (
    collect as collect,
)
from ._drive import (
    drive as drive,
)
from ._embedded import (
    EmbeddedChat as EmbeddedChat,
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
from ._sft import (
    RESULT as RESULT,
)
from ._sft import (
    fine_tune as fine_tune,
)
from ._tiny import (
    CHAT_TEMPLATE as CHAT_TEMPLATE,
)
from ._tiny import (
    char_chat_tokenizer as char_chat_tokenizer,
)
from ._trajectories import (
    EpisodeLog as EpisodeLog,
)
from ._trajectories import (
    samples as samples,
)

__all__ = [
    "CHAT_TEMPLATE",
    "ChatModel",
    "Collection",
    "EmbeddedChat",
    "EpisodeLog",
    "HINT",
    "IMPORTS",
    "MAX_NEW_TOKENS",
    "MODEL",
    "RESULT",
    "Recorder",
    "SFT_DIR",
    "char_chat_tokenizer",
    "chat_dicts",
    "check_context",
    "collect",
    "collect_teacher",
    "content_hash",
    "drive",
    "fine_tune",
    "fine_tuned",
    "gumbel",
    "is_endpoint",
    "mix",
    "open_chat_model",
    "play_clis",
    "played",
    "read_record",
    "row_generator",
    "samples",
    "served_model",
    "sft_rows",
    "teacher_samples",
    "validate_folder",
]
