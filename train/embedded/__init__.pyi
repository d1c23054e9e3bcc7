"""The public API of hscale.train.embedded (read lazily by __init__.py)."""

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
    TinyGPT as TinyGPT,
)
from ._model import (
    load as load,
)
from ._sequences import (
    banned as banned,
)
from ._trainer import (
    train_run as train_run,
)
from ._warmstart import (
    build as build,
)

__all__ = [
    "TinyGPT",
    "available",
    "banned",
    "base_model_path",
    "build",
    "content_hash",
    "load",
    "train_run",
]
