"""Which format a task set is in (``hscale tasks``'s ``--kind``, guessed from its shape when
not given) and how a ``--split`` rule is written."""

from __future__ import annotations

from pathlib import Path

from hscale.errors import HscaleError

KINDS = ("clawgym", "jsonl", "parquet", "pinchbench", "jobbench")
JOBBENCH_COLUMNS = {"task_id", "prompt", "rubric_json"}
KIND_HINT = f"give --kind, one of {', '.join(KINDS)}"


def guess_kind(path: str | Path) -> str:
    """The benchmark kind of ``path`` from its shape: ClawGym folders hold data_entry.json,
    ``.jsonl`` is a task list, ``.parquet`` a task list unless its columns are JobBench's,
    ``.md`` files are PinchBench tasks."""
    path = Path(path)
    if path.is_dir():
        subdirs = [p for p in sorted(path.iterdir()) if is_task_dir(p)]
        if is_one_folder(path) or any(lexists(p / "data_entry.json") for p in subdirs):
            return "clawgym"
        if any(has_front_matter(p) for p in path.glob("*.md")):
            return "pinchbench"
        if subdirs:
            return "clawgym"  # task folders, none with data_entry.json: check says so
        raise HscaleError(f"{path}: neither task folders nor PinchBench .md files", KIND_HINT)
    if not path.is_file():
        raise HscaleError(f"{path}: no such file or folder",
                          "give a folder of ClawGym task folders, a .jsonl, .parquet or .md")
    if path.suffix == ".jsonl":
        return "jsonl"
    if path.suffix == ".md":
        return "pinchbench"
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            columns = set(pq.read_schema(path).names)
        except Exception:  # unreadable: the task-list reader says why
            return "parquet"
        jobbench = columns >= JOBBENCH_COLUMNS and "user_query" not in columns
        return "jobbench" if jobbench else "parquet"
    raise HscaleError(f"{path}: cannot tell the task format from {path.suffix or 'no suffix'!r}",
                      KIND_HINT)


def parse_split(text: str | float) -> str | float:
    """A benchmark split rule: recorded, train, eval, or a share of eval tasks in (0, 1)."""
    if text in ("recorded", "train", "eval"):
        return str(text)
    try:
        share = float(text)
    except (TypeError, ValueError):
        share = -1.0
    if not 0.0 < share < 1.0:
        raise HscaleError(f"split {text!r} is not recorded, train, eval or a share in (0, 1)",
                          "e.g. --split recorded or --split 0.3")
    return share


def resolve_kind(path: str | Path, kind: str | None) -> str:
    if kind is None:
        return guess_kind(path)
    if kind not in KINDS:
        raise HscaleError(f"unknown task set kind {kind!r}", KIND_HINT)
    return kind


def lexists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def is_one_folder(path: Path) -> bool:
    """Whether the folder ``path`` is one ClawGym task folder (perhaps a broken one)."""
    if lexists(path / "data_entry.json"):
        return True
    if any(lexists(p / "data_entry.json") for p in path.iterdir() if p.is_dir()):
        return False
    return (path / "input_files").is_dir() or (path / "reward").is_dir()


def is_task_dir(path: Path) -> bool:
    return path.is_dir() and not path.name.startswith(".") and path.name != "__pycache__"


def has_front_matter(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(8).removeprefix(b"\xef\xbb\xbf").startswith(b"---")
    except OSError:
        return False
