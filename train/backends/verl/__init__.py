"""veRL backend: a planned run becomes veRL 0.9.1 inputs and a launch script (inputs), checked
on CPU against veRL's own config (overrides), launched here (launch) or as a Ray job (the
runner's Ray executor), and its validation dumps become eval.parquet (dumps). veRL, Hydra,
torch and Ray are imported lazily.
"""

from ._backend import VerlBackend
from ._check import validate_overrides
from ._dumps import import_validation
from ._inputs import prepare_verl_run
from ._launch import LOG, launch_requirements
from ._overrides import VERL_DIR, build_overrides

__all__ = [
    "LOG",
    "VERL_DIR",
    "VerlBackend",
    "build_overrides",
    "import_validation",
    "launch_requirements",
    "prepare_verl_run",
    "validate_overrides",
]
