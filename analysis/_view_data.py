"""What ``hscale view`` reads: every evaluated episode of a runs folder as one table (the
eval.parquet rows, read where they lie, never copied) with the training rollouts the runs
kept (rollouts.parquet), the filters a researcher narrows it by, and each episode's
transcript, read on demand from its run's transcripts.parquet (or rollouts.parquet).

An episode's id is its row in the table, stable while one viewer runs; the table is sorted
by run folder and eval row, so the same folders give the same ids.
"""

from __future__ import annotations

import difflib
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hscale.analysis._effects import parse_harnesses
from hscale.analysis._provenance import run_records, run_rows
from hscale.contracts import (
    COST,
    EVAL,
    EVAL_KEY,
    MANIFEST,
    ROLLOUTS,
    TRANSCRIPTS,
    ErrorKind,
    check_eval,
    check_rollouts,
    errors_of,
)
from hscale.errors import HscaleError, reason

PAGE = 50  # rows a page of the table shows
# (query key, column): filters that pick one value of a column
EXACT = (("experiment", "experiment"), ("arm", "arm"), ("seed", "seed"), ("step", "step"),
         ("setting", "setting"), ("harness", "harness"), ("decoding", "decoding"),
         ("source", "source"), ("role", "role"))
# where an episode comes from: an evaluation, or a training rollout the run kept
SOURCES = {"eval": EVAL, "rollout": ROLLOUTS}
# behaviour filters: (key, what it says, the rows it keeps)
BEHAVIOURS = {
    "error-not-recovered": ("hit a tool error and did not recover",
                            lambda f: (f["tool_errors"] > 0) & (f["recovered"] == 0)),
    "error-recovered": ("hit a tool error and recovered",
                        lambda f: (f["tool_errors"] > 0) & (f["recovered"] == 1)),
    "repeated": ("repeated a call", lambda f: f["repeats"] > 0),
    "no-tool": ("called no tool", lambda f: f["tool_calls"] == 0),
    "looked-first": ("looked before acting", lambda f: f["looked_first"] == 1),
    "checker-error": ("its checker failed",
                      lambda f: f["error"].map(lambda e: ErrorKind.CHECKER in errors_of(e))),
}
COLUMNS = ("experiment", "arm", "seed", "step", "run", "benchmark", "setting", "harness",
           "task_id", "decoding", "success", "reward", "turns", "tool_calls", "tool_errors",
           "recovered", "repeats", "looked_first", *COST, "error", "source", "role", "group")


class Study:
    """The episodes under ``root`` (a runs folder, an experiment's or one run's)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise HscaleError(f"{root}: no such folder", "give a runs folder (runs/demo)")
        folders = sorted({p.parent for name in (EVAL, ROLLOUTS) for p in self.root.rglob(name)})
        parts, kept, self.problems = [], [], []
        for folder in folders:
            frames = {source: _rows(folder / name, source, self._where(folder / name),
                                    self.problems) for source, name in SOURCES.items()}
            if any(f is not None for f in frames.values()):
                kept.append(folder)
            parts += [f.assign(folder=len(kept) - 1, row=np.arange(len(f)))
                      for f in frames.values() if f is not None]
        if not parts:
            if self.problems:
                raise HscaleError(f"{root}: no readable result file under it: "
                                  + "; ".join(self.problems[:3])
                                  + (" ..." if len(self.problems) > 3 else ""),
                                  "rerun the damaged runs (hscale run resumes them)")
            raise HscaleError(f"{root}: no eval.parquet under it",
                              "run an experiment first (hscale run ...), or point at its "
                              "runs folder")
        self.folders = kept
        frame = pd.concat(parts, ignore_index=True)
        for column in COLUMNS:
            if column not in frame.columns:
                frame[column] = np.nan
        frame["error"] = frame["error"].fillna("").astype(str)
        frame["decoding"] = frame["decoding"].fillna("sampled").astype(str)
        for column in ("experiment", "arm", "benchmark", "setting", "harness", "task_id",
                       "decoding", "source", "role"):
            frame[column] = frame[column].astype(str).astype("category")
        self.frame = frame
        self.levels = parse_harnesses(frame["harness"].astype(str).unique())
        self.names = _level_names(self.folders)
        self._transcripts: OrderedDict[tuple[int, str], dict] = OrderedDict()
        self._provenance: dict[int, list[tuple[str, str]]] = {}

    def _where(self, path: Path) -> str:
        try:
            return str(path.relative_to(self.root.parent))
        except ValueError:
            return str(path)

    def __len__(self) -> int:
        return len(self.frame)

    # --- the table ----------------------------------------------------------------------
    def select(self, query: Mapping[str, str], strict: bool = True) -> pd.DataFrame:
        """The rows ``query`` keeps (its keys: :data:`EXACT`'s, ``source`` evaluated episodes
        unless ``rollout`` is asked for, ``task`` (a substring of the task id), ``outcome``
        (solved/failed), ``behaviour`` (:data:`BEHAVIOURS`), ``level`` (``T1``: the
        harnesses whose component T is at level 1)). ``strict`` (an export's ``--where``):
        a key or value that none of these knows is an HscaleError, never ignored; the page
        (not strict) passes over keys it does not know, such as ``page``."""
        if strict:
            self._check(query)
        frame, keep = self.frame, np.ones(len(self.frame), dtype=bool)
        query = {**query, "source": query.get("source") or "eval"}  # Pass@1 is of evaluations
        for key, column in EXACT:
            value = query.get(key, "")
            if value != "":
                keep &= frame[column].astype(str).to_numpy() == value
        if query.get("task"):
            keep &= frame["task_id"].astype(str).str.contains(query["task"], regex=False)
        outcome = query.get("outcome", "")
        if outcome in ("solved", "failed"):
            keep &= frame["success"].astype(bool).to_numpy() == (outcome == "solved")
        behaviour = query.get("behaviour", "")
        if behaviour in BEHAVIOURS:
            keep &= BEHAVIOURS[behaviour][1](frame).fillna(False).to_numpy(dtype=bool)
        level = query.get("level", "")
        if level:
            keep &= frame["harness"].astype(str).isin(self._at_level(level)).to_numpy()
        return frame[keep]

    def _check(self, query: Mapping[str, str]) -> None:
        """Every key of ``query`` a filter, every value one it can take."""
        choices = self.choices()
        fixed = {"outcome": ["solved", "failed"], "behaviour": list(BEHAVIOURS),
                 "source": list(SOURCES)}
        keys = [*dict(EXACT), "task", "outcome", "behaviour", "level"]
        for key, value in query.items():
            if key not in keys:
                close = difflib.get_close_matches(key, keys, n=1)
                raise HscaleError(f"--where {key}={value}: no filter {key!r}",
                                  (f"did you mean {close[0]!r}? " if close else "")
                                  + f"filters: {', '.join(keys)}")
            allowed = fixed.get(key) or choices.get(key)
            if value and allowed is not None and value not in allowed:
                close = difflib.get_close_matches(value, allowed, n=1)
                shown = ", ".join(allowed[:12]) + (" ..." if len(allowed) > 12 else "")
                raise HscaleError(f"--where {key}={value}: no episode has {key} {value!r}",
                                  (f"did you mean {close[0]!r}? " if close else "")
                                  + f"{key} is one of: {shown}")

    def _at_level(self, level: str) -> list[str]:
        factor, index = level[:1], level[1:]
        if factor not in self.levels.columns or not (index.isascii() and index.isdecimal()):
            return []
        return list(self.levels.index[self.levels[factor] == int(index)])

    def choices(self) -> dict[str, list[str]]:
        """The values each exact filter can take (for the page's menus)."""
        out = {key: sorted(map(str, self.frame[column].dropna().unique()), key=_natural)
               for key, column in EXACT}
        out["level"] = [f"{f}{lv}" for f in self.levels.columns
                        for lv in sorted(self.levels[f].unique())]
        return out

    # --- one episode --------------------------------------------------------------------
    def episode(self, index: int, strict: bool = True) -> dict[str, Any]:
        """The row ``index`` with its transcript (parsed) and seconds, where kept. A
        transcript that is not the contract's JSON is a :class:`Damaged` error naming its
        file and row; not ``strict`` (a page), the episode comes without it, its
        ``problem`` saying why."""
        if not 0 <= index < len(self.frame):
            raise KeyError(index)
        row = self.frame.iloc[index]
        source = str(row["source"])
        kept = self._kept(int(row["folder"]), source)
        key = int(row["row"]) if source == "rollout" else tuple(str(row[k]) for k in EVAL_KEY)
        seconds, text, where = kept.get(key, (np.nan, None, ""))
        out = {c: _plain(row[c]) for c in COLUMNS}
        out.update(id=index, folder=str(self.folders[int(row["folder"])]),
                   seconds=seconds if _is_number(seconds) else np.nan, transcript=None,
                   problem="", provenance=self.provenance(int(row["folder"])))
        try:
            if isinstance(kept.get(_DAMAGED), Damaged):
                raise kept[_DAMAGED]
            out["transcript"] = parse_transcript(text, where) if text is not None else None
        except Damaged as exc:
            if strict:
                raise
            out["problem"] = str(exc)
        return out

    def provenance(self, folder: int) -> list[tuple[str, str]]:
        """What made the run of ``folder`` (its provenance.jsonl), as rows for a page; read
        once a run."""
        if folder not in self._provenance:
            path = self.folders[folder]
            problems: list[str] = []
            records = run_records(path, problems, self._where(path))
            self._provenance[folder] = run_rows(records, problems)
        return self._provenance[folder]

    def _kept(self, folder: int, source: str) -> dict:
        """A run's transcripts, eval ones by eval key and kept rollouts by row, each as
        (seconds, JSON text, where it lies); a file that cannot be read is kept as a
        Damaged error under _DAMAGED (the last few files' cached)."""
        if (folder, source) in self._transcripts:
            self._transcripts.move_to_end((folder, source))
            return self._transcripts[folder, source]
        path = self.folders[folder] / (TRANSCRIPTS if source == "eval" else ROLLOUTS)
        kept: dict = {}
        if path.is_file():
            name = self._where(path)
            try:
                frame = pd.read_parquet(path)
                missing = {"seconds", "transcript", *(() if source == "rollout" else EVAL_KEY)
                           } - set(frame.columns)
                if missing:
                    raise ValueError(f"missing columns {', '.join(sorted(missing))}")
            except Exception as exc:  # pyarrow raises several unrelated types
                kept[_DAMAGED] = Damaged(f"{name}: damaged, its transcripts cannot be read "
                                         f"({reason(exc)})")
                frame = pd.DataFrame()
            for n, rec in enumerate(frame.itertuples(index=False)):
                key = n if source == "rollout" else tuple(str(getattr(rec, k)) for k in EVAL_KEY)
                kept[key] = (rec.seconds, rec.transcript, f"{name} row {n}")
        self._transcripts[folder, source] = kept
        while len(self._transcripts) > 16:
            self._transcripts.popitem(last=False)
        return kept

    def group(self, index: int) -> pd.DataFrame:
        """The other kept rollouts of a training rollout's group (for a Harness-S zero-signal
        group, the siblings' rollouts that rescued it); empty for an evaluated episode."""
        row = self.frame.iloc[index]
        if str(row["source"]) != "rollout":
            return self.frame.iloc[:0]
        f = self.frame
        same = f[(f["source"] == "rollout") & (f["folder"] == row["folder"])
                 & (f["step"] == row["step"]) & (f["group"] == row["group"])
                 & (f.index != index)]
        return same.sort_values(["role", "row"], key=lambda c: c.astype(str))

    def siblings(self, index: int, limit: int = 40) -> pd.DataFrame:
        """Other episodes of the same task (other harnesses, arms, seeds or checkpoints):
        what an episode is compared with."""
        row = self.frame.iloc[index]
        same = self.frame[(self.frame["task_id"] == row["task_id"])
                          & (self.frame["source"] == "eval") & (self.frame.index != index)]
        order = [(same["harness"] != row["harness"]).astype(int),
                 (same["arm"] != row["arm"]).astype(int)]
        same = same.assign(_h=order[0], _a=order[1]).sort_values(["_a", "_h", "step"])
        return same.drop(columns=["_h", "_a"]).head(limit)

    def differences(self, a: dict[str, Any], b: dict[str, Any]) -> list[str]:
        """What tells two episodes' settings apart: run identity, and each harness component
        whose level differs."""
        out = [f"{k}: {a[k]} | {b[k]}" for k in ("experiment", "arm", "seed", "step", "run",
                                                   "setting", "decoding") if a[k] != b[k]]
        ha, hb = str(a["harness"]), str(b["harness"])
        if ha != hb:
            if ha in self.levels.index and hb in self.levels.index:
                out += [f"component {f}: {self._level(f, self.levels.at[ha, f])} | "
                        f"{self._level(f, self.levels.at[hb, f])}" for f in self.levels.columns
                        if self.levels.at[ha, f] != self.levels.at[hb, f]]
            else:
                out.append(f"harness: {ha} | {hb}")
        if a["task_id"] != b["task_id"]:
            out.append(f"task: {a['task_id']} | {b['task_id']}")
        return out


    def _level(self, factor: str, index: int) -> str:
        names = self.names.get(factor, [])
        return names[index] if 0 <= index < len(names) else f"level {index}"


def _rows(path: Path, source: str, where: str, problems: list[str]) -> pd.DataFrame | None:
    """The table's columns of one result file (a kept rollout: a training episode, setting
    "training") in the contract's types; None when missing, or damaged (then a problem
    names it: the viewer says what it skipped, as `hscale report` does)."""
    if not path.is_file():
        return None
    try:
        frame = pd.read_parquet(path, columns=[c for c in _schema(path) if c in COLUMNS])
    except Exception as exc:  # pyarrow raises several unrelated types for a damaged file
        problems.append(f"{where}: damaged, not readable as parquet ({reason(exc)})")
        return None
    checked = (check_eval if source == "eval" else check_rollouts)(frame, where, problems)
    if checked is None:
        return None
    frame = checked.assign(source=source)
    if source == "rollout":
        frame = frame.assign(setting="training", run=0, decoding="sampled", benchmark="")
    else:
        frame = frame.assign(role="", group=-1)
    return frame


def _schema(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_schema(path).names


def _level_names(folders: list[Path]) -> dict[str, list[str]]:
    """Factor -> its levels' names, from the first run's manifest that records a space."""
    for folder in folders:
        try:
            factors = json.loads((folder / MANIFEST).read_text())["space"]["factors"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(factors, dict):
            return {str(f): [str(n) for n in names] for f, names in factors.items()
                    if isinstance(names, list)}
    return {}


_DAMAGED = "damaged"  # a _kept() entry: the file could not be read


class Damaged(HscaleError):
    """A transcript (or its file) that breaks its contract: the message names the file and
    row and says what is wrong."""


def parse_transcript(text: Any, where: str) -> dict[str, Any]:
    """A transcript's JSON (hscale.harness._transcript) checked for what the pages read:
    ``messages`` a list of [role, text] pairs; ``segments`` a list of [prefix, start,
    first, end]; ``model_calls`` a list of objects; ``termination`` and ``final_answer``
    text or null. Anything else is :class:`Damaged`."""
    def fail(what: str) -> Damaged:
        return Damaged(f"{where}: a damaged transcript ({what})",
                       "the file was changed after hscale wrote it; narrow --where to leave "
                       "this episode out")

    if not isinstance(text, str):
        raise fail(f"not text but {type(text).__name__}")
    try:
        record = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise fail(f"not JSON: {str(exc)[:80]}") from None
    if not isinstance(record, dict):
        raise fail("not a JSON object")
    messages = record.get("messages")
    if not isinstance(messages, list) or not all(_pair(m) for m in messages):
        raise fail("messages is not a list of [role, text] pairs")
    segments = record.get("segments", [])
    if not isinstance(segments, list) or not all(
            isinstance(s, list) and len(s) == 4 and isinstance(s[0], list)
            and all(_pair(m) for m in s[0]) and all(_whole(n) for n in s[1:])
            for s in segments):
        raise fail("segments is not a list of [prefix, start, first, end]")
    calls = record.get("model_calls") or []
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise fail("model_calls is not a list of objects")
    for key in ("termination", "final_answer", "expected", "checked"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise fail(f"{key} is not text")
    return record


def _pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Line:
    text: str
    changed: bool


def marked_lines(mine: str, other: str) -> list[Line]:
    """``mine`` line by line, each marked where ``other`` lacks it (a side-by-side diff)."""
    lines, theirs = mine.splitlines(), other.splitlines()
    same = set()
    for block in difflib.SequenceMatcher(a=lines, b=theirs, autojunk=False).get_matching_blocks():
        same.update(range(block.a, block.a + block.size))
    return [Line(text, i not in same) for i, text in enumerate(lines)]


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _natural(text: str) -> tuple:
    body = text[1:] if text.startswith("-") else text
    return (0, int(text), "") if body.isascii() and body.isdecimal() else (1, 0, text)
