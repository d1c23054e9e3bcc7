"""Arrays on disk: CSV with a header of factor names, one row per run, integer levels."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from design.space import MAX_LEVELS
from hscale.errors import HscaleError
from hscale.files import atomic_write_text


def read_array(path: str | Path) -> tuple[np.ndarray, list[str]]:
    """Read an array CSV; every problem is reported with the file and line it is on."""
    path = Path(path)
    if not path.is_file():
        raise HscaleError(f"{path}: no such file", "give the path of a CSV array")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise HscaleError(f"{path}: cannot read it ({exc.__class__.__name__})",
                          "give a UTF-8 CSV file") from None
    rows = [r for r in csv.reader(text.splitlines()) if any(c.strip() for c in r)]
    if not rows:
        raise HscaleError(f"{path}: file is empty", "write a header row of factor names, "
                          "then one row of integer levels per run")
    header = [c.strip() for c in rows[0]]
    if all(_is_int(c) for c in header):
        raise HscaleError(f"{path}: line 1 has no header of factor names",
                          "add a first row such as S,T,O,C,W")
    if len(set(header)) != len(header) or any(not c for c in header):
        raise HscaleError(f"{path}: line 1: factor names must be distinct and non-empty")
    body = []
    for lineno, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise HscaleError(f"{path}: line {lineno} has {len(row)} fields, the header has "
                              f"{len(header)}", "give one level per factor on every row")
        bad = [c for c in row if not _is_int(c)]
        if bad:
            raise HscaleError(f"{path}: line {lineno}: {bad[0].strip()!r} is not an integer level",
                              "levels are integers 0..L-1")
        values = [int(c) for c in row]
        if min(values) < 0:
            raise HscaleError(f"{path}: line {lineno}: negative level", "levels are 0..L-1")
        if max(values) >= MAX_LEVELS:
            raise HscaleError(f"{path}: line {lineno}: level {max(values)} is too large",
                              f"levels are 0..L-1 with L at most {MAX_LEVELS}")
        body.append(values)
    if not body:
        raise HscaleError(f"{path}: header but no runs", "add one row per run")
    return np.asarray(body, dtype=np.int64), header


def _is_int(text: str) -> bool:
    try:
        int(text.strip())
    except ValueError:
        return False
    return True


def array_to_csv(array: np.ndarray, names: Sequence[str]) -> str:
    lines = [",".join(names)]
    lines += [",".join(str(int(v)) for v in row) for row in np.asarray(array)]
    return "\n".join(lines) + "\n"


def write_array(path: str | Path, array: np.ndarray, names: Sequence[str]) -> None:
    arr = np.asarray(array)
    if arr.ndim != 2 or arr.shape[1] != len(names):
        raise HscaleError(f"{len(names)} names for an array of shape {arr.shape}")
    atomic_write_text(path, array_to_csv(arr, names))
