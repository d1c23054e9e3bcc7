"""Results that hscale did not measure: the papers' reported numbers and external CSVs.

Two CSV shapes are accepted. Episode rows (eval.parquet's columns; at least ``arm``,
``benchmark``, ``setting``, ``harness``, ``task_id``, ``success``) join the measured episodes
and go through every statistic. Summary rows (``method``, ``metric``, ``value``; the shape of
hscale.analysis's data/reported.csv) only appear beside measured numbers in the tables.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hscale.contracts import as_bool, check_eval

SUMMARY_COLUMNS = ("source", "paper", "table", "model", "algorithm", "method", "baseline",
                   "benchmark", "setting", "harness", "metric", "value", "std", "note")
EPISODE_REQUIRED = ("arm", "benchmark", "setting", "harness", "task_id", "success")
EPISODE_DEFAULTS = {"seed": 0, "run": 0, "step": 0, "turns": 0, "model": "unknown",
                    "algorithm": "unknown"}


def reported_csv() -> Path:
    """The papers' reported numbers, shipped with the package (analysis/data/reported.csv)."""
    return Path(__file__).resolve().parent / "data" / "reported.csv"


def empty_summary() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="float64" if c in ("value", "std") else "object")
                         for c in SUMMARY_COLUMNS})


def read_reported(path: bool | str | Path = True) -> pd.DataFrame:
    """The papers' numbers as summary rows with source ``reported`` (empty if not found)."""
    if path is False:
        return empty_summary()
    csv = reported_csv() if path is True else Path(path)
    if not csv.is_file():
        return empty_summary()
    return summary_rows(pd.read_csv(csv, dtype=str, keep_default_na=False), "reported")


def summary_rows(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    """Normalise a summary CSV: every column present, numbers parsed, blanks as ''."""
    frame = frame.copy()
    for col in SUMMARY_COLUMNS:
        if col not in frame.columns:
            frame[col] = ""
    frame["source"] = frame["source"].where(frame["source"].astype(str) != "", source)
    for col in ("value", "std"):
        frame[col] = pd.to_numeric(frame[col].replace("", None), errors="coerce")
    text = [c for c in SUMMARY_COLUMNS if c not in ("value", "std")]
    frame[text] = frame[text].fillna("").astype(str)
    return frame[list(SUMMARY_COLUMNS)].reset_index(drop=True)


def read_csv_results(path: Path, problems: list[str]
                     ) -> tuple[pd.DataFrame | None, pd.DataFrame | None]:
    """One external CSV: (episode rows, None) or (None, summary rows); problems name the file."""
    try:
        frame = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        problems.append(f"{path}: cannot be read ({type(exc).__name__}: {exc})")
        return None, None
    if {"metric", "value", "method"} <= set(frame.columns):
        return None, summary_rows(frame.astype({"metric": str}), "external")
    missing = [c for c in EPISODE_REQUIRED if c not in frame.columns]
    if missing:
        problems.append(f"{path}: neither episode rows (missing {', '.join(missing)}) nor "
                        "summary rows (method, metric, value)")
        return None, None
    for col, value in {**EPISODE_DEFAULTS, "experiment": path.stem}.items():
        if col not in frame.columns:
            frame[col] = value
    if "reward" not in frame.columns:
        try:
            frame["reward"] = as_bool(frame["success"]).astype(float)
        except ValueError as exc:
            problems.append(f"{path}: bad values ({exc})")
            return None, None
    checked = check_eval(frame, str(path), problems)
    if checked is None:
        return None, None
    checked["method"] = checked["arm"].astype(str) + f" [{path.stem}]"  # never merges with ours
    checked["source"] = "external"
    return checked, None
