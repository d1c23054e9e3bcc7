"""The one writer of a run's result files: :class:`Recorder`.

Every driver (the embedded trainer, the scripted backend, ``hscale evaluate``, veRL's dump
import) hands it what it played and trained: an evaluated episode with the :class:`EvalJob`
it played (or, from veRL's dumps, the same identity and a :class:`hscale.contracts.Outcome`),
a training step's kept rollouts, a step's metrics. The recorder builds the rows (through the
contract's constructors), trims them to a checkpoint when a run resumes, and writes
``eval.parquet`` (with ``transcripts.parquet``), ``rollouts.parquet`` and ``train.parquet``,
each only when it has grown, atomically. A new result column is a field of the Outcome, the
line of hscale.harness.outcome that measures it and its type in the contract: no driver
changes, and no driver writes a result file itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hscale.contracts import (
    EVAL,
    EVAL_OPTIONAL,
    ROLLOUTS,
    TRAIN,
    TRANSCRIPTS,
    Decoding,
    Manifest,
    Outcome,
    eval_frame,
    eval_row,
    kept_group,
    read_eval,
    read_rollouts,
    rollout_row,
    train_frame,
    write_eval,
    write_rollouts,
)
from hscale.files import write_parquet

RESULT_FILES = (TRAIN, EVAL, TRANSCRIPTS, ROLLOUTS)


class Recorder:
    """The result rows of the run in ``run_dir`` (of ``manifest``): what the folder holds,
    read as it starts (a damaged file reads as None: :attr:`damaged`), and what the driver
    adds, written by :meth:`save`."""

    def __init__(self, run_dir: str | Path, manifest: Manifest, read: bool = True) -> None:
        self.dir, self.manifest = Path(run_dir), manifest
        self.train = _read(self.dir / TRAIN if read else None)
        self.evals = _read(self.dir / EVAL if read else None, transcripts=True)
        self.rollouts: list[dict[str, Any]] = []
        self._new: list[dict[str, Any]] = []
        self._written: tuple[int, int, int] = (-1, -1, -1)  # train, eval, kept rows saved

    # --- what the folder holds -------------------------------------------------------
    @property
    def damaged(self) -> bool:
        """Whether a result file the run had is unreadable."""
        return self.train is None or self.evals is None

    @property
    def eval_rows(self) -> pd.DataFrame:
        """Every eval row so far (read and recorded); None while a damaged file's rows stand."""
        if self._new:
            held = [] if self.evals is None or not len(self.evals) else [self.evals]
            self.evals = pd.concat([*held, eval_frame(self._new)], ignore_index=True)
            self._new = []
        return self.evals

    @property
    def steps_trained(self) -> list[int]:
        return sorted(int(s) for s in self.train.step) if self.train is not None else []

    @property
    def last_evaluated(self) -> int:
        """The last step whose evaluation the rows hold (-1: none)."""
        rows = self.eval_rows
        return int(rows.step.max()) if rows is not None and len(rows) else -1

    def gap(self, step: int, evaluated: int) -> str:
        """Why the rows cannot continue a checkpoint at ``step`` whose last evaluation was at
        ``evaluated``: damaged, or rows missing before it (a run must never end with rows
        silently missing); empty when they can."""
        if self.damaged:
            return "a result file is unreadable"
        done = [s for s in self.steps_trained if s < step]
        if done != list(range(step)):
            return f"{TRAIN} holds {len(done)} of the {step} steps the checkpoint has trained"
        if evaluated >= 0 and not (self.eval_rows.step == evaluated).any():
            return f"{EVAL} has no rows of the step {evaluated} evaluation"
        return ""

    def resume(self, step: int, evaluated: int) -> None:
        """Continue at a checkpoint: rows past it dropped, the kept rollouts before it read."""
        self.rollouts = read_rollouts(self.dir, step)
        if self.train is not None and len(self.train):
            self.train = self.train[self.train.step < step]
        if self.evals is not None and len(self.eval_rows):
            self.evals = self.evals[self.evals.step <= evaluated]

    def drop_evaluation(self) -> None:
        """No eval rows: the evaluation is played again (the rows held were damaged or not
        the plan's)."""
        self.evals, self._new = _read(None), []

    def start_over(self, remove: bool = False) -> None:
        """No rows: the run starts again; with ``remove``, its result files are gone now
        (another plan's rows must not outlive this one's first save)."""
        self.train, self.evals = _read(None), _read(None)
        self.rollouts, self._new = [], []
        if remove:
            for name in RESULT_FILES:
                (self.dir / name).unlink(missing_ok=True)

    # --- what a driver hands it ------------------------------------------------------
    def evaluated(self, job: Any, episode: Any, step: int) -> dict[str, Any]:
        """Record ``job`` (an EvalJob) played as ``episode`` at checkpoint ``step``; its row."""
        from hscale.harness import outcome

        return self.record(outcome(episode, job.harness), step=step, run=job.run,
                           benchmark=job.benchmark, setting=job.setting,
                           harness=job.harness, task_id=job.task.task_id,
                           decoding=job.decoding, category=job.task.category)

    def record(self, played: Outcome, *, step: int, run: int, benchmark: str, setting: str,
               harness: str, task_id: str, decoding: str = Decoding.SAMPLED,
               category: str = "unknown") -> dict[str, Any]:
        """Record an evaluated episode by its identity and outcome; its row."""
        row = eval_row(self.manifest, step=step, run=run, benchmark=benchmark,
                       setting=setting, harness=harness, task_id=task_id, outcome=played,
                       decoding=decoding, category=category)
        self._new.append(row)
        return row

    def restore(self, rows: Sequence[dict[str, Any]]) -> None:
        """Eval rows recorded earlier (an interrupted evaluation's journal), as they were; a
        text column added since they were written is empty in them."""
        text = {c: "" for c, t in EVAL_OPTIONAL.items() if t == "str"}
        self._new += [{**text, **row} for row in rows]

    def kept(self, step: int, played: Sequence[tuple[int, str, str, Any]],
             rescued: Sequence[tuple[int, str, str, Any]] = (), rescues: bool = False) -> None:
        """The rollouts a training step keeps (none unless the manifest sets
        ``keep_rollouts``): of ``played`` (group, harness, task id, episode), the groups the
        share keeps (hscale.contracts.kept_group) and, when the run ``rescues``, every
        group none of whose rollouts succeeded; all of ``rescued``, the siblings' rollouts
        that replaced those groups."""
        if self.manifest.keep_rollouts is None:
            return
        from hscale.harness import outcome

        solved = {g for g, _, _, e in played if e.success}
        zero = {g for g, *_ in played if g not in solved} if rescues else set()

        def row(g: int, label: str, task_id: str, episode: Any, role: str) -> dict[str, Any]:
            return rollout_row(self.manifest, step=step, group=g, role=role, harness=label,
                               task_id=task_id, outcome=outcome(episode, label))

        self.rollouts += [row(*p, "zero-signal" if p[0] in zero else "sampled")
                          for p in played if p[0] in zero or kept_group(self.manifest, step,
                                                                          p[0])]
        self.rollouts += [row(*p, "rescue") for p in rescued]

    def trained(self, step: int, metrics: dict[str, float]) -> None:
        """A finished training step's metrics (train.parquet's row)."""
        self.train = pd.concat([self.train, pd.DataFrame([{"step": step, **metrics}])],
                               ignore_index=True)

    def replace_train(self, rows: pd.DataFrame | list[dict[str, Any]]) -> None:
        """Every train row at once (a trainer that logs its own: veRL's metrics, a fine-tune)."""
        self.train = train_frame(rows)

    # --- the files -------------------------------------------------------------------
    def save(self) -> None:
        """The files whose rows grew since the last save (the first save writes each), kept
        rollouts first and train.parquet last: a step is done when its train row is in."""
        rows = self.eval_rows
        counts = (len(self.train), 0 if rows is None else len(rows), len(self.rollouts))
        if counts[2] != self._written[2]:
            write_rollouts(self.dir, self.rollouts)
        if counts[1] and counts[1] != self._written[1]:
            write_eval(self.dir, rows)
        if counts[0] != self._written[0] or not (self.dir / TRAIN).is_file():
            write_parquet(self.dir / TRAIN, train_frame(self.train))
        self._written = counts


def _read(path: Path | None, transcripts: bool = False) -> pd.DataFrame | None:
    """A result file's rows (none yet: an empty frame), or None when it is damaged; eval rows
    with their transcripts (``transcripts``), which the next save writes again."""
    if path is not None and path.is_file():
        try:
            return read_eval(path.parent, True) if transcripts else pd.read_parquet(path)
        except Exception:  # truncated or not parquet: pyarrow raises several types
            return None
    return pd.DataFrame({"step": pd.Series(dtype="int64")})
