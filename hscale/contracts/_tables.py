"""The result tables of a run folder: ``schedule.parquet``, ``eval.parquet`` (one row per
evaluated episode, built by :func:`eval_row`, written through :func:`write_eval`, checked on
reading by :func:`check_eval`), ``transcripts.parquet`` (one row per eval row, the episode
as the model saw it, keyed by :data:`EVAL_KEY`) and ``train.parquet`` (one row per training
step)."""

from __future__ import annotations

import math
import warnings
import zlib
from pathlib import Path
from typing import Any

import pandas as pd

from hscale.contracts._manifest import EVAL, REPLAN, TRAIN, Manifest
from hscale.contracts._outcome import Outcome
from hscale.contracts._vocabulary import BEHAVIOUR, COST, SETTINGS, Decoding
from hscale.errors import HscaleError, HscaleWarning
from hscale.files import write_parquet

SCHEDULE_COLUMNS: dict[str, str] = {
    "step": "int64", "task_id": "str", "harness": "str", "anchor": "str", "slot": "int64"}
EVAL_COLUMNS: dict[str, str] = {
    "experiment": "str", "arm": "str", "seed": "int64", "run": "int64", "step": "int64",
    "benchmark": "str", "setting": "str", "harness": "str", "task_id": "str",
    "reward": "float64", "success": "bool", "turns": "int64"}
# ``decoding`` tells the independent sampled runs from an extra greedy pass (recorded as run 0)
# ``error``: why an episode failed outside the policy's control, e.g. "checker: timeout after
# 10 s" (a broken reward script scores 0 and is counted here, never a dead run)
# the behaviour counts of its trajectory (hscale.harness._behaviour; NaN where not observed)
# and what it cost (model calls, prompt and completion tokens; NaN where not counted)
# ``termination``: how the episode ended (hscale.contracts.Termination; empty where unseen)
EVAL_OPTIONAL: dict[str, str] = {"decoding": "str", "category": "str", "error": "str",
                                 "termination": "str",
                                 **dict.fromkeys(BEHAVIOUR, "float64"),
                                 **dict.fromkeys(COST, "float64")}
TRANSCRIPTS = "transcripts.parquet"
# what tells one eval row of a run folder from every other (with experiment, arm and seed,
# one of a whole study): the key of transcripts.parquet
EVAL_KEY = ("run", "step", "benchmark", "setting", "harness", "task_id", "decoding")
# transcripts.parquet: the run's identity, EVAL_KEY, then the episode's wall-clock seconds
# (a measurement of the machine, so kept out of eval.parquet, whose rows a rerun repeats)
# and its transcript (JSON; hscale.harness._transcript says its keys)
TRANSCRIPT_COLUMNS: dict[str, str] = {
    "experiment": "str", "arm": "str", "seed": "int64",
    **{k: EVAL_COLUMNS.get(k, "str") for k in EVAL_KEY}, "seconds": "float64",
    "transcript": "str"}
ROLLOUTS = "rollouts.parquet"
# rollouts.parquet: the training episodes a run keeps (its manifest's ``keep_rollouts``), one
# row each: the step and group (a task's rollouts) it belongs to, its ``role`` (ROLLOUT_ROLES),
# the harness it was played under, its outcome, cost, seconds and transcript
ROLLOUT_COLUMNS: dict[str, str] = {
    "experiment": "str", "arm": "str", "seed": "int64", "step": "int64", "group": "int64",
    "role": "str", "task_id": "str", "harness": "str", "reward": "float64", "success": "bool",
    "turns": "int64", **dict.fromkeys(COST, "float64"), "seconds": "float64",
    "transcript": "str"}
# "sampled": a group the manifest's share keeps; "zero-signal": a Harness-S group none of
# whose rollouts succeeded (what was replaced); "rescue": a routed sibling's rollout that
# replaced it (``group`` the one it rescues)
ROLLOUT_ROLES = ("sampled", "zero-signal", "rescue")


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
             harness: str, task_id: str, outcome: Outcome, decoding: str = Decoding.SAMPLED,
             category: str = "unknown") -> dict[str, Any]:
    """One eval.parquet row of ``manifest``'s run (its experiment, arm and seed): the episode
    that identity names, and its ``outcome``'s columns, typed as the contract types them,
    with its transcript and seconds when kept (which :func:`write_eval` moves to
    transcripts.parquet). The run's recorder builds every row here, so no two drivers can
    drift apart."""
    row = {"experiment": manifest.experiment, "arm": manifest.arm, "seed": manifest.seed,
           "run": int(run), "step": int(step), "benchmark": str(benchmark),
           "setting": str(setting), "harness": str(harness), "task_id": str(task_id),
           "decoding": str(decoding), "category": str(category), **outcome.columns()}
    if outcome.transcript is not None:
        row.update(seconds=float(outcome.seconds), transcript=str(outcome.transcript))
    return row


def rollout_row(manifest: Manifest, *, step: int, group: int, role: str, harness: str,
                task_id: str, outcome: Outcome) -> dict[str, Any]:
    """One rollouts.parquet row of ``manifest``'s run, typed as :data:`ROLLOUT_COLUMNS`."""
    if role not in ROLLOUT_ROLES:
        raise ValueError(f"rollout role {role!r}: not one of {ROLLOUT_ROLES}")
    return {"experiment": manifest.experiment, "arm": manifest.arm, "seed": manifest.seed,
            "step": int(step), "group": int(group), "role": role, "task_id": str(task_id),
            "harness": str(harness), "reward": float(outcome.reward),
            "success": bool(outcome.success), "turns": int(outcome.turns),
            **{k: float(outcome.cost.get(k, math.nan)) for k in COST},
            "seconds": float(outcome.seconds), "transcript": str(outcome.transcript or "")}


def kept_group(manifest: Manifest, step: int, group: int) -> bool:
    """Whether training group ``group`` of ``step`` is among the share of groups whose
    rollouts the run keeps (``manifest.keep_rollouts``): a hash of the run, step and group,
    so every driver keeps the same groups and no random draw of training is consumed."""
    share = manifest.keep_rollouts
    if not share:
        return False
    return zlib.crc32(f"{manifest.hash}:{step}:{group}".encode()) < share * 2 ** 32


def transcript_views(record: dict[str, Any]) -> list[list[list[str]]]:
    """What the model saw before each of its turns, from a parsed transcript (its
    ``messages`` and ``segments``, hscale.harness._transcript): one list of ``[role,
    content]`` messages per assistant message of the history."""
    messages, segments = record["messages"], record["segments"]
    out = []
    for i, (role, _) in enumerate(messages):
        if role != "assistant":
            continue
        seg = next((s for s in segments if s[1] <= i < s[3]), None)
        out.append([*seg[0], *messages[seg[1]:i]] if seg else messages[:i])
    return out


def write_eval(run_dir: str | Path, rows: list[dict[str, Any]] | pd.DataFrame) -> None:
    """eval.parquet of ``rows``, and transcripts.parquet of those that carry a transcript
    (written first: eval.parquet is what says a run's results are in). Rows without one (an
    older run's, resumed) keep none; no rows with one: no transcripts.parquet."""
    run_dir = Path(run_dir)
    frame = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    kept = frame.iloc[:0]
    if "transcript" in frame.columns:
        kept = frame[frame["transcript"].notna()]
    if len(kept):
        write_parquet(run_dir / TRANSCRIPTS, typed_frame(kept[list(TRANSCRIPT_COLUMNS)],
                                                         TRANSCRIPT_COLUMNS))
    else:  # another plan's, never these rows'
        (run_dir / TRANSCRIPTS).unlink(missing_ok=True)
    write_parquet(run_dir / EVAL, eval_frame(frame.drop(columns=["seconds", "transcript"],
                                                        errors="ignore")))


def write_rollouts(run_dir: str | Path, rows: list[dict[str, Any]]) -> None:
    """rollouts.parquet of ``rows`` (hscale.contracts.rollout_row's); none kept: no file (an
    earlier plan's is never this run's)."""
    path = Path(run_dir) / ROLLOUTS
    if rows:
        write_parquet(path, typed_frame(rows, ROLLOUT_COLUMNS))
    else:
        path.unlink(missing_ok=True)


def read_rollouts(run_dir: str | Path, before: int) -> list[dict[str, Any]]:
    """The kept rollouts of the steps before ``before`` (where a resumed run continues), as
    rows; none when the file is missing or damaged (a sample is lost, never the run)."""
    path = Path(run_dir) / ROLLOUTS
    if not path.is_file():
        return []
    try:
        frame = pd.read_parquet(path)
    except Exception:  # truncated or not parquet: pyarrow raises several types
        warnings.warn(f"{path}: unreadable, the kept rollouts start again", HscaleWarning,
                      stacklevel=2)
        return []
    return frame[frame.step < before].to_dict("records")


def read_eval(run_dir: str | Path, transcripts: bool = False) -> pd.DataFrame:
    """eval.parquet as written; with ``transcripts``, each row's ``seconds`` and
    ``transcript`` joined from transcripts.parquet (missing where it has none), as a writer
    that resumes needs them to write them again."""
    run_dir = Path(run_dir)
    frame = pd.read_parquet(run_dir / EVAL)
    if not transcripts or not (run_dir / TRANSCRIPTS).is_file():
        return frame
    kept = pd.read_parquet(run_dir / TRANSCRIPTS, columns=[*EVAL_KEY, "seconds", "transcript"])
    kept = kept.drop_duplicates(list(EVAL_KEY), keep="last")
    return frame.merge(kept, on=list(EVAL_KEY), how="left", validate="many_to_one")


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


def check_columns(frame: pd.DataFrame, columns: dict[str, str], name: str,
                  problems: list[str]) -> pd.DataFrame | None:
    """``frame`` with ``columns`` (a contract's, all present) in their contracted types:
    numbers that are whole where an int64 is, true/false or 1/0 where a bool is, text with
    no empty cell where a str is (a number there, from a CSV, becomes its text). None, with
    one problem naming the file, the column and a bad value, when a column cannot be."""
    frame = frame.copy()
    for col, kind in columns.items():
        values = frame[col]
        try:
            if kind == "str":
                empty = values.isna()
                if empty.any():
                    raise ValueError(f"{int(empty.sum())} empty cells")
                frame[col] = values.astype(str)
            elif kind == "bool":
                frame[col] = as_bool(values)
            else:
                numbers = pd.to_numeric(values)
                if kind == "int64" and not (numbers == numbers.round()).all():
                    raise ValueError("not whole numbers")
                frame[col] = numbers.astype(kind)
        except (TypeError, ValueError, OverflowError) as exc:
            bad = _first_bad(values, kind)
            problems.append(f"{name}: column {col} is not {_KINDS[kind]} ("
                            + (f"e.g. {bad!r}" if bad is not None else str(exc)[:80]) + ")")
            return None
    return frame


_KINDS = {"str": "text", "bool": "true/false", "int64": "whole numbers",
          "float64": "numbers"}


def _first_bad(values: pd.Series, kind: str) -> str | None:
    """The first value of ``values`` that is not of ``kind`` (for the message), cut short."""
    for value in values:
        if not _fits(value, kind):
            text = str(value)
            return text if len(text) <= 40 else text[:40] + "..."
    return None


def _fits(value: Any, kind: str) -> bool:
    if kind == "str":
        return value is not None and not (isinstance(value, float) and math.isnan(value))
    try:
        if kind == "bool":
            as_bool(pd.Series([value]))
            return True
        return kind != "int64" or float(value).is_integer()
    except (TypeError, ValueError, OverflowError):
        return False


def check_eval(frame: pd.DataFrame, name: str, problems: list[str]) -> pd.DataFrame | None:
    """An eval.parquet (or an external CSV of its shape) as read: required columns present,
    in their types (:func:`check_columns`; ``turns`` defaults to 0), values in range. None,
    with the reason appended to ``problems``, when it cannot be used; softer findings are
    appended too."""
    missing = [c for c in EVAL_COLUMNS if c not in frame.columns and c != "turns"]
    if missing:
        problems.append(f"{name}: missing columns {', '.join(missing)}")
        return None
    if "turns" not in frame.columns:
        frame = frame.assign(turns=0)
    frame = check_columns(frame, EVAL_COLUMNS, name, problems)
    if frame is None:
        return None
    if len(frame) and not frame["reward"].between(0, 1).all():
        problems.append(f"{name}: rewards outside [0, 1]")
    unknown = sorted({str(s) for s in frame["setting"].unique()} - set(SETTINGS))
    if unknown:
        problems.append(f"{name}: unknown settings {', '.join(unknown)} "
                        f"(expected {', '.join(SETTINGS)})")
    return frame


def check_rollouts(frame: pd.DataFrame, name: str, problems: list[str]
                   ) -> pd.DataFrame | None:
    """A rollouts.parquet as read (its columns but ``transcript`` and ``seconds``, which a
    reader takes on demand), as :func:`check_eval` checks an eval.parquet."""
    wanted = {c: k for c, k in ROLLOUT_COLUMNS.items() if c not in ("transcript", "seconds")}
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        problems.append(f"{name}: missing columns {', '.join(missing)}")
        return None
    return check_columns(frame, wanted, name, problems)


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


