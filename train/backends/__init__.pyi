"""The public API of hscale.train.backends (read lazily by __init__.py)."""

from ._base import (
    Backend as Backend,
)
from ._base import (
    Progress as Progress,
)
from ._base import (
    RayJob as RayJob,
)
from ._base import (
    RayTask as RayTask,
)
from ._base import (
    StepProgress as StepProgress,
)
from ._local import (
    LocalBackend as LocalBackend,
)
from ._local import (
    require_training_packages as require_training_packages,
)
from ._registry import (
    BACKENDS as BACKENDS,
)
from ._registry import (
    get_backend as get_backend,
)
from ._scripted import (
    ScriptedBackend as ScriptedBackend,
)

__all__ = [
    "BACKENDS",
    "Backend",
    "LocalBackend",
    "Progress",
    "RayJob",
    "RayTask",
    "ScriptedBackend",
    "StepProgress",
    "get_backend",
    "require_training_packages",
]
