"""Arrays on disk: CSV with a header of factor names, one row per run, integer levels.

Reading is strict, and every problem is an :class:`HscaleError` naming the file and line:
a level is ASCII digits only (``int`` would also take ``'٣'``, ``'３'`` and ``'1_0'``), and the
file's size is checked before it is read.
"""

from __future__ import annotations

import csv
import io
import re
from array import array as int_buffer
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hscale.design._space import MAX_FACTORS, MAX_LEVELS
from hscale.errors import HscaleError
from hscale.files import atomic_write_text, reads_as, refuse_foreign_file

# Largest file read: 64 MiB holds over 30 million levels, far more than an array to verify.
MAX_FILE_BYTES = 64 * 2**20
# A level: ASCII digits, with a minus only so that a negative level is reported as one.
_LEVEL = re.compile(r"[ \t]*(-?)([0-9]+)[ \t]*")
# A row of valid levels (below MAX_LEVELS) at once: the common case costs one match per row.
_DIGITS = len(str(MAX_LEVELS - 1))
_CELL = rf"[ \t]*0*[0-9]{{1,{_DIGITS}}}[ \t]*"
_GOOD_ROW = re.compile(rf"{_CELL}(?:,{_CELL})*")


def read_array(path: str | Path) -> tuple[np.ndarray, list[str]]:
    """Read an array CSV; every problem is reported with the file and line it is on."""
    path = Path(path)
    rows = _rows(path, _text(path))
    if not rows:
        raise HscaleError(f"{path}: file is empty", "write a header row of factor names, "
                          "then one row of integer levels per run")
    first, header = rows[0][0], [c.strip() for c in rows[0][1]]
    if all(_is_number(c) for c in header):
        raise HscaleError(f"{path}: line {first} has no header of factor names",
                          "add a first row such as S,T,O,C,W")
    if len(header) > MAX_FACTORS:
        raise HscaleError(f"{path}: line {first} names {len(header)} factors, more than "
                          f"hscale handles ({MAX_FACTORS})", "use fewer columns")
    if len(set(header)) != len(header) or not all(c and c.isprintable() for c in header):
        raise HscaleError(f"{path}: line {first}: factor names must be distinct, non-empty "
                          "and printable", "write a header such as S,T,O,C,W")
    if any(_is_number(c) for c in header):
        raise HscaleError(f"{path}: line {first}: a factor name is a number "
                          f"({next(c for c in header if _is_number(c))!r})",
                          "name factors with letters, such as S,T,O,C,W")
    cells = int_buffer("q")
    for lineno, row in rows[1:]:
        if len(row) != len(header):
            raise HscaleError(f"{path}: line {lineno} has {len(row)} fields, the header has "
                              f"{len(header)}", "give one level per factor on every row")
        joined = ",".join(row)  # a quoted comma would add a field: count them too
        if joined.count(",") != len(row) - 1 or not _GOOD_ROW.fullmatch(joined):
            _bad_level(path, lineno, row)
        cells.extend(map(int, row))
    if not len(cells):
        raise HscaleError(f"{path}: header but no runs", "add one row per run")
    return np.frombuffer(cells, dtype=np.int64).reshape(-1, len(header)).copy(), header


def _is_number(cell: str) -> bool:
    """A level in any script's digits: ``٣`` is no more a factor name than ``3``."""
    cell = cell.strip(" \t")
    return bool(cell) and cell.removeprefix("-").isdecimal()


def _text(path: Path) -> str:
    """The file as text, refused before reading when it is not a file or too large."""
    if not path.is_file():
        raise HscaleError(f"{path}: no such file", "give the path of a CSV array")
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise HscaleError(f"{path}: cannot read it ({exc.strerror or exc.__class__.__name__})",
                          "check the path and its permissions") from None
    if len(data) > MAX_FILE_BYTES:
        raise HscaleError(f"{path}: larger than hscale reads ({MAX_FILE_BYTES} bytes)",
                          "verify a smaller array")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise HscaleError(f"{path}: line {line}: not UTF-8 text (byte {data[exc.start]:#04x})",
                          "give a UTF-8 CSV file") from None


def _rows(path: Path, text: str) -> list[tuple[int, list[str]]]:
    """(first line, fields) of every non-blank row; a malformed row names its line."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows, done = [], 0
    while True:
        try:
            row = next(reader, None)
        except csv.Error as exc:
            raise HscaleError(f"{path}: line {reader.line_num}: not a valid CSV row ({exc})",
                              "write plain comma-separated levels, one run per line") from None
        if row is None:
            return rows
        if any(c.strip(" \t") for c in row):
            rows.append((done + 1, row))
        done = reader.line_num


def _bad_level(path: Path, lineno: int, row: list[str]) -> None:
    """Raise the error for the first field of ``row`` that is not a level 0..MAX_LEVELS-1."""
    for cell in row:
        m = _LEVEL.fullmatch(cell)
        shown = cell.strip(" \t")
        shown = repr(shown if len(shown) <= 40 else shown[:40] + "...")
        if m is None:
            raise HscaleError(f"{path}: line {lineno}: {shown} is not an integer level",
                              "levels are integers 0..L-1, written with the digits 0-9")
        if m.group(1):
            raise HscaleError(f"{path}: line {lineno}: negative level {shown}",
                              "levels are 0..L-1")
        if len(m.group(2).lstrip("0")) > _DIGITS:
            raise HscaleError(f"{path}: line {lineno}: level {shown} is too large",
                              f"levels are 0..L-1 with L at most {MAX_LEVELS}")
    raise HscaleError(f"{path}: line {lineno}: a field holds a comma",
                      "levels are integers 0..L-1, written with the digits 0-9")


def array_to_csv(array: np.ndarray, names: Sequence[str]) -> str:
    lines = [",".join(names)]
    lines += [",".join(str(int(v)) for v in row) for row in np.asarray(array)]
    return "\n".join(lines) + "\n"


def check_array_target(path: str | Path) -> None:
    """Refuse to write an array where it would replace what is not one: a folder, a link, a
    special file, or a file that does not read as a design CSV (a user's own file)."""
    path = Path(path)
    hint = "give a new file path (nothing was changed)"
    if path.is_dir() and not path.is_symlink():
        hint = "give a file path for the CSV (nothing was changed)"
    refuse_foreign_file(path, reads_as(read_array),
                        "a design CSV; hscale replaces only its own arrays", hint)


def write_array(path: str | Path, array: np.ndarray, names: Sequence[str]) -> None:
    """Write ``array`` as a design CSV; an existing file is replaced only if it is one."""
    arr = np.asarray(array)
    if arr.ndim != 2 or arr.shape[1] != len(names):
        raise HscaleError(f"{len(names)} names for an array of shape {arr.shape}")
    check_array_target(path)
    atomic_write_text(path, array_to_csv(arr, names))
