"""The public API of hscale.harness.tasks (read lazily by __init__.py)."""

from ._checkers import (
    CheckerError as CheckerError,
)
from ._checkers import (
    checker_words as checker_words,
)
from ._checkers import (
    remove_entry as remove_entry,
)
from ._checkers import (
    run_checker as run_checker,
)
from ._checkers import (
    score_answer as score_answer,
)
from ._checkers import (
    scoring as scoring,
)
from ._clawgym import (
    MAX_INPUT_FILE_BYTES as MAX_INPUT_FILE_BYTES,
)
from ._clawgym import (
    MAX_INPUT_TOTAL_BYTES as MAX_INPUT_TOTAL_BYTES,
)
from ._clawgym import (
    load_task_folder as load_task_folder,
)
from ._clawgym import (
    write_task_folder as write_task_folder,
)
from ._jail import (
    containment as containment,
)
from ._jobbench import (
    load_jobbench as load_jobbench,
)
from ._judge import (
    PARALLEL_REQUESTS as PARALLEL_REQUESTS,
)
from ._judge import (
    JudgeError as JudgeError,
)
from ._judge import (
    ask_judge as ask_judge,
)
from ._judge import (
    judge_configured as judge_configured,
)
from ._judge import (
    parse_scores as parse_scores,
)
from ._pinchbench import (
    NOT_TASKS as NOT_TASKS,
)
from ._pinchbench import (
    load_pinchbench as load_pinchbench,
)
from ._rows import (
    task_from_row as task_from_row,
)
from ._rows import (
    task_to_row as task_to_row,
)
from ._sandbox import (
    ScriptLimits as ScriptLimits,
)
from ._sandbox import (
    no_network_prefix as no_network_prefix,
)
from ._sandbox import (
    plain_env as plain_env,
)
from ._sandbox import (
    run_limited as run_limited,
)
from ._specs import (
    FOLDER_HINT as FOLDER_HINT,
)
from ._specs import (
    MAX_PATH_CHARS as MAX_PATH_CHARS,
)
from ._specs import (
    TARGETS as TARGETS,
)
from ._specs import (
    Checker as Checker,
)
from ._specs import (
    check_spec as check_spec,
)
from ._specs import (
    path_problem as path_problem,
)
from ._specs import (
    uses_judge as uses_judge,
)
from ._task import (
    SPLITS as SPLITS,
)
from ._task import (
    Task as Task,
)
from ._task import (
    limits_problem as limits_problem,
)
from ._task import (
    tools_problem as tools_problem,
)
from ._task_lists import (
    load_tasks as load_tasks,
)
from ._task_lists import (
    write_tasks as write_tasks,
)
from ._timeout import (
    call_with_timeout as call_with_timeout,
)

__all__ = [
    "Checker",
    "CheckerError",
    "FOLDER_HINT",
    "JudgeError",
    "MAX_INPUT_FILE_BYTES",
    "MAX_INPUT_TOTAL_BYTES",
    "MAX_PATH_CHARS",
    "NOT_TASKS",
    "PARALLEL_REQUESTS",
    "SPLITS",
    "ScriptLimits",
    "TARGETS",
    "Task",
    "ask_judge",
    "call_with_timeout",
    "check_spec",
    "checker_words",
    "containment",
    "judge_configured",
    "limits_problem",
    "load_jobbench",
    "load_pinchbench",
    "load_task_folder",
    "load_tasks",
    "no_network_prefix",
    "parse_scores",
    "path_problem",
    "plain_env",
    "remove_entry",
    "run_checker",
    "run_limited",
    "score_answer",
    "scoring",
    "task_from_row",
    "task_to_row",
    "tools_problem",
    "uses_judge",
    "write_task_folder",
    "write_tasks",
]
