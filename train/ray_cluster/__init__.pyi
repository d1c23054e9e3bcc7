"""The public API of hscale.train.ray_cluster (read lazily by __init__.py)."""

from ._executor import (
    RayExecutor as RayExecutor,
)
from ._tasks import (
    connect as connect,
)

__all__ = [
    "RayExecutor",
    "connect",
]
