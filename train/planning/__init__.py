"""Planning, and what a planned run plays: specs into manifests and schedules
(``hscale plan``), and the one plan every driver consumes (:class:`RunPlan`:
every training and evaluated episode, the router), and the one writer of a run's result
files (:class:`Recorder`), to which every driver hands what it played.
"""

from ._manifest import is_blackbox_sft, out_of_space_names, space_of
from ._plan import Planned, plan, plan_runs, seeds_of, staged_arms, study_of, write_plan
from ._recorder import RESULT_FILES, Recorder
from ._schedule import Schedule
from ._sources import resolve_sources
from ._token_budget import verl_record
from ._workload import (
    DECODINGS,
    ROUTER_TASKS,
    EvalJob,
    RunPlan,
    factor_space,
    harness_labels,
    harness_of,
    harness_space,
    router_pool,
    train_tasks,
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
