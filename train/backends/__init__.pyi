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
from ._clean import (
    clean as clean,
)
from ._clean import (
    drop_checkpoints as drop_checkpoints,
)
from ._environment import (
    CPU_EXTRA as CPU_EXTRA,
)
from ._environment import (
    GPU_EXTRA as GPU_EXTRA,
)
from ._environment import (
    Requirement as Requirement,
)
from ._environment import (
    cuda_gpus as cuda_gpus,
)
from ._environment import (
    gpus as gpus,
)
from ._environment import (
    has_module as has_module,
)
from ._environment import (
    package as package,
)
from ._environment import (
    require as require,
)
from ._environment import (
    version as version,
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
    "CPU_EXTRA",
    "GPU_EXTRA",
    "LocalBackend",
    "Progress",
    "RayJob",
    "RayTask",
    "Requirement",
    "ScriptedBackend",
    "StepProgress",
    "clean",
    "cuda_gpus",
    "drop_checkpoints",
    "get_backend",
    "gpus",
    "has_module",
    "package",
    "require",
    "require_training_packages",
    "version",
]
