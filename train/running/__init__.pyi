"""The public API of hscale.train.running (read lazily by __init__.py)."""

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
    "ExportContract",
    "export_experiment",
    "run_experiment",
]
