"""The public API of hscale.train.spec (read lazily by __init__.py)."""

from ._assignments import (
    ASSIGNMENTS as ASSIGNMENTS,
)
from ._assignments import (
    AssignmentMode as AssignmentMode,
)
from ._assignments import (
    adaptive_k as adaptive_k,
)
from ._benchmark import (
    BUILTIN_TASKS as BUILTIN_TASKS,
)
from ._benchmark import (
    NAME as NAME,
)
from ._benchmark import (
    Benchmark as Benchmark,
)
from ._experiment import (
    Arm as Arm,
)
from ._experiment import (
    ExperimentSpec as ExperimentSpec,
)
from ._hypotheses import (
    Hypothesis as Hypothesis,
)
from ._load import (
    load_spec as load_spec,
)
from ._models import (
    is_endpoint as is_endpoint,
)
from ._models import (
    is_local_path as is_local_path,
)
from ._models import (
    read_config as read_config,
)
from ._models import (
    resolve_model as resolve_model,
)
from ._presets import (
    PRESETS as PRESETS,
)
from ._presets import (
    preset as preset,
)
from ._quick import (
    quick as quick,
)
from ._registries import (
    BACKENDS as BACKENDS,
)
from ._space import (
    resolve_space as resolve_space,
)
from ._verl import (
    VerlSettings as VerlSettings,
)
from ._weights import (
    spec_weights as spec_weights,
)

__all__ = [
    "ASSIGNMENTS",
    "Arm",
    "AssignmentMode",
    "BACKENDS",
    "BUILTIN_TASKS",
    "Benchmark",
    "ExperimentSpec",
    "Hypothesis",
    "NAME",
    "PRESETS",
    "VerlSettings",
    "adaptive_k",
    "is_endpoint",
    "is_local_path",
    "load_spec",
    "preset",
    "quick",
    "read_config",
    "resolve_model",
    "resolve_space",
    "spec_weights",
]
