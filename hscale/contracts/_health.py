"""How often a run's checkers failed, from its contract files: a reward script that crashes
scores every episode 0, so a run whose episodes all had checker errors must not look like one
that learned nothing. ``hscale run``, ``hscale evaluate`` and ``hscale report`` print
:meth:`CheckerHealth.line`. Reads eval.parquet's ``error`` column (``checker: ...``) and
train.parquet's ``checker_error_rate`` only: analysis may import it, as it does the contracts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hscale.contracts._manifest import EVAL, TRAIN


@dataclass(frozen=True)
class CheckerHealth:
    """Evaluated episodes and how many had checker errors; training rollouts likewise."""

    episodes: int = 0
    errors: int = 0
    first: str = ""  # the commonest error, as the episodes recorded it
    rollouts: float = 0.0  # training rollouts counted (steps x rollouts a step)
    rollout_errors: float = 0.0

    def line(self) -> str | None:
        """``warning: checker errors in 100% of ...`` (None when no checker failed)."""
        parts = []
        if self.errors:
            parts.append(f"{_share(self.errors, self.episodes)} of {self.episodes} evaluated "
                         "episodes")
        if self.rollout_errors:
            parts.append(f"{_share(self.rollout_errors, self.rollouts)} of training rollouts")
        if not parts:
            return None
        cause = f"; the commonest: {self.first}" if self.first else ""
        return (f"warning: checker errors in {' and '.join(parts)} (each scored 0){cause}; "
                "'hscale tasks check' runs every checker on its task")


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "all"


def checker_health_of(evals: pd.DataFrame | None, trains: pd.DataFrame | None
                      ) -> CheckerHealth:
    """The checker errors in eval rows (``error`` = ``checker: ...``) and train rows
    (``checker_error_rate`` x ``episodes`` a step), of any number of runs."""
    episodes = errors = 0
    first = ""
    if evals is not None and "error" in evals:
        text = evals["error"].fillna("").astype(str)
        causes = text.str.extract(r"(checker:.*)$")[0].dropna()
        episodes, errors = len(evals), len(causes)
        first = str(causes.value_counts().index[0]) if len(causes) else ""
    rollouts = rollout_errors = 0.0
    if trains is not None and {"checker_error_rate", "episodes"} <= set(trains.columns):
        count = trains["episodes"].fillna(0.0).astype(float)
        rollouts = float(count.sum())
        rollout_errors = float((trains["checker_error_rate"].fillna(0.0) * count).sum())
    return CheckerHealth(episodes, errors, first, rollouts, rollout_errors)


def checker_health(run_dirs: Iterable[str | Path]) -> CheckerHealth:
    """The checker errors recorded in ``run_dirs`` (a run without result files counts 0)."""
    evals, trains = [], []
    for run_dir in map(Path, run_dirs):
        for name, into in ((EVAL, evals), (TRAIN, trains)):
            try:
                into.append(pd.read_parquet(run_dir / name))
            except Exception:  # none yet, or damaged: reported elsewhere
                continue
    return checker_health_of(pd.concat(evals, ignore_index=True) if evals else None,
                             pd.concat(trains, ignore_index=True) if trains else None)


__all__ = ["CheckerHealth", "checker_health", "checker_health_of"]
