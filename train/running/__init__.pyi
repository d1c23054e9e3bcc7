"""The public API of hscale.train.running (read lazily by __init__.py)."""

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
from ._runner import (
    export_experiment as export_experiment,
)
from ._runner import (
    run_experiment as run_experiment,
)
from ._testing import (
    BackendContract as BackendContract,
)
from ._testing import (
    ExportContract as ExportContract,
)

__all__ = [
    "BackendContract",
    "CPU_EXTRA",
    "ExportContract",
    "GPU_EXTRA",
    "Requirement",
    "clean",
    "cuda_gpus",
    "drop_checkpoints",
    "export_experiment",
    "gpus",
    "has_module",
    "package",
    "require",
    "run_experiment",
    "version",
]
