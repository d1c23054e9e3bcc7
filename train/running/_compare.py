"""Two folders of the same run compared, as ``hscale rerun`` compares a run with its re-run:
row for row where the backend promises identical rows (the embedded trainer and the scripted
backend: every draw derives from the manifest), else by Pass@1 (veRL on GPUs: kernels and
vLLM's batching are not bitwise reproducible).

Wall-clock columns (a step's seconds, tokens a second, an episode's seconds, a model call's
seconds inside a transcript) differ on every run and are left out. A difference is named by
its file, column and first differing row, with the row's key and both values.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hscale.contracts import EVAL, EVAL_KEY, ROLLOUTS, SCHEDULE, TRAIN, TRANSCRIPTS

CHECKPOINT = "checkpoint.pt"  # the embedded trainer's (hscale.train.embedded)
TABLES = (SCHEDULE, TRAIN, EVAL, ROLLOUTS, TRANSCRIPTS)
WALL_CLOCK = ("rollout_s", "update_s", "step_s", "tokens_per_s", "seconds")
JSON_COLUMNS = ("transcript",)  # their "seconds" keys are wall clock too
KEYS = {SCHEDULE: ("step", "slot"), TRAIN: ("step",), EVAL: EVAL_KEY,
        TRANSCRIPTS: EVAL_KEY, ROLLOUTS: ("step", "group", "role", "task_id", "harness")}
MAX_PER_FILE = 5  # differing columns named per file


@dataclass(frozen=True)
class Difference:
    """Where two folders of one run first differ: ``file``, ``column`` (``(rows)``,
    ``(columns)``, ``(file)`` for the table's shape), the first differing ``row`` (None for
    a shape), that row's ``key`` values, and the value in each folder."""

    file: str
    column: str
    row: int | None
    key: str
    original: str
    rerun: str

    def line(self) -> str:
        tensor = self.file == CHECKPOINT  # a checkpoint's entry, at an element
        where = self.column if tensor or self.column.startswith("(") else \
            f"column {self.column}"
        at = f", first at {'element' if tensor else 'row'} {self.row}" + (
            f" ({self.key})" if self.key else "") if self.row is not None else ""
        return f"{self.file}: {where}{at}: {self.original} in the run, {self.rerun} in the rerun"


def compare_tables(original: Path, rerun: Path, files: tuple[str, ...] = TABLES
                   ) -> list[Difference]:
    """Every contracted table of the two folders, row for row (wall clock left out)."""
    out: list[Difference] = []
    for name in files:
        a, b = original / name, rerun / name
        if not a.is_file() and not b.is_file():
            continue
        if not a.is_file() or not b.is_file():
            out.append(Difference(name, "(file)", None, "", _has(a), _has(b)))
            continue
        out += compare_frame(name, _comparable(pd.read_parquet(a)),
                             _comparable(pd.read_parquet(b)))
    return out


def _has(path: Path) -> str:
    return "present" if path.is_file() else "missing"


def _comparable(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.drop(columns=[c for c in WALL_CLOCK if c in frame.columns])
    for column in JSON_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].map(_without_seconds)
    return frame.reset_index(drop=True)


def _without_seconds(text: Any) -> Any:
    """A transcript's JSON with its wall-clock ``seconds`` removed, wherever they are."""
    if not isinstance(text, str):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "seconds"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return json.dumps(strip(value), sort_keys=True)


def compare_frame(name: str, a: pd.DataFrame, b: pd.DataFrame) -> list[Difference]:
    """One table's differences: its columns, then each shared column's first differing row
    (over the rows both have), then its length."""
    out = []
    only_a = [c for c in a.columns if c not in b.columns]
    only_b = [c for c in b.columns if c not in a.columns]
    if only_a or only_b:
        out.append(Difference(name, "(columns)", None, "", ", ".join(only_a) or "none more",
                              ", ".join(only_b) or "none more"))
    rows = min(len(a), len(b))
    key = [k for k in KEYS.get(name, ()) if k in a.columns]
    for column in [c for c in a.columns if c in b.columns]:
        first = _first_difference(a[column].iloc[:rows], b[column].iloc[:rows])
        if first is None:
            if a[column].dtype != b[column].dtype and rows:
                out.append(Difference(name, column, None, "", f"type {a[column].dtype}",
                                      f"type {b[column].dtype}"))
            continue
        said = ", ".join(f"{k} {_shown(a[k].iloc[first])}" for k in key)
        out.append(Difference(name, column, first, said,
                              *_shown_pair(a[column].iloc[first], b[column].iloc[first])))
    out = out[:MAX_PER_FILE + 1]
    if len(a) != len(b):
        out.append(Difference(name, "(rows)", None, "", f"{len(a)} rows", f"{len(b)} rows"))
    return out


def _first_difference(a: pd.Series, b: pd.Series) -> int | None:
    """The first position where the values differ (missing equals missing), or None."""
    left, right = a.to_numpy(dtype=object), b.to_numpy(dtype=object)
    try:
        same = np.asarray(left == right, dtype=bool)
    except (TypeError, ValueError):  # values numpy cannot compare at once (arrays)
        same = np.array([_equal(x, y) for x, y in zip(left, right, strict=True)], dtype=bool)
    missing = pd.isna(a).to_numpy() & pd.isna(b).to_numpy()
    differ = np.flatnonzero(~(same | missing))
    for i in differ:  # a cell holding an array compared as a whole
        if not _equal(left[i], right[i]):
            return int(i)
    return None


def _equal(x: Any, y: Any) -> bool:
    try:
        return bool(np.array_equal(np.asarray(x), np.asarray(y)))
    except (TypeError, ValueError):
        return x == y


def _shown(value: Any) -> str:
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= 80 else text[:77] + "..."


def _shown_pair(x: Any, y: Any) -> tuple[str, str]:
    """Both values; two long texts from a little before where they first differ."""
    if not (isinstance(x, str) and isinstance(y, str)) or max(len(x), len(y)) <= 60:
        return _shown(x), _shown(y)
    at = next((i for i, (c, d) in enumerate(zip(x, y, strict=False)) if c != d),
              min(len(x), len(y)))
    start = max(0, at - 20)
    cut = "..." if start else ""
    return (f"{cut}{x[start:start + 60]!r}... (character {at})",
            f"{cut}{y[start:start + 60]!r}...")


def compare_checkpoints(original: Path, rerun: Path) -> list[Difference]:
    """The embedded trainer's checkpoints: identical bytes, or the first tensor (or value)
    that differs and where (read with torch, weights only)."""
    a, b = original / CHECKPOINT, rerun / CHECKPOINT
    if not a.is_file() or not b.is_file() or a.read_bytes() == b.read_bytes():
        return []
    try:
        import torch

        left = torch.load(a, map_location="cpu", weights_only=True)
        right = torch.load(b, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch.load raises any type for a damaged file
        return [Difference(CHECKPOINT, "(file)", None, "", f"unreadable ({type(exc).__name__})",
                           "readable")]
    found = _first_state_difference(left, right, "")
    if found is None:  # the same values, other bytes (another torch's format)
        return [Difference(CHECKPOINT, "(bytes)", None, "", "other bytes", "the same values")]
    return [found]


def _first_state_difference(a: Any, b: Any, where: str) -> Difference | None:
    import torch

    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            inner = f"{where}.{key}" if where else str(key)
            if key not in a or key not in b:
                return Difference(CHECKPOINT, inner, None, "", _has_key(a, key),
                                  _has_key(b, key))
            found = _first_state_difference(a[key], b[key], inner)
            if found is not None:
                return found
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_state_difference(x, y, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return Difference(CHECKPOINT, where, None, "", f"shape {tuple(a.shape)}",
                              f"shape {tuple(b.shape)}")
        if torch.equal(a, b):
            return None
        flat_a, flat_b = a.flatten(), b.flatten()
        index = int(torch.nonzero(flat_a != flat_b)[0][0])
        return Difference(CHECKPOINT, where, index, "", _shown(flat_a[index].item()),
                          _shown(flat_b[index].item()))
    same = a == b
    if isinstance(same, bool) and same:
        return None
    return Difference(CHECKPOINT, where, None, "", _shown(a), _shown(b))


def _has_key(state: dict, key: Any) -> str:
    return "present" if key in state else "missing"


@dataclass(frozen=True)
class PassCheck:
    """The statistical comparison: the run's Pass@1 and the 95% interval a rerun's Pass@1
    falls in when nothing changed (the run's own ± 1.96 √2 standard errors over its tasks:
    both runs are draws), and the rerun's."""

    original: float
    rerun: float
    lo: float
    hi: float
    tasks: int
    episodes: int

    @property
    def within(self) -> bool:
        return self.lo <= self.rerun <= self.hi

    def line(self) -> str:
        return (f"Pass@1 {self.original * 100:.1f}% in the run, {self.rerun * 100:.1f}% in "
                f"the rerun: {'within' if self.within else 'outside'} the 95% interval a "
                f"rerun falls in when nothing changed [{self.lo * 100:.1f}, "
                f"{self.hi * 100:.1f}] (the run's ± 1.96 √2 SE over its {self.tasks} tasks, "
                f"{self.episodes} sampled episodes)")


def compare_pass1(original: Path, rerun: Path) -> PassCheck | Difference:
    """Pass@1 over the sampled evaluated episodes of each folder (a Difference when either
    has none)."""
    frames = []
    for folder in (original, rerun):
        path = folder / EVAL
        frame = pd.read_parquet(path) if path.is_file() else pd.DataFrame()
        if "decoding" in frame.columns:
            frame = frame[frame["decoding"].astype(str) != "greedy"]
        frames.append(frame)
    if any(f.empty or "success" not in f.columns for f in frames):
        return Difference(EVAL, "(rows)", None, "", f"{len(frames[0])} sampled episodes",
                          f"{len(frames[1])} sampled episodes")
    a, b = frames
    per_task = a.assign(success=a["success"].astype(float)).groupby(
        a["task_id"].astype(str))["success"].mean()
    mean = float(a["success"].astype(float).mean())
    se = float(per_task.std(ddof=1) / math.sqrt(len(per_task))) if len(per_task) > 1 else 0.0
    half = 1.96 * math.sqrt(2) * (se if math.isfinite(se) else 0.0)
    return PassCheck(mean, float(b["success"].astype(float).mean()), max(0.0, mean - half),
                     min(1.0, mean + half), len(per_task), len(a))
