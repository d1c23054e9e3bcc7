"""The public API of hscale.train.embedded (read lazily by __init__.py)."""

from ._trainer import (
    train_run as train_run,
)

__all__ = [
    "train_run",
]
