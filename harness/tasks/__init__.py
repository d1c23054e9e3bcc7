"""Tasks: a query, the files the agent starts with, and a programmatic checker.

A checker is either a Python callable ``(workspace, final_answer) -> float`` or a *spec*, a small
JSON-able dict, so task lists can be stored as JSONL/parquet and exported as ClawGym folders:

- ``{"kind": "answer", "expected": "plum", "target": "final" | "file" | "both",
  "file": "out.txt"}``: the final answer and/or a workspace file must equal ``expected`` (after
  lower-casing and re-spacing tokens, a trailing full stop ignored); "both" gives half each.
- ``{"kind": "script", "path": "/abs/reward/reward.sh"}``: a ClawGym reward script, run as a
  limited subprocess in a scrubbed environment with the workspace as argument and env vars
  WORKSPACE, FINAL_ANSWER_FILE (a file holding the final answer), TRANSCRIPT_FILE (the
  episode's canonical transcript as JSON) and FINAL_ANSWER (the answer itself when short and
  NUL-free, for older scripts); the last line of its stdout is the
  reward, a float in [0, 1]. ``checkers`` documents the interface, ``sandbox`` the limits.
  With ``"mount": "/root/.openclaw/workspace"`` (a real ClawGym folder's absolute
  ``input_mount_dir``) it runs as ClawGym's runner runs it: the workspace shown at that path.
- ``{"kind": "rubric", "criteria": [{"text": ..., "weight": 1.0, "name": ...}, ...],
  "context": ..., "scoring": "share" | "all" | "graded", "view": "workspace" |
  "pinchbench"}``: an LLM judge (``HSCALE_JUDGE_URL``/``HSCALE_JUDGE_MODEL``, see ``judge``)
  decides the criteria. "share" (default): yes/no per criterion, the reward is the weighted
  share of yes; "all": 1 only when every criterion is met (a JobBench rubric); "graded": the
  judge is shown the whole rubric, weights included, in one request and its total is the
  reward (PinchBench's judge). The judge sees the final answer and workspace files
  ("workspace", default) or the transcript as PinchBench's judge summarises it
  ("pinchbench"). Without a judge it raises CheckerError.
- ``{"kind": "weighted", "parts": [{"weight": 0.4, "checker": {...}}, ...]}``: the weighted
  mean of its parts' rewards (weights >= 0, summing above 0; a part is any spec but another
  weighted one; a failing part fails the whole), e.g. a PinchBench hybrid task's automated and
  judge parts, or a JobBench task's all-or-nothing rubrics.

Loaders: :func:`load_task_folder` (one ClawGym ``task_XXXX`` folder), :func:`load_tasks` (a
folder of task folders, a ``.jsonl`` or a ``.parquet`` task list). Bad task data raises
HscaleError naming the file; a loader given ``left_out=[]`` leaves such a task out instead and
lists it. A task's ``tools`` (``run``, the shell, besides the built-in five) and ``limits``
(turns, output window, write cap, command time) are its benchmark's (``task_sources``).
:func:`write_task_folder` exports a task as a ClawGym folder whose ``reward/reward.py``
imports nothing from hscale. Public benchmarks: :func:`load_pinchbench` (PinchBench task .md
files) and :func:`load_jobbench` (a JobBench parquet file).

The loaders read only a task's own regular files: symbolic links under ``input_files/`` (or
leading out of the task folder), FIFOs and devices, oversized files
(``clawgym.MAX_ENTRY_BYTES`` for ``data_entry.json``, ``task_lists.MAX_TASK_LIST_BYTES`` for a
list) and JSON nested too deeply are refused with one HscaleError line, as are solution steps
whose path leaves the workspace.

This package states the public API; the code lives in its modules: ``specs`` (checker specs,
path rule), ``timeout`` (wall-clock limit for calls), ``checkers`` (running checkers),
``sandbox`` (limits and clean-up for reward scripts), ``jail`` (their containment: own
namespaces, no capabilities, as ``hscale doctor`` reports it), ``judge`` (the LLM judge of
rubric checkers), ``task`` (the Task type), ``rows`` (Task <-> row dict), ``clawgym`` (task
folders), ``task_lists`` (JSONL/parquet lists), and ``pinchbench`` (with ``pinchbench_grader``,
its grading as PinchBench's runner does it) and ``jobbench`` (public benchmark formats).
"""

from ._checkers import (
    CheckerError,
    checker_words,
    remove_entry,
    run_checker,
    score_answer,
    scoring,
)
from ._clawgym import (
    MAX_INPUT_FILE_BYTES,
    MAX_INPUT_TOTAL_BYTES,
    load_task_folder,
    write_task_folder,
)
from ._jail import containment
from ._jobbench import load_jobbench
from ._judge import (
    PARALLEL_REQUESTS,
    JudgeError,
    ask_judge,
    judge_configured,
    parse_scores,
)
from ._pinchbench import (
    NOT_TASKS,
    load_pinchbench,
)
from ._rows import (
    task_from_row,
    task_to_row,
)
from ._sandbox import (
    ScriptLimits,
    no_network_prefix,
    plain_env,
    run_limited,
)
from ._specs import (
    FOLDER_HINT,
    MAX_PATH_CHARS,
    TARGETS,
    Checker,
    check_spec,
    path_problem,
    uses_judge,
)
from ._task import (
    SPLITS,
    Task,
    limits_problem,
    tools_problem,
)
from ._task_lists import (
    load_tasks,
    write_tasks,
)
from ._timeout import call_with_timeout

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
