"""Run folders (and external CSVs) into one tidy table of evaluated episodes.

A run folder is ``runs/<exp>/<arm>/<seed>/`` with manifest.json, eval.parquet, train.parquet and
status.json (hscale.contracts), and transcripts.parquet, of which only each episode's seconds
are read here. Loading never stops at the first bad file: every
missing or corrupt file is named in ``Results.problems`` and the caller decides what is fatal.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hscale.analysis._external import empty_summary, read_csv_results, read_reported
from hscale.analysis._naming import BASE_MODEL, BASE_MODEL_ARM
from hscale.contracts import (
    EVAL,
    EVAL_COLUMNS,
    EVAL_KEY,
    EVAL_OPTIONAL,
    MANIFEST,
    POOL_SETTING,
    ROUTED_SETTING,
    SCHEDULE,
    STATUS,
    TRAIN,
    TRANSCRIPTS,
    Decoding,
    Manifest,
    RunState,
    check_eval,
    inspect_status,
)
from hscale.errors import HscaleError

RUN_FILES = (MANIFEST, EVAL, TRAIN, STATUS, SCHEDULE)
# Columns kept as categoricals: group-bys over a million rows stay fast and small.
CATEGORIES = ("source", "experiment", "model", "algorithm", "method", "arm", "benchmark",
              "setting", "harness", "task_id")
RUN_GROUP = ("source", "experiment", "model", "algorithm", "method")
# kept when present; greedy rows are kept apart; the behaviour counts stay numbers
OPTIONAL_EVAL = tuple(c for c, kind in EVAL_OPTIONAL.items() if kind == "str")
NUMERIC_EVAL = (*(c for c, kind in EVAL_OPTIONAL.items() if kind != "str"), "seconds")


@dataclass
class Results:
    """Everything ``hscale report`` needs, as plain DataFrames (notebook friendly)."""

    episodes: pd.DataFrame  # one row per evaluated episode, measured and external
    train: pd.DataFrame  # one row per training step and run
    runs: pd.DataFrame  # one row per run folder, with its manifest's sets
    reported: pd.DataFrame  # summary numbers: the papers' and external summaries
    problems: list[str] = field(default_factory=list)
    root: Path | None = None
    greedy: pd.DataFrame = field(default_factory=pd.DataFrame)  # decoding == "greedy" rows
    # the rescue arms' pool evaluations (setting "pool": hscale.analysis._pool_report), kept
    # out of every Pass@1 table
    pool: pd.DataFrame = field(default_factory=pd.DataFrame)
    routed: pd.DataFrame = field(default_factory=pd.DataFrame)  # Rank-1 routing's episodes

    def train_sets(self) -> dict[tuple[str, str], list[str]]:
        """(experiment, method) -> training harness labels, from the manifests."""
        out: dict[tuple[str, str], list[str]] = {}
        for row in self.runs.itertuples():
            if isinstance(row.train_harnesses, list | tuple):
                out.setdefault((row.experiment, row.method), list(row.train_harnesses))
        return out


def find_run_dirs(root: Path) -> list[Path]:
    """Folders holding a run file, up to three levels below ``root`` (runs/<exp>/<arm>/<seed>)."""
    if any((root / name).exists() for name in RUN_FILES):
        return [root]
    found = {p.parent for depth in ("*", "*/*", "*/*/*") for name in RUN_FILES
             for p in root.glob(f"{depth}/{name}")}
    return sorted(d for d in found if "report" not in d.relative_to(root).parts)


def _where(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root.parent if path == root else root))
    except ValueError:
        return str(path)


def _read_json(path: Path, name: str, problems: list[str]) -> dict | None:
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.append(f"{name}: corrupt ({type(exc).__name__}: {exc})")
        return None
    if not isinstance(value, dict):
        problems.append(f"{name}: corrupt (expected a JSON object)")
        return None
    return value


def _read_parquet(path: Path, name: str, problems: list[str]) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a damaged file
        problems.append(f"{name}: corrupt ({type(exc).__name__}: {str(exc)[:160]})")
        return None


def _with_seconds(episodes: pd.DataFrame | None, path: Path) -> pd.DataFrame | None:
    """Each episode's wall-clock seconds from transcripts.parquet, where the run kept them
    (the transcripts themselves are the viewer's, never loaded here)."""
    key = list(EVAL_KEY)
    if episodes is None or not path.is_file() or not set(key) <= set(episodes.columns):
        return episodes
    try:
        kept = pd.read_parquet(path, columns=[*key, "seconds"])
    except Exception:  # damaged or older: the report goes on without seconds
        return episodes
    kept = kept.drop_duplicates(key).astype({k: episodes[k].dtype for k in key})
    return episodes.merge(kept, on=key, how="left")


@dataclass
class _Run:
    path: Path
    meta: dict
    episodes: pd.DataFrame | None
    train: pd.DataFrame | None


def read_run(path: Path, root: Path, problems: list[str]) -> _Run:
    """One run folder; every missing or damaged file becomes a problem naming it. A manifest
    that breaks the contract is named too, and what it holds still identifies the run."""
    where = _where(path, root)
    here: list[str] = []
    manifest = _read_json(path / MANIFEST, f"{where}/{MANIFEST}", here)
    status, damaged = inspect_status(path)
    if damaged is not None:
        here.append(f"{where}/{STATUS}: {damaged}")
    if manifest is None and not (path / MANIFEST).is_file():
        here.append(f"{where}/{MANIFEST}: missing")
    elif manifest is not None:
        try:
            Manifest.parse(manifest, f"{where}/{MANIFEST}")
        except HscaleError as exc:
            here.append(exc.message)
    state = status.state.value if status is not None else \
        "UNKNOWN" if damaged is not None else RunState.PLANNED.value
    if state not in (RunState.COMPLETED.value, "UNKNOWN"):
        detail = f": {status.error}" if status is not None and status.error else ""
        unfinished = not RunState(state).is_terminal
        here.append(f"{where}: run is {state}{detail}"
                    + (" (unfinished: `hscale run` resumes it)" if unfinished else ""))
    if (status is not None and manifest and status.manifest_hash
            and manifest.get("hash") and status.manifest_hash != manifest["hash"]):
        here.append(f"{where}/{STATUS}: manifest hash differs from {MANIFEST} "
                    "(results may be stale)")
    episodes = _read_parquet(path / EVAL, f"{where}/{EVAL}", here)
    if episodes is None and not (path / EVAL).is_file():
        here.append(f"{where}/{EVAL}: missing")
    elif episodes is not None:
        episodes = check_eval(episodes, f"{where}/{EVAL}", here)
        _check_identity(episodes, manifest, f"{where}/{EVAL}", here)
        episodes = _with_seconds(episodes, path / TRANSCRIPTS)
    train = _read_parquet(path / TRAIN, f"{where}/{TRAIN}", here)
    if train is None and not (path / TRAIN).is_file():
        here.append(f"{where}/{TRAIN}: missing")
    elif train is not None and "step" not in train.columns:
        here.append(f"{where}/{TRAIN}: missing column step")
        train = None
    problems.extend(here)
    meta = _meta(path, manifest, episodes, state)
    began, ended = _span(status)
    meta.update(backend=(status.backend if status is not None else "") or
                str((manifest or {}).get("backend") or ""),
                seconds=(ended - began).total_seconds() if began and ended else float("nan"),
                started=began, ended=ended)
    return _Run(path, meta, episodes, train)


def _span(status: Any) -> tuple[Any, Any]:
    """When a run's last start began and when it ended (None where status.json does not
    say): its seconds, and with the other runs' the wall time of the experiment."""
    try:
        return (datetime.fromisoformat(status.started_at),
                datetime.fromisoformat(status.completed_at or status.updated_at))
    except (AttributeError, TypeError, ValueError):
        return None, None


def _check_identity(episodes: pd.DataFrame | None, manifest: dict | None, name: str,
                    problems: list[str]) -> None:
    """Rows that name another experiment, arm or seed than their manifest are a copy error."""
    if episodes is None or manifest is None or not len(episodes):
        return
    for col, kind in (("experiment", str), ("arm", str), ("seed", int)):
        value = manifest.get(col)
        if not isinstance(value, kind) or isinstance(value, bool):
            continue  # a manifest field of the wrong type is reported, and not used
        if (episodes[col].astype(str) != str(value)).any():
            problems.append(f"{name}: rows name another {col} than manifest.json "
                            f"({value!r}); the manifest's is used")


def _meta(path: Path, manifest: dict | None, episodes: pd.DataFrame | None, state: str) -> dict:
    """Run identity from the manifest, else from the eval rows, else from the folder names.
    A manifest field of the wrong type (already reported) is passed over, never trusted."""
    m = manifest if isinstance(manifest, dict) else {}
    first = episodes.iloc[0] if episodes is not None and len(episodes) else None

    def typed(key: str, kind: type | tuple[type, ...], fallback: Any) -> Any:
        value = m.get(key)
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        return value if ok else fallback

    algorithm = m.get("algorithm")
    space = typed("space", dict, {})
    labels = typed("train_harnesses", list, [])
    return {
        "experiment": str(typed("experiment", str, first["experiment"] if first is not None
                                else path.parent.parent.name)),
        "arm": str(typed("arm", str, first["arm"] if first is not None else path.parent.name)),
        "seed": int(typed("seed", int, first["seed"] if first is not None
                          else _int(path.name))),
        "model": str(typed("model", str, "") or "unknown"),
        "algorithm": str(algorithm.get("name") if isinstance(algorithm, dict)
                         else algorithm if isinstance(algorithm, str) and algorithm
                         else "unknown"),
        "state": state, "path": str(path),
        "train_harnesses": [x for x in labels if isinstance(x, str)],
        "eval_sets": {k: v for k, v in typed("eval_sets", dict, {}).items()
                      if isinstance(v, list) and k != POOL_SETTING},
        "space": space.get("factors") if isinstance(space.get("factors"), dict) else None,
        "components": {f.get("factor"): f.get("component") for f in space["components"]
                       if isinstance(f, dict)}
        if isinstance(space.get("components"), list) else None,
        "budget": dict(typed("budget", dict, {})),
        "assignment": dict(typed("assignment", dict, {})),
    }


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def _method_names(runs: pd.DataFrame) -> pd.Series:
    """The arm's name (the reference run's: "base model (no RL)"), qualified by its
    experiment when two experiments share it."""
    key = runs[["model", "algorithm", "arm"]].astype(str).agg("|".join, axis=1)
    shared = runs.groupby(key)["experiment"].transform("nunique") > 1
    names = runs["arm"].astype(str).replace(BASE_MODEL_ARM, BASE_MODEL)
    return names.where(~shared, names + " (" + runs["experiment"] + ")")


def tidy(frame: pd.DataFrame) -> pd.DataFrame:
    """Categorical keys and fixed dtypes, so every consumer sees the same table."""
    frame = frame.reset_index(drop=True)
    for col in CATEGORIES:
        if col in frame.columns:
            frame[col] = _categorical(frame[col])
    return frame


def _categorical(values: pd.Series) -> pd.Series:
    """String categories; a column that already is categorical only has its labels cast."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        if values.cat.categories.dtype == object or all(
                isinstance(c, str) for c in values.cat.categories):
            return values
        return values.cat.rename_categories([str(c) for c in values.cat.categories])
    return values.astype(str).astype("category")


def concat_tidy(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate run tables: key columns are unioned as categoricals (no string copies),
    other columns aligned by pandas (a metric one run lacks is NaN there)."""
    from pandas.api.types import union_categoricals

    parts = [tidy(p) for p in parts]
    keys = [c for c in CATEGORIES if all(c in p.columns for p in parts)]
    out = pd.concat([p.drop(columns=keys) for p in parts], ignore_index=True)
    for col in keys:
        out[col] = union_categoricals([p[col] for p in parts], ignore_order=True)
    return out


def _empty_episodes() -> pd.DataFrame:
    cols = {c: pd.Series(dtype="object" if t == "str" else t) for c, t in EVAL_COLUMNS.items()}
    return tidy(pd.DataFrame({**cols, **{c: pd.Series(dtype="object") for c in
                                         ("model", "algorithm", "method", "source")}}))


def load_results(root: str | Path, external: Sequence[str | Path] = (),
                 reported: bool | str | Path = True) -> Results:
    """Every run under ``root`` plus external CSVs and the papers' reported numbers.

    External CSVs are read from ``root/external/*.csv`` and from ``external``; the papers'
    numbers from analysis/data/reported.csv (``reported=False`` leaves them out).
    Raises HscaleError only when nothing usable is found; otherwise see ``problems``.
    """
    root = Path(root)
    if not root.exists():
        raise HscaleError(f"{root} does not exist", "pass the runs/<experiment> folder that "
                          "`hscale run` wrote")
    problems: list[str] = []
    runs = [read_run(p, root, problems) for p in find_run_dirs(root)] if root.is_dir() else []
    ext_paths = _external_paths(root, external)
    ext_eps, ext_summary = [], []
    for path in ext_paths:
        eps, summary = read_csv_results(path, problems)
        ext_eps += [eps] if eps is not None else []
        ext_summary += [summary] if summary is not None else []
    if not runs and not ext_eps:
        raise HscaleError(f"no run folders found under {root}",
                          "pass runs/<experiment> (folders <arm>/<seed>/ with manifest.json "
                          "and eval.parquet), or add external CSVs")
    table = pd.DataFrame([r.meta for r in runs]) if runs else pd.DataFrame(
        columns=["experiment", "arm", "seed", "model", "algorithm"])
    if len(table):
        table["method"] = _method_names(table)
        table["source"] = "measured"
    combined = _combine_episodes(runs, table, ext_eps)
    setting = combined["setting"].astype(str)
    pool = combined[setting == POOL_SETTING].reset_index(drop=True)
    routed = combined[setting == ROUTED_SETTING].reset_index(drop=True)
    episodes, greedy = split_decoding(combined[~setting.isin([POOL_SETTING, ROUTED_SETTING])]
                                      .reset_index(drop=True))
    if episodes.empty and pool.empty:
        raise HscaleError(f"no evaluated episodes under {root}: "
                          + "; ".join(problems[:6]) + (" ..." if len(problems) > 6 else ""),
                          "run `hscale run EXPERIMENT.yaml` to completion first")
    summary = [s for s in [read_reported(reported)] + ext_summary if len(s)]
    reported_frame = pd.concat(summary, ignore_index=True) if summary else empty_summary()
    return Results(episodes=episodes, train=_combine_train(runs, table), runs=table,
                   reported=reported_frame, problems=problems, root=root, greedy=greedy,
                   pool=pool, routed=routed)


def split_decoding(episodes: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(sampled rows, greedy rows): Pass@1 averages independent sampled runs only. A run
    with greedy rows alone (``hscale evaluate --decoding greedy``) is measured by them."""
    if "decoding" not in episodes.columns:
        return episodes, episodes.iloc[0:0]
    greedy = (episodes["decoding"].astype(str) == "greedy").to_numpy()
    keys = [c for c in ("experiment", "arm", "seed") if c in episodes.columns]
    run = episodes[keys].astype(str).agg("|".join, axis=1) if keys else None
    if run is not None and greedy.any():
        sampled_runs = set(run[~greedy])
        alone = greedy & ~run.isin(sampled_runs).to_numpy()
    else:
        alone = np.zeros(len(episodes), dtype=bool)
    return (episodes[~greedy | alone].reset_index(drop=True),
            episodes[greedy & ~alone].reset_index(drop=True))


def _external_paths(root: Path, external: Iterable[str | Path]) -> list[Path]:
    beside = sorted((root / "external").glob("*.csv")) if root.is_dir() else []
    return beside + [Path(p) for p in external]


def _constant(value: str, rows: int) -> pd.Categorical:
    return pd.Categorical.from_codes(np.zeros(rows, dtype=np.int64), [str(value)])


def _with_meta(frame: pd.DataFrame, meta: pd.Series) -> pd.DataFrame:
    """Run identity from the manifest (rows that disagree were reported by read_run)."""
    frame = frame.copy()
    for col in ("model", "algorithm", "method", "source", "experiment", "arm"):
        frame[col] = _constant(meta[col], len(frame))
    return frame


def _combine_episodes(runs: list[_Run], table: pd.DataFrame,
                      external: list[pd.DataFrame]) -> pd.DataFrame:
    parts = [_with_meta(r.episodes, table.iloc[i]) for i, r in enumerate(runs)
             if r.episodes is not None and len(r.episodes)]
    parts += [e for e in external if len(e)]
    if not parts:
        return _empty_episodes()
    keep = [*EVAL_COLUMNS, "model", "algorithm", "method", "source"]
    out = concat_tidy([p[keep + [c for c in (*OPTIONAL_EVAL, *NUMERIC_EVAL) if c in p.columns]]
                       for p in parts])
    for col in OPTIONAL_EVAL:
        if col in out.columns:
            filled = out[col].astype(object).where(out[col].notna(), _FILL.get(col, ""))
            out[col] = filled.astype(str).astype("category")
    return out


# what an optional text column reads as where a run's rows lack it (any other: empty)
_FILL = {"decoding": Decoding.SAMPLED, "category": "unknown"}


def _combine_train(runs: list[_Run], table: pd.DataFrame) -> pd.DataFrame:
    parts = []
    for i, r in enumerate(runs):
        if r.train is None or not len(r.train):
            continue
        frame = _with_meta(r.train, table.iloc[i])
        frame["seed"] = int(table.iloc[i]["seed"])
        parts.append(frame)
    if not parts:
        return pd.DataFrame(columns=["step", *RUN_GROUP, "arm", "seed"])
    return concat_tidy(parts)
