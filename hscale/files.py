"""Files written atomically (a temporary file in the same folder, then a rename), so readers
and resumed runs never see half a file, whatever kills the writer."""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from hscale.errors import HscaleError

if TYPE_CHECKING:
    import pandas as pd


def cache_dir() -> Path:
    """hscale's cache (base models, PinchBench graders, black-box harnesses):
    ``$HSCALE_CACHE``, default ``~/.cache/hscale``."""
    return Path(os.environ.get("HSCALE_CACHE") or Path.home() / ".cache" / "hscale")


def refuse_foreign_file(path: Path, ours: Callable[[Path], bool], what: str, hint: str,
                        name: str | None = None) -> None:
    """Refuse, before any work, to write a file at ``path`` where that would replace what is
    not ``what``: a folder, a link, a special file (never opened: a FIFO would block), or a
    file ``ours`` does not recognise. ``name`` says the path in the message."""
    shown = name or str(path)
    if path.is_dir() and not path.is_symlink():
        raise HscaleError(f"{shown}: is a folder", hint)
    if path.is_symlink() or path.exists() and not path.is_file():
        raise HscaleError(f"{shown}: exists and is not a plain file", hint)
    if path.exists() and not ours(path):
        raise HscaleError(f"{shown}: exists and is not {what}", hint)


def reads_as(read: Callable[[Path], object]) -> Callable[[Path], bool]:
    """``ours`` for the refusals above: a file is ours when ``read`` takes it without an
    HscaleError (a design CSV that ``read_array`` reads, a checkpoint ``load`` loads)."""
    def ours(path: Path) -> bool:
        try:
            read(path)
        except HscaleError:
            return False
        return True

    return ours


def refuse_foreign_folder(path: Path, ours: Callable[[Path], bool], what: str, hint: str,
                          name: str | None = None) -> None:
    """Refuse to write into a folder at ``path`` where that could replace what is not
    ``what``: a file or link there, or a folder neither empty nor recognised by ``ours``."""
    shown = name or str(path)
    if path.is_symlink() or path.exists() and not path.is_dir():
        raise HscaleError(f"{shown}: exists and is not a folder", hint)
    if path.is_dir() and any(path.iterdir()) and not ours(path):
        raise HscaleError(f"{shown}: a folder that is not empty and not {what}", hint)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename: readers never see half a
    file. A link, FIFO or device at ``path`` is refused, never replaced or written through."""
    path = Path(path)
    if path.is_dir():
        raise HscaleError(f"{path} is a folder", "give a file name such as oa.csv")
    if path.is_symlink() or path.exists() and not path.is_file():
        # a rename would put a plain file where a link, FIFO or device was: never that
        raise HscaleError(f"{path}: exists and is not a plain file (a link, FIFO or device)",
                          "give the path of a new file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise HscaleError(f"cannot write {path}: {exc.strerror}",
                          "check the folder exists and is writable") from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes 0600; give the usual file mode
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write text via a temporary file and rename: readers never see half a file."""
    atomic_write_bytes(path, text.encode())


def write_parquet(path: str | Path, frame: pd.DataFrame) -> None:
    """A DataFrame as parquet (no index), atomically."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    atomic_write_bytes(path, buffer.getvalue())


def hash_files(files: Iterable[tuple[str, Path]], max_bytes: int | None = None) -> str:
    """sha256 over ``(name, path)`` pairs in the order given: each name, its size and its
    bytes (read in chunks), so the same files under the same names hash the same on any
    machine, wherever they lie. More than ``max_bytes`` in all raises OverflowError."""
    digest, total = hashlib.sha256(), 0
    for name, path in files:
        size = os.stat(path).st_size
        total += size
        if max_bytes is not None and total > max_bytes:
            raise OverflowError(total)
        digest.update(f"{name}\0{size}\0".encode())
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                digest.update(chunk)
    return digest.hexdigest()


def last_line(path: str | Path, most: int = 300) -> str:
    """A log's last non-empty line, read from its tail (``(no log)``, ``(empty log)``)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log)"
    return next((ln.strip() for ln in reversed(lines) if ln.strip()), "(empty log)")[:most]
