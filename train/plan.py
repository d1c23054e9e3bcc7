"""``hscale plan``: write runs/<exp>/<arm>/<seed>/{manifest.json, schedule.parquet}.

Planning is idempotent: an unchanged spec changes nothing on disk, and a change that would
alter an existing run's manifest is refused unless forced, so results are never orphaned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hscale.errors import HscaleError
from hscale.files import atomic_write_text, write_parquet
from train.manifest import build_manifest, eval_sets, rng_for, space_of
from train.schedule import build_schedule
from train.spec import ExperimentSpec, load_spec
from train.spec import quick as quick_spec


@dataclass(frozen=True)
class Planned:
    path: Path
    state: str  # "written" | "unchanged" | "replaced"


def task_ids(spec: ExperimentSpec) -> list[str]:
    if spec.benchmark.name != "builtin":
        raise HscaleError(f"benchmark {spec.benchmark.name!r} is not available yet",
                          "use benchmark: {name: builtin}")
    from harness.world import task_ids as builtin_ids

    return builtin_ids(spec.benchmark.tasks, seed=spec.benchmark.seed)


def plan(spec_path: str | Path, out: str | Path = "runs", force: bool = False,
         quick: bool = False) -> list[Planned]:
    """Plan every arm x seed; all manifests are built and checked before anything is written.
    ``quick`` plans the smoke-test scale of the spec (see :func:`train.spec.quick`)."""
    spec = load_spec(spec_path)
    if quick:
        spec = quick_spec(spec)
    space = space_of(spec)
    evals = eval_sets(spec, space)
    ids = task_ids(spec)
    jobs = []
    for arm_name, arm in spec.resolved_arms().items():
        for seed in spec.seeds:
            manifest = build_manifest(spec, arm_name, arm, seed, space, evals)
            run_dir = Path(out) / spec.name / arm_name / str(seed)
            previous = _existing_hash(run_dir)
            if previous not in (None, manifest["hash"]) and not force:
                raise HscaleError(f"{run_dir}: the spec now gives a different manifest than the "
                                  "one already planned there",
                                  "pass --force to replace it, or rename the experiment")
            jobs.append((run_dir, arm, seed, manifest, previous))
    done = []
    for run_dir, arm, seed, manifest, previous in jobs:
        if previous == manifest["hash"]:
            done.append(Planned(run_dir, "unchanged"))
            continue
        frame = build_schedule(space, manifest["train_harnesses"], ids, spec.steps,
                               manifest["budget"]["tasks_per_step"], arm.assignment.k,
                               arm.assignment.mode,
                               rng_for(seed, manifest["arm"], "schedule"))
        write_parquet(run_dir / "schedule.parquet", frame)
        atomic_write_text(run_dir / "manifest.json", json.dumps(manifest, indent=2) + "\n")
        done.append(Planned(run_dir, "replaced" if previous else "written"))
    return done


def _existing_hash(run_dir: Path) -> str | None:
    path = run_dir / "manifest.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text()).get("hash")
    except (OSError, json.JSONDecodeError):
        return "unreadable"
