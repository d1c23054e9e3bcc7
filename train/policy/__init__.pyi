"""The public API of hscale.train.policy (read lazily by __init__.py)."""

from ._lookup import (
    available as available,
)
from ._lookup import (
    base_model_path as base_model_path,
)
from ._lookup import (
    content_hash as content_hash,
)
from ._model import (
    MIN_QUERIES as MIN_QUERIES,
)
from ._model import (
    MIN_SLOTS as MIN_SLOTS,
)
from ._model import (
    TinyGPT as TinyGPT,
)
from ._model import (
    cache_slots as cache_slots,
)
from ._model import (
    load as load,
)
from ._sequences import (
    Sequences as Sequences,
)
from ._sequences import (
    banned as banned,
)
from ._sequences import (
    sequences as sequences,
)
from ._sequences import (
    token_logprobs as token_logprobs,
)
from ._warmstart import (
    base_model as base_model,
)
from ._warmstart import (
    build as build,
)

__all__ = [
    "MIN_QUERIES",
    "MIN_SLOTS",
    "Sequences",
    "TinyGPT",
    "available",
    "banned",
    "base_model",
    "base_model_path",
    "build",
    "cache_slots",
    "content_hash",
    "load",
    "sequences",
    "token_logprobs",
]
