"""A black-box SFT arm's training (hscale.train.spec._blackbox): the teacher's episodes
through the arm's harness on the run's own training tasks, collected into ``sft/`` of the
run folder (hscale.train.blackbox._collect: resumable, each finished episode kept), their model
calls read back as examples (hscale.train.blackbox._trajectories), and a Hugging Face policy
fine-tuned on them (hscale.train.blackbox._sft) into ``sft/model``. Each backend then evaluates
what it trained as it evaluates its other arms.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hscale.contracts import Manifest
from hscale.errors import HscaleError

SFT_DIR = "sft"
MODEL = "model"  # sft/model: the fine-tuned weights (with sft.json once complete)


def teacher_tasks(manifest: Manifest) -> list:
    """The training tasks the teacher plays: ``episodes`` of the run's training pool in the
    run's own order (the whole pool when it holds fewer)."""
    from hscale.train.planning import train_tasks

    pool = list(train_tasks(manifest).values())
    order = manifest.rng("sft-tasks").permutation(len(pool))
    return [pool[i] for i in order[:manifest.blackbox.episodes]]


def collect_teacher(run_dir: Path, manifest: Manifest,
                    progress: Callable[[int, int], None] | None = None) -> Path:
    """The teacher's episodes of this run (played where not yet finished); the record
    folder."""
    from hscale.train.blackbox._collect import Collection, collect

    bb = manifest.blackbox
    tasks = teacher_tasks(manifest)
    bench = manifest.benchmark
    asked = Collection(bb.teacher, bb.harness, bench.name, None, "train", len(tasks),
                       manifest.seed)
    return collect(asked, Path(run_dir) / SFT_DIR / "collection", progress, tasks=tasks)


def teacher_samples(record: Path) -> tuple[list, dict[str, float]]:
    """Every model call of the collected episodes, and the collection's tally (episodes,
    solved, calls)."""
    from hscale.train.blackbox._trajectories import EpisodeLog, samples

    episodes = EpisodeLog(record).read()
    calls = samples(record, episodes, exact=False)  # a teacher's text, for another model
    solved = sum(float(e["reward"]) >= 1.0 for e in episodes)
    return calls, {"teacher_episodes": float(len(episodes)), "teacher_solved": float(solved),
                   "teacher_calls": float(len(calls))}


def fine_tuned(run_dir: Path, manifest: Manifest, base: str,
               progress: Callable[[int, int], None] | None = None) -> tuple[Path, dict]:
    """The run's fine-tuned model folder and its sft.json, trained now unless a finished
    one is there (a resumed run does not train again)."""
    from hscale.train.blackbox._sft import RESULT, SFTSettings, fine_tune

    out = Path(run_dir) / SFT_DIR / MODEL
    if (out / RESULT).is_file():
        return out, json.loads((out / RESULT).read_text())
    record = collect_teacher(run_dir, manifest)
    calls, tally = teacher_samples(record)
    bb = manifest.blackbox
    settings = SFTSettings(steps=manifest.budget.steps, batch=bb.batch, lr=bb.lr,
                           lora_rank=bb.lora_rank, seed=manifest.seed, keep=bb.keep)
    try:  # sft.json, written last and once, holds the tally too
        return out, fine_tune(base, calls, out, settings, progress, extra=tally)
    except HscaleError as exc:
        raise HscaleError(f"arm {manifest.arm}: black-box SFT through {bb.harness}: "
                          f"{exc.message}", exc.hint) from None


def sft_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """train.parquet's rows of a black-box SFT run: a step's loss, and the collection's
    tally on every row (what the fine-tune learned from)."""
    tally = {k: float(v) for k, v in result.items() if k.startswith("teacher_")}
    return [{"step": step, "sft_loss": float(loss), "sft_examples": float(result["examples"]),
             **tally} for step, loss in enumerate(result["losses"])]
