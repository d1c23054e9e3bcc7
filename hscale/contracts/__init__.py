"""The file contracts between stages, in code: every writer and every reader imports them.

A run folder ``runs/<experiment>/<arm>/<seed>/`` holds

- ``manifest.json``: :class:`Manifest`, everything a trainer needs, content-hashed, made of
  typed records (:class:`SpaceRecord`, :class:`AssignmentRecord`, ...);
- ``schedule.parquet``: :data:`SCHEDULE_COLUMNS`, one row per (step, task, harness);
- ``eval.parquet``: :data:`EVAL_COLUMNS` (+ :data:`EVAL_OPTIONAL`, the behaviour counts and
  the :data:`COST` of each episode), one row per evaluated episode, built by :func:`eval_row`,
  written through :func:`write_eval`, checked on reading by :func:`check_eval`;
- ``transcripts.parquet``: :data:`TRANSCRIPT_COLUMNS`, one row per eval row (keyed by
  :data:`EVAL_KEY`): the episode as the model saw it and its seconds (:func:`read_eval`
  joins them back);
- ``rollouts.parquet``: :data:`ROLLOUT_COLUMNS`, the training episodes a run keeps (its
  manifest's ``keep_rollouts`` share of groups, :func:`kept_group`; a Harness-S arm's
  zero-signal groups and their rescues), built by :func:`rollout_row`, written and read
  through :func:`write_rollouts` and :func:`read_rollouts`;
- ``train.parquet``: one row per training step, ``step`` plus one column per metric;
- ``status.json``: :class:`Status`, the run's :class:`RunState`, written by the runner alone.
- ``provenance.jsonl``: :class:`Provenance`, one line each time the run starts or resumes
  (:func:`capture_provenance`, :func:`append_provenance`): hscale's version and revision,
  the packages that shape results, the backend, the hardware, the command line, the time;
  read by :func:`read_provenance`, which skips and names a damaged line.

Beside the arm folders, ``runs/<experiment>/study.json`` (:class:`StudyRecord`) says what
the experiment set out to answer: its confirmatory hypotheses, reference arm and seeds.

The veRL backend adds the rows it hands veRL and what veRL hands back (:class:`RowInfo`,
:func:`reward_extras`, :class:`DumpedEpisode`). What one played episode produced, on every
driver, is an :class:`Outcome`, which the run's recorder turns into rows. Other tools and
notebooks read these files: extend them, never rename. They import nothing of hscale's but
its shared core (pydantic, numpy and pandas besides), so every stage, analysis included,
reads them cheaply.
"""

from __future__ import annotations

from hscale.contracts._health import CheckerHealth, checker_health, checker_health_of
from hscale.contracts._manifest import (
    EVAL,
    MANIFEST,
    OPTIONAL_FIELDS,
    REPLAN,
    SCHEDULE,
    SCHEMA_VERSION,
    STATUS,
    TRAIN,
    Manifest,
    canonical_hash,
    rng_for,
)
from hscale.contracts._outcome import Outcome
from hscale.contracts._provenance import (
    PROVENANCE,
    SHAPING,
    Hardware,
    Provenance,
    Revision,
    append_provenance,
    capture_provenance,
    read_provenance,
)
from hscale.contracts._records import (
    AlgorithmRecord,
    AssignmentRecord,
    BenchmarkRecord,
    BlackBoxRecord,
    BudgetRecord,
    EvaluationRecord,
    FactorRecord,
    LevelRecord,
    PluginRecord,
    SpaceRecord,
    VerlRecord,
)
from hscale.contracts._status import (
    RunState,
    Status,
    inspect_status,
    read_status,
    write_status,
)
from hscale.contracts._study import (
    STUDY,
    HypothesisRecord,
    StudyRecord,
    read_study,
    write_study,
)
from hscale.contracts._tables import (
    EVAL_COLUMNS,
    EVAL_KEY,
    EVAL_OPTIONAL,
    ROLLOUT_COLUMNS,
    ROLLOUT_ROLES,
    ROLLOUTS,
    SCHEDULE_COLUMNS,
    TRANSCRIPT_COLUMNS,
    TRANSCRIPTS,
    as_bool,
    check_columns,
    check_eval,
    check_rollouts,
    check_schedule,
    eval_frame,
    eval_row,
    kept_group,
    read_eval,
    read_rollouts,
    result_problems,
    rollout_row,
    schedule_frame,
    train_frame,
    transcript_views,
    typed_frame,
    write_eval,
    write_rollouts,
)
from hscale.contracts._vocabulary import (
    BASE_MODEL_ARM,
    BEHAVIOUR,
    BEHAVIOUR_COUNTS,
    BLACKBOX_PREFIX,
    CAPABILITIES,
    COST,
    DECODINGS,
    HEADLINE_SETTINGS,
    JUDGED,
    POOL_SETTING,
    ROUTED_SETTING,
    SETTINGS,
    Decoding,
    ErrorKind,
    Finding,
    PaperFit,
    Setting,
    Termination,
    blackbox_name,
    errors_of,
    is_blackbox,
    join_errors,
    unobserved,
)
from hscale.contracts._wire import (
    EXTRA_INFO,
    ROW_HINT,
    VAL_TAG,
    DumpedEpisode,
    RescueInfo,
    RowInfo,
    mapping,
    reward_extras,
    tag_truth,
    val_index,
)

__all__ = [
    "Decoding", "ErrorKind", "Finding", "HEADLINE_SETTINGS", "Outcome", "PaperFit", "Setting",
    "Termination", "errors_of", "join_errors",
    "AlgorithmRecord", "AssignmentRecord", "BASE_MODEL_ARM", "BEHAVIOUR", "BEHAVIOUR_COUNTS",
    "BLACKBOX_PREFIX", "BenchmarkRecord", "BlackBoxRecord", "BudgetRecord", "CAPABILITIES",
    "COST", "EVAL_KEY", "TRANSCRIPTS", "TRANSCRIPT_COLUMNS", "read_eval", "transcript_views",
    "write_eval", "ROLLOUTS", "ROLLOUT_COLUMNS", "ROLLOUT_ROLES", "kept_group", "rollout_row",
    "read_rollouts", "write_rollouts",
    "CheckerHealth", "checker_health", "checker_health_of",
    "PROVENANCE", "SHAPING", "Hardware", "Provenance", "Revision", "append_provenance",
    "capture_provenance", "read_provenance",
    "STUDY", "HypothesisRecord", "StudyRecord", "read_study", "write_study",
    "DECODINGS", "DumpedEpisode", "EVAL", "EVAL_COLUMNS", "EVAL_OPTIONAL", "EXTRA_INFO",
    "EvaluationRecord", "FactorRecord", "JUDGED", "LevelRecord", "MANIFEST", "Manifest",
    "OPTIONAL_FIELDS", "POOL_SETTING", "PluginRecord", "REPLAN", "ROUTED_SETTING", "ROW_HINT",
    "RescueInfo", "RowInfo", "RunState", "SCHEDULE", "SCHEDULE_COLUMNS", "SCHEMA_VERSION",
    "SETTINGS", "STATUS", "SpaceRecord", "Status", "TRAIN", "VAL_TAG", "VerlRecord", "as_bool",
    "blackbox_name", "canonical_hash", "check_columns", "check_eval", "check_rollouts",
    "check_schedule", "eval_frame",
    "eval_row", "inspect_status", "is_blackbox", "mapping", "read_status", "result_problems",
    "reward_extras", "rng_for", "schedule_frame", "tag_truth", "train_frame", "typed_frame",
    "unobserved", "val_index", "write_status",
]
