"""The file contracts between stages, in code: every writer and every reader imports this.

A run folder ``runs/<experiment>/<arm>/<seed>/`` holds

- ``manifest.json``: :class:`Manifest`, everything a trainer needs, content-hashed;
- ``schedule.parquet``: :data:`SCHEDULE_COLUMNS`, one row per (step, task, harness);
- ``eval.parquet``: :data:`EVAL_COLUMNS` (+ :data:`EVAL_OPTIONAL`), one row per evaluated
  episode; writers build it with :func:`eval_frame`, readers check it with :func:`check_eval`;
- ``train.parquet``: one row per training step, ``step`` plus one column per metric;
- ``status.json``: :class:`Status`, the run's :class:`RunState`, written by the runner alone
  (and by hscale.analysis.synthetic, which fakes finished runs).

Other tools and notebooks read these files: extend them, never rename. Torch-free (pydantic,
numpy and pandas only), so analysis and planning can import it cheaply.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from hscale.errors import HscaleError
from hscale.files import atomic_write_text
from hscale.harness.behaviour import BEHAVIOUR, behaviour, unobserved
from hscale.harness.blackbox import is_blackbox
from hscale.train.records import (
    AlgorithmRecord,
    AssignmentRecord,
    BenchmarkRecord,
    BudgetRecord,
    EvaluationRecord,
    SpaceRecord,
)

if TYPE_CHECKING:
    from hscale.design.space import FactorSpace

SCHEMA_VERSION = 1
MANIFEST, SCHEDULE, EVAL, TRAIN, STATUS = (
    "manifest.json", "schedule.parquet", "eval.parquet", "train.parquet", "status.json")
REPLAN = "re-plan the run (hscale plan --force)"


# ------------------------------------------------------------------------------- manifest

# Fields added after schema 1: hashed only when set, so manifests that lack them keep
# their hashes (a run planned before stays the same run).
OPTIONAL_FIELDS = ("tracking",)


class Manifest(BaseModel):
    """One resolved, content-hashed run: ``hash`` is the sha256 of the canonical JSON of every
    other field, so the same spec gives the same hash on any machine. Top-level fields beyond
    these are kept (and hashed): a newer writer may extend the contract. Frozen at the top
    level; its dicts are not, and ``read`` refuses a manifest whose hash no longer matches.

    A backend's own settings are an extension: a top-level key named for the backend (the
    veRL backend's ``verl``), hashed with the rest, read and checked by that backend alone
    (:meth:`extension`)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    schema_version: int = SCHEMA_VERSION
    experiment: str
    arm: str
    seed: int
    space: SpaceRecord
    train_harnesses: tuple[str, ...]
    eval_sets: dict[str, tuple[str, ...]]
    assignment: AssignmentRecord
    algorithm: AlgorithmRecord
    budget: BudgetRecord
    benchmark: BenchmarkRecord
    model: str
    evaluation: EvaluationRecord
    backend: str
    tracking: tuple[str, ...] | None = None
    hash: str = ""

    @classmethod
    def build(cls, **fields: Any) -> Manifest:
        """A manifest from its fields, with its hash computed."""
        draft = cls.model_validate({**fields, "hash": ""})
        return draft.model_copy(update={"hash": canonical_hash(draft.hashed_body())})

    def body(self) -> dict[str, Any]:
        """Everything but the hash (and unset optional fields), as JSON types."""
        unset = {f for f in OPTIONAL_FIELDS if getattr(self, f) is None}
        return self.model_dump(mode="json", exclude={"hash", *unset})

    def hashed_body(self) -> dict[str, Any]:
        """What the hash covers: :meth:`body`, less the paths of benchmarks whose content is
        hashed (the files are the benchmark; where they lie differs between machines)."""
        body = self.body()

        def portable(record: dict[str, Any]) -> dict[str, Any]:
            return {k: v for k, v in record.items() if k != "path"} \
                if record.get("content") else record

        body["benchmark"] = portable(body["benchmark"])
        if body["space"].get("plugins"):  # a plugin is its code, wherever its file lies
            body["space"] = {**body["space"], "plugins": [
                {k: v for k, v in p.items() if k != "path"} for p in body["space"]["plugins"]]}
        if body["evaluation"].get("benchmarks"):
            body["evaluation"] = {**body["evaluation"], "benchmarks": [
                portable(b) for b in body["evaluation"]["benchmarks"]]}
        return body

    def extension(self, key: str) -> Any:
        """A top-level field this contract does not define (a backend's own record, as
        planned), or None when the manifest has none."""
        return (self.model_extra or {}).get(key)

    def to_json(self) -> str:
        return json.dumps({**self.body(), "hash": self.hash}, indent=2) + "\n"

    def write(self, run_dir: str | Path) -> Path:
        path = Path(run_dir) / MANIFEST
        atomic_write_text(path, self.to_json())
        return path

    @classmethod
    def parse(cls, raw: object, where: str) -> Manifest:
        """A manifest from decoded JSON; an HscaleError naming ``where`` and the first bad
        field, or a hash that no longer matches the content (edited after planning)."""
        if not isinstance(raw, dict):
            raise HscaleError(f"{where}: a manifest is a JSON object, found "
                              f"{type(raw).__name__}", REPLAN)
        try:
            manifest = cls.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or "(top level)"
            raise HscaleError(f"{where}: {field}: {err['msg']}", REPLAN) from None
        if manifest.schema_version != SCHEMA_VERSION:
            raise HscaleError(f"{where}: schema_version {manifest.schema_version}, this hscale "
                              f"reads {SCHEMA_VERSION}", REPLAN)
        if manifest.hash != canonical_hash(manifest.hashed_body()):
            raise HscaleError(f"{where}: the hash does not match the content (edited after "
                              "planning?)", REPLAN)
        return manifest

    @classmethod
    def read(cls, run_dir: str | Path) -> Manifest:
        """``run_dir/manifest.json`` (or that file itself), checked."""
        path = Path(run_dir)
        path = path / MANIFEST if path.is_dir() else path
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise HscaleError(f"{path}: no such file", "plan the run first (hscale plan)") \
                from None
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise HscaleError(f"{path}: unreadable ({type(exc).__name__})", REPLAN) from None
        return cls.parse(raw, str(path))

    # --- what every consumer derives from it ------------------------------------------
    def rng(self, purpose: str) -> np.random.Generator:
        """The run's generator for one purpose (``"sampler"``, ``"schedule"``, ...)."""
        return rng_for(self.seed, self.arm, purpose)

    def factor_space(self) -> FactorSpace:
        """The run's factor space rebuilt from the manifest alone."""
        from hscale.design.space import Factor, FactorSpace

        return FactorSpace(tuple(Factor(n, tuple(levels))
                                 for n, levels in self.space.factors.items()),
                           name=self.space.name)

    def harness_space(self) -> Any:
        """The run's HarnessSpace (hscale.harness.spaces): its plugins loaded, each refused
        when its code changed since planning."""
        from hscale.harness.spaces import from_record

        return from_record(self.space.model_dump(mode="json"))

    def harness(self, label: str) -> Any:
        """The harness a label of this run names, in its space (a preset name such as
        ``oos/shell`` outside it): one template a process, which episodes copy."""
        from hscale.harness.harness import harness_named

        return harness_named(label, self.harness_space())


def canonical_hash(body: dict[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def rng_for(seed: int, *names: str) -> np.random.Generator:
    """A generator derived from a seed and stable names (not Python's salted hash)."""
    return np.random.default_rng([seed, *(zlib.crc32(n.encode()) for n in names)])


# ------------------------------------------------------------------------------- tables

SCHEDULE_COLUMNS: dict[str, str] = {
    "step": "int64", "task_id": "str", "harness": "str", "anchor": "str", "slot": "int64"}
EVAL_COLUMNS: dict[str, str] = {
    "experiment": "str", "arm": "str", "seed": "int64", "run": "int64", "step": "int64",
    "benchmark": "str", "setting": "str", "harness": "str", "task_id": "str",
    "reward": "float64", "success": "bool", "turns": "int64"}
# ``decoding`` tells the independent sampled runs from an extra greedy pass (recorded as run 0)
# ``error``: why an episode failed outside the policy's control, e.g. "checker: timeout after
# 10 s" (a broken reward script scores 0 and is counted here, never a dead run)
# the behaviour counts of its trajectory (hscale.harness.behaviour; NaN where not observed)
EVAL_OPTIONAL: dict[str, str] = {"decoding": "str", "category": "str", "error": "str",
                                 **dict.fromkeys(BEHAVIOUR, "float64")}
# ``pool``: a rescue arm's base harness and siblings on the router's validation tasks (the
# training split, never the held-out eval tasks), for the pool properties, not for Pass@1
POOL_SETTING = "pool"
# ``routed``: Rank-1 routing at evaluation (the profiles router): each held-out task under the
# one sibling its judges put first
ROUTED_SETTING = "routed"
SETTINGS = ("base", "in_space", "out_of_space", POOL_SETTING, ROUTED_SETTING)
# the arm of each seed's reference run: the starting model evaluated at step 0, no training
BASE_MODEL_ARM = "base-model"
DECODINGS = ("sampled", "greedy")


def typed_frame(rows: list[dict[str, Any]] | pd.DataFrame, columns: dict[str, str],
                optional: dict[str, str] | None = None) -> pd.DataFrame:
    """Rows as a frame with the contract's columns first, in its dtypes; optional and extra
    columns follow. Writers use it, so every file of a kind has the same schema."""
    frame = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    for col in columns:
        if col not in frame.columns:
            frame[col] = pd.Series(dtype="object")
    types = {**columns, **{c: t for c, t in (optional or {}).items() if c in frame.columns}}
    order = [*columns, *[c for c in frame.columns if c not in columns]]
    return frame[order].astype(types)


def eval_row(manifest: Manifest, *, step: int, run: int, benchmark: str, setting: str,
             harness: str, task_id: str, reward: float, success: bool, turns: int,
             decoding: str = "sampled", category: str = "unknown", error: str = "",
             behaviour: dict[str, float] | None = None) -> dict[str, Any]:
    """One eval.parquet row of ``manifest``'s run (its experiment, arm and seed), typed as the
    contract types it. Every writer builds its rows here, so no two can drift apart."""
    return {"experiment": manifest.experiment, "arm": manifest.arm, "seed": manifest.seed,
            "run": int(run), "step": int(step), "benchmark": str(benchmark),
            "setting": str(setting), "harness": str(harness), "task_id": str(task_id),
            "reward": float(reward), "success": bool(success), "turns": int(turns),
            "decoding": str(decoding), "category": str(category), "error": str(error or ""),
            **{k: float(v) for k, v in (behaviour or unobserved()).items()}}


def episode_row(manifest: Manifest, job: Any, episode: Any, *, step: int,
                decoding: str = "sampled") -> dict[str, Any]:
    """:func:`eval_row` of an evaluated episode: ``job`` says what was played (``run``,
    ``benchmark``, ``setting``, ``harness``, ``task``: an ``EvalJob``), ``episode`` how it
    went (``reward``, ``success``, ``turns``, ``error``, its tool calls: an ``Episode``; a
    black-box CLI's are its own, not observed)."""
    return eval_row(manifest, step=step, run=job.run, benchmark=job.benchmark,
                    setting=job.setting, harness=job.harness, task_id=job.task.task_id,
                    reward=episode.reward, success=episode.success, turns=episode.turns,
                    decoding=decoding, category=job.task.category, error=episode.error,
                    behaviour=unobserved() if is_blackbox(job.harness) else behaviour(episode))


def eval_frame(rows: list[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    """eval.parquet rows in the contract's columns and dtypes."""
    return typed_frame(rows, EVAL_COLUMNS, EVAL_OPTIONAL)


def train_frame(rows: list[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    """train.parquet rows: ``step`` (int64) first, then the metrics as floats."""
    frame = typed_frame(rows, {"step": "int64"})
    metrics = {c: "float64" for c in frame.columns if c != "step"}
    return frame.astype(metrics)


def schedule_frame(rows: list[dict[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    return typed_frame(rows, SCHEDULE_COLUMNS)


def check_schedule(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """A schedule as read back: every contracted column, in order of step and slot."""
    missing = [c for c in SCHEDULE_COLUMNS if c not in frame.columns]
    if missing:
        raise HscaleError(f"{where}: missing columns {', '.join(missing)}", REPLAN)
    frame = frame.sort_values(["step", "slot"], kind="stable").reset_index(drop=True)
    return schedule_frame(frame)


def check_eval(frame: pd.DataFrame, name: str, problems: list[str]) -> pd.DataFrame | None:
    """An eval.parquet (or an external CSV of its shape) as read: required columns present,
    values in range, types coerced (``turns`` defaults to 0). None, with the reason appended
    to ``problems``, when it cannot be used; softer findings are appended too."""
    missing = [c for c in EVAL_COLUMNS if c not in frame.columns and c != "turns"]
    if missing:
        problems.append(f"{name}: missing columns {', '.join(missing)}")
        return None
    frame = frame.copy()
    if "turns" not in frame.columns:
        frame["turns"] = 0
    try:
        for col in ("seed", "run", "step", "turns"):
            frame[col] = pd.to_numeric(frame[col]).astype("int64")
        frame["reward"] = pd.to_numeric(frame["reward"]).astype("float64")
        frame["success"] = as_bool(frame["success"])
    except (TypeError, ValueError) as exc:
        problems.append(f"{name}: bad values ({exc})")
        return None
    if len(frame) and not frame["reward"].between(0, 1).all():
        problems.append(f"{name}: rewards outside [0, 1]")
    unknown = sorted({str(s) for s in frame["setting"].unique()} - set(SETTINGS))
    if unknown:
        problems.append(f"{name}: unknown settings {', '.join(unknown)} "
                        f"(expected {', '.join(SETTINGS)})")
    return frame


def result_problems(run_dir: str | Path, manifest: Manifest, train: bool = True) -> list[str]:
    """Why a run's result files do not hold a finished run (empty when they do): readable,
    in the contract, eval rows at the final step for every setting, and (``train``) one
    train row for every step."""
    run_dir, problems = Path(run_dir), []
    try:
        evals = pd.read_parquet(run_dir / EVAL)
    except Exception as exc:  # missing, truncated, not parquet: pyarrow raises several types
        problems.append(f"{EVAL} is unreadable ({type(exc).__name__})")
    else:
        checked = check_eval(evals, EVAL, problems)
        if checked is not None:
            final = set(checked.loc[checked.step == manifest.budget.steps, "setting"])
            lacking = sorted(set(manifest.eval_sets) - final)
            if lacking:
                problems.append(f"{EVAL} has no rows at step {manifest.budget.steps} for "
                                f"{', '.join(lacking)}")
    if train:
        try:
            steps = pd.read_parquet(run_dir / TRAIN, columns=["step"])["step"].tolist()
        except Exception as exc:  # as above
            problems.append(f"{TRAIN} is unreadable ({type(exc).__name__})")
        else:
            if sorted(steps) != list(range(manifest.budget.steps)):
                problems.append(f"{TRAIN} holds {len(steps)} of {manifest.budget.steps} steps")
    return problems


def as_bool(values: pd.Series) -> pd.Series:
    """true/false or 1/0 (any case, as text or numbers) as booleans; else a ValueError."""
    if values.dtype == bool:
        return values
    lowered = values.astype(str).str.strip().str.lower()
    mapped = lowered.map({"true": True, "1": True, "1.0": True, "false": False, "0": False,
                          "0.0": False})
    if mapped.isna().any():
        raise ValueError("success must be true/false or 1/0")
    return mapped.astype(bool)


# ------------------------------------------------------------------------------- status


class RunState(StrEnum):
    """A run's lifecycle, recorded in its folder as status.json::

        PLANNED --> RUNNING --> COMPLETED
                       |------> FAILED       (error message kept)
                       '------> INTERRUPTED  (Ctrl-C or a killed runner: resumable)

    A RUNNING status left behind by a killed process is treated as INTERRUPTED.
    """

    PLANNED = "PLANNED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    INTERRUPTED = "INTERRUPTED"

    @property
    def is_terminal(self) -> bool:
        """The run ended (successfully or not); a re-run starts it again only if FAILED."""
        return self in (RunState.COMPLETED, RunState.FAILED)


class Status(BaseModel):
    """status.json: the state, the manifest it belongs to, timestamps, the error when FAILED,
    and fields a backend adds (e.g. ``ray_job_id``)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    state: RunState = RunState.PLANNED
    manifest_hash: str = ""
    backend: str = ""
    started_at: str = ""
    updated_at: str = ""
    completed_at: str = ""
    error: str = ""

    def is_done(self, manifest: Manifest) -> bool:
        """COMPLETED for this very manifest: nothing left to run."""
        return self.state is RunState.COMPLETED and self.manifest_hash == manifest.hash

    def extra_fields(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


def inspect_status(run_dir: str | Path) -> tuple[Status | None, str | None]:
    """The run's status.json as this contract reads it: ``(status, None)``; ``(None, None)``
    when there is none; ``(None, why)`` when it is damaged (the runner then treats the run
    as INTERRUPTED, a report names it)."""
    path = Path(run_dir) / STATUS
    if not path.is_file():
        return None, None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"corrupt ({type(exc).__name__}: {exc})"
    if not isinstance(raw, dict):
        return None, "corrupt (expected a JSON object)"
    try:
        return Status.model_validate(raw), None
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        return None, f"corrupt ({field}: {err['msg']})"


def read_status(run_dir: str | Path) -> Status:
    """The run's status; PLANNED when there is none, INTERRUPTED when it is unreadable."""
    status, problem = inspect_status(run_dir)
    if problem is not None:
        return Status(state=RunState.INTERRUPTED)
    return status or Status()


def write_status(run_dir: str | Path, state: RunState, manifest_hash: str, *,
                 error: str = "", **fields: Any) -> Status:
    """Record ``state`` (the runner's job alone); ``started_at`` survives state changes."""
    previous = read_status(run_dir)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    status = Status(state=state, manifest_hash=manifest_hash,
                    started_at=previous.started_at or now, updated_at=now,
                    completed_at=now if state is RunState.COMPLETED else "", error=error,
                    **fields)
    body = {k: v for k, v in status.model_dump(mode="json").items() if v != ""}
    atomic_write_text(Path(run_dir) / STATUS, json.dumps(body, indent=2) + "\n")
    return status
