"""The public API of hscale.train (read lazily by __init__.py)."""

from .backends import (
    BACKENDS as BACKENDS,
)
from .backends import (
    Backend as Backend,
)
from .backends import (
    get_backend as get_backend,
)
from .harness_s import (
    ROUTERS as ROUTERS,
)
from .harness_s import (
    Router as Router,
)
from .planning import (
    EvalJob as EvalJob,
)
from .planning import (
    RunPlan as RunPlan,
)
from .planning import (
    Schedule as Schedule,
)
from .planning import (
    plan as plan,
)
from .planning import (
    write_plan as write_plan,
)
from .running import (
    BackendContract as BackendContract,
)
from .running import (
    ExportContract as ExportContract,
)
from .running import (
    run_experiment as run_experiment,
)
from .spec import (
    ASSIGNMENTS as ASSIGNMENTS,
)
from .spec import (
    ExperimentSpec as ExperimentSpec,
)
from .spec import (
    load_spec as load_spec,
)

__all__ = [
    "ASSIGNMENTS",
    "BACKENDS",
    "Backend",
    "BackendContract",
    "EvalJob",
    "ExperimentSpec",
    "ExportContract",
    "ROUTERS",
    "Router",
    "RunPlan",
    "Schedule",
    "get_backend",
    "load_spec",
    "plan",
    "run_experiment",
    "write_plan",
]
