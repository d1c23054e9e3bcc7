"""Running, the top of train/'s stack: the runner (the only writer of status.json), an
evaluation-only run of a model (``hscale evaluate``: :func:`evaluate`), a finished run run again
and compared with its folder (``hscale rerun``: :func:`rerun`), and the contract suite a
backend of your own proves itself with (:class:`BackendContract`).
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

from ._evaluate import Request, evaluate, plan_evaluation
from ._rerun import Rerun, finished_runs, rerun, sample_runs
from ._runner import export_experiment, run_experiment

if TYPE_CHECKING:  # pytest classes, for a test suite: imported on first use
    from ._testing import BackendContract, ExportContract

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

__getattr__ = on_first_use(__name__, __file__)
