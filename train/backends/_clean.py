"""Dropping what a completed run no longer needs: its checkpoints (veRL's can be tens of GB a
run). Results, manifests and logs stay; a run that is not COMPLETED keeps everything, since
resuming needs its checkpoint."""

from __future__ import annotations

import shutil
from pathlib import Path

from hscale.contracts import MANIFEST, Manifest, RunState, read_status

CHECKPOINTS = ("checkpoint.pt", "verl/checkpoints")  # the embedded trainer's, veRL's


def checkpoint_paths(run_dir: Path) -> list[Path]:
    return [run_dir / name for name in CHECKPOINTS if (run_dir / name).exists()]


def size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def drop_checkpoints(run_dir: Path) -> int:
    """Delete a run's checkpoints; the bytes freed."""
    freed = 0
    for path in checkpoint_paths(run_dir):
        freed += size(path)
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    return freed


def clean(root: str | Path, dry_run: bool = False) -> list[tuple[Path, int]]:
    """Every completed run under ``root`` with checkpoints: (run folder, bytes), deleted
    unless ``dry_run``."""
    out = []
    for manifest in sorted(Path(root).rglob(MANIFEST)):
        run_dir = manifest.parent
        status = read_status(run_dir)
        if status.state is not RunState.COMPLETED or not checkpoint_paths(run_dir):
            continue
        try:
            if not status.is_done(Manifest.read(run_dir)):
                continue
        except Exception:  # a damaged manifest: leave the run alone
            continue
        freed = sum(size(p) for p in checkpoint_paths(run_dir)) if dry_run \
            else drop_checkpoints(run_dir)
        out.append((run_dir, freed))
    return out
