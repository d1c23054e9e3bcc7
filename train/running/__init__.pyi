"""The public API of hscale.train.running (read lazily by __init__.py)."""

from ._evaluate import (
    Request as Request,
)
from ._evaluate import (
    evaluate as evaluate,
)
from ._evaluate import (
    plan_evaluation as plan_evaluation,
)
from ._rerun import (
    Rerun as Rerun,
)
from ._rerun import (
    finished_runs as finished_runs,
)
from ._rerun import (
    rerun as rerun,
)
from ._rerun import (
    sample_runs as sample_runs,
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
    "ExportContract",
    "Request",
    "Rerun",
    "evaluate",
    "export_experiment",
    "finished_runs",
    "plan_evaluation",
    "rerun",
    "run_experiment",
    "sample_runs",
]
