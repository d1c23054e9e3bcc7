"""The public API of hscale.train.ray_cluster (read lazily by __init__.py)."""

from ._blackbox import (
    play_on_ray as play_on_ray,
)
from ._executor import (
    RayExecutor as RayExecutor,
)
from ._tasks import (
    connect as connect,
)

__all__ = [
    "RayExecutor",
    "connect",
    "play_on_ray",
]
