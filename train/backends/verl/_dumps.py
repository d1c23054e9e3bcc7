"""veRL's validation dumps back into hscale's eval.parquet contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from hscale.contracts import (
    EXTRA_INFO,
    Decoding,
    DumpedEpisode,
    Manifest,
    RowInfo,
    train_frame,
)
from hscale.errors import HscaleError
from hscale.files import atomic_write_text
from hscale.train.backends.verl._overrides import VERL_DIR
from hscale.train.planning import Recorder


def import_validation(run_dir: str | Path, manifest: Manifest,
                      results: Recorder | None = None, step: int | None = None
                      ) -> pd.DataFrame:
    """veRL's validation dumps (``verl/validation/<step>.jsonl``) handed to the run's
    recorder (default: one that only holds them), every row at ``step`` when given (a
    black-box SFT run's one validation is of its fine-tuned model); the eval rows.

    veRL 0.9.1 writes one JSON line per validation episode (verl/trainer/ppo/ray_trainer.py,
    ``_write_generations``; same in ppo/v1/trainer_base.py): ``input``, ``output``, ``gts``
    (the row's ``reward_model.ground_truth``), ``score`` (the episode's reward), ``step``,
    then every per-episode reward extra (hscale.contracts.reward_extras); the v1 trainer adds
    ``uid`` = ``<uid>_<session>_<segment>``, one line per trained segment. Each line is read
    as a :class:`hscale.contracts.DumpedEpisode` (its val row from ``gts``); run, setting,
    harness and task_id come from that row's extra_info (hscale.contracts.RowInfo). A row
    dumped more than once at a step (a ``val_kwargs.n`` above 1 set by hand) counts as
    further runs after the planned ones.
    """
    out = Path(run_dir) / VERL_DIR
    files = sorted((p for p in (out / "validation").glob("*.jsonl") if p.stem.isdigit()),
                   key=lambda p: int(p.stem))
    if not files:
        raise HscaleError(f"{out / 'validation'}: no veRL validation dumps",
                          "veRL writes them at trainer.test_freq; check verl/train.log (on a "
                          "Ray cluster, the runs folder must be shared at the same path)")
    info = [RowInfo.read(e) for e in pd.read_parquet(out / "val.parquet")[EXTRA_INFO]]
    planned = manifest.evaluation.runs
    results = results or Recorder(run_dir, manifest, read=False)
    for path in files:
        seen: dict[int, int] = {}  # val row -> its episodes at this step so far
        for rec, where in _episodes(path):
            episode = DumpedEpisode.read(rec, where, len(info))
            seen[episode.row] = seen.get(episode.row, -1) + 1
            row = info[episode.row]
            run = int(row.run or 0)
            if not row.greedy:  # greedy is deterministic: one pass
                run += seen[episode.row] * planned
            harness = row.harness
            if row.route is not None and episode.routed_to is not None:
                harness = manifest.assignment.pool[episode.routed_to]  # the sibling routed to
            results.record(episode.outcome, step=episode.step if step is None else step,
                           run=run, benchmark=row.benchmark or manifest.benchmark.column,
                           setting=row.setting, harness=harness, task_id=row.task_id,
                           decoding=row.decoding or Decoding.SAMPLED,
                           category=row.category or "unknown")
    return results.eval_rows


def _episodes(path: Path):
    """(record, 'file:line') per episode; of a v1 trainer's per-segment lines, the first."""
    seen: set[str] = set()
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise HscaleError(f"{where}: not a JSON line",
                                  "the dump is damaged; re-run the validation") from None
            uid = rec.get("uid")
            parts = str(uid).rsplit("_", 2) if uid is not None else []
            if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                session = f"{parts[0]}_{parts[1]}"
                if session in seen:
                    continue
                seen.add(session)
            yield rec, where


# veRL's metric names -> train.parquet's (the embedded trainer's) for the same quantity
METRIC_NAMES = {"critic/score/mean": "reward_mean", "actor/entropy": "entropy",
                "actor/pg_clipfrac": "clip_frac", "actor/ppo_kl": "kl", "actor/pg_loss": "loss",
                "perf/throughput": "tokens_per_s", "timing_s/step": "step_s"}


def import_profiles(run_dir: str | Path) -> None:
    """The profiles router's judge-written profiles (``verl/router_profiles.jsonl``, from the
    rollout workers) into the run folder, where the embedded trainer writes them."""
    from hscale.train.harness_s import PROFILES

    source = Path(run_dir) / VERL_DIR / PROFILES
    if source.is_file():
        atomic_write_text(Path(run_dir) / PROFILES, source.read_text(encoding="utf-8"))


def import_metrics(run_dir: str | Path) -> pd.DataFrame:
    """veRL's file-logger metrics (``verl/metrics/<launch>.jsonl``, one file a launch: veRL
    truncates its file when it starts) as train.parquet rows: one per training step, ``step``
    counted from 0 as the embedded trainer does (veRL's global step 1 is step 0), veRL's
    metrics under their own names plus the embedded trainer's names where both measure the
    same thing. A later launch's line for a step replaces an earlier one (a resumed run)."""
    from hscale.train.backends.verl._overrides import METRICS_DIR

    folder = Path(run_dir) / VERL_DIR / METRICS_DIR
    steps: dict[int, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                try:
                    rec = json.loads(line)
                    step, data = int(rec["step"]), dict(rec["data"])
                except (ValueError, KeyError, TypeError):
                    if line.strip():  # a line cut by a kill is the only expected damage
                        raise HscaleError(f"{path}:{number}: not a veRL metrics line",
                                          "the file is damaged; delete it to re-import") from None
                    continue
                if not any(k.startswith(("actor/", "critic/")) for k in data):
                    continue  # validation-only lines (step 0 before training)
                numbers = {k: v for k, v in data.items()
                           if v is None or isinstance(v, int | float)}
                named = {METRIC_NAMES[k]: v for k, v in numbers.items() if k in METRIC_NAMES}
                # the agent loop's per-rollout checker_error, averaged by veRL under its
                # reward-extra prefix: the embedded trainer's checker_error_rate
                rate = next((v for k, v in numbers.items() if k.endswith(
                    ("checker_error", "checker_error/mean")) and v is not None), None)
                if rate is not None:
                    named["checker_error_rate"] = rate
                steps[step - 1] = {**named, **numbers}
    return train_frame([{"step": step, **row} for step, row in sorted(steps.items())])
