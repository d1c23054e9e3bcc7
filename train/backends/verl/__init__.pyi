"""The public API of hscale.train.backends.verl (read lazily by __init__.py)."""

from ._backend import (
    VerlBackend as VerlBackend,
)
from ._check import (
    validate_overrides as validate_overrides,
)
from ._dumps import (
    import_validation as import_validation,
)
from ._inputs import (
    prepare_verl_run as prepare_verl_run,
)
from ._launch import (
    LOG as LOG,
)
from ._launch import (
    launch_requirements as launch_requirements,
)
from ._overrides import (
    VERL_DIR as VERL_DIR,
)
from ._overrides import (
    build_overrides as build_overrides,
)

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
