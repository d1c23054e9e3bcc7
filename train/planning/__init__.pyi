"""The public API of hscale.train.planning (read lazily by __init__.py)."""

from ._manifest import (
    is_blackbox_sft as is_blackbox_sft,
)
from ._manifest import (
    out_of_space_names as out_of_space_names,
)
from ._manifest import (
    space_of as space_of,
)
from ._plan import (
    Planned as Planned,
)
from ._plan import (
    plan as plan,
)
from ._plan import (
    plan_runs as plan_runs,
)
from ._plan import (
    seeds_of as seeds_of,
)
from ._plan import (
    staged_arms as staged_arms,
)
from ._plan import (
    study_of as study_of,
)
from ._plan import (
    write_plan as write_plan,
)
from ._recorder import (
    RESULT_FILES as RESULT_FILES,
)
from ._recorder import (
    Recorder as Recorder,
)
from ._schedule import (
    Schedule as Schedule,
)
from ._sources import (
    resolve_sources as resolve_sources,
)
from ._token_budget import (
    verl_record as verl_record,
)
from ._workload import (
    DECODINGS as DECODINGS,
)
from ._workload import (
    ROUTER_TASKS as ROUTER_TASKS,
)
from ._workload import (
    EvalJob as EvalJob,
)
from ._workload import (
    RunPlan as RunPlan,
)
from ._workload import (
    factor_space as factor_space,
)
from ._workload import (
    harness_labels as harness_labels,
)
from ._workload import (
    harness_of as harness_of,
)
from ._workload import (
    harness_space as harness_space,
)
from ._workload import (
    router_pool as router_pool,
)
from ._workload import (
    train_tasks as train_tasks,
)

__all__ = [
    "DECODINGS",
    "EvalJob",
    "Planned",
    "ROUTER_TASKS",
    "RESULT_FILES",
    "Recorder",
    "RunPlan",
    "Schedule",
    "factor_space",
    "harness_labels",
    "harness_of",
    "harness_space",
    "is_blackbox_sft",
    "out_of_space_names",
    "plan",
    "plan_runs",
    "seeds_of",
    "staged_arms",
    "study_of",
    "resolve_sources",
    "router_pool",
    "space_of",
    "train_tasks",
    "verl_record",
    "write_plan",
]
