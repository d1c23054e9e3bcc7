"""An experiment spec: the YAML a study is written in, validated (its arms, harness
space, veRL and black-box sections, sweeps), and ``--quick``'s smaller one.
"""

from typing import TYPE_CHECKING

from hscale.lazy import on_first_use

from ._models import is_endpoint, is_local_path, read_config, resolve_model
from ._presets import PRESETS, preset
from ._registries import BACKENDS

if TYPE_CHECKING:  # numpy, pandas, pydantic: imported on first use
    from ._assignments import ASSIGNMENTS, AssignmentMode, adaptive_k
    from ._benchmark import BUILTIN_TASKS, NAME, Benchmark
    from ._experiment import Arm, ExperimentSpec
    from ._hypotheses import Hypothesis
    from ._load import load_spec
    from ._quick import quick
    from ._space import resolve_space
    from ._verl import VerlSettings
    from ._weights import spec_weights

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

__getattr__ = on_first_use(__name__, __file__)
