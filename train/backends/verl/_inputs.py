"""A planned run as veRL 0.9.1 inputs: ``<run_dir>/verl/``

- ``train.parquet``: one veRL row per schedule row (step, task), in schedule order, with that
  step's harness label in ``extra_info``; with ``data.shuffle=False`` and
  ``data.train_batch_size=tasks_per_step`` each batch is exactly one scheduled step.
- ``val.parquet``: one row per episode of the run's plan (every driver's:
  :meth:`hscale.train.planning._workload.RunPlan.evaluation`): a greedy pass over run 0's episodes,
  then every sampled run (run, setting, harness, task), each row once (``val_kwargs.n=1``;
  the agent loop samples rows flagged greedy at temperature 0), so every backend evaluates
  the same episodes. The
  ``data_source`` is ``hscale/<setting>`` (``/greedy`` for the greedy pass) so veRL's
  validation metrics split by setting. veRL's validation dump
  keeps no ``extra_info``, only ``reward_model.ground_truth`` (as ``gts``), so a val row's
  ground truth is ``{"checker": <the checker spec>, "hscale_val_index": <row>}``: the dump
  import finds each episode's row by it.
- ``agent_loop.yaml``: the hscale agent loop registration (hscale.harness.verl_agent_loop).
- ``launch.sh``: ``python -m verl.trainer.main_ppo`` with the Hydra overrides. It reads its
  inputs beside itself and writes outputs (checkpoints, validation dumps) to
  ``$HSCALE_VERL_OUT``, else beside itself too, so the folder can be copied to a GPU node.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pandas as pd

from hscale.contracts import EXTRA_INFO, REPLAN, Manifest, tag_truth
from hscale.errors import HscaleError
from hscale.files import atomic_write_text, write_parquet
from hscale.harness import EPISODE_TURNS
from hscale.harness.verl_agent_loop import VERL_COLUMNS, verl_records, write_agent_loop_config
from hscale.train.backends.verl._check import validate_overrides
from hscale.train.backends.verl._overrides import (
    GPUS,
    METRICS_DIR,
    STAMP,
    VERL_DIR,
    build_overrides,
    settings,
)
from hscale.train.backends.verl.blackbox_rollout import PLAYER
from hscale.train.backends.verl.cpu.settings import is_cpu
from hscale.train.backends.verl.cpu.settings import launch_args as cpu_launch_args
from hscale.train.backends.verl.cpu.settings import launch_lines as cpu_launch_lines
from hscale.train.backends.verl.rescue import rescue_info
from hscale.train.blackbox import MODEL, RESULT, SFT_DIR
from hscale.train.planning import RunPlan, Schedule, factor_space, harness_space, is_blackbox_sft

MAIN = "verl.trainer.main_ppo"
OUT_ENV = "HSCALE_VERL_OUT"
_HERE, _OUT = "@HERE@", "@OUT@"  # launch.sh placeholders for its folder and $HSCALE_VERL_OUT
_PLACEHOLDERS = ((_HERE, "HERE"), (_OUT, "OUT"), (STAMP, "STAMP"), (GPUS, "GPUS"))


def prepare_verl_run(run_dir: str | Path, manifest: Manifest, *, validate: bool = True
                     ) -> dict[str, Any]:
    """Write ``<run_dir>/verl/{train,val}.parquet, agent_loop.yaml, launch.sh``.

    Returns the paths, the overrides and the command line.
    """
    run_dir = Path(run_dir)
    out = run_dir / VERL_DIR
    schedule = Schedule.read(run_dir).frame
    budget = manifest.budget
    per_step = schedule.groupby("step").size()
    wrong = per_step[per_step != budget.tasks_per_step]
    if len(wrong):
        raise HscaleError(f"{run_dir}: step {int(wrong.index[0])} has {int(wrong.iloc[0])} "
                          f"scheduled tasks, not tasks_per_step={budget.tasks_per_step}",
                          REPLAN)
    overrides = build_overrides(run_dir, manifest)
    if validate:
        validate_overrides(overrides)

    plan = RunPlan(manifest)
    tasks = plan.train_tasks
    missing = sorted(set(schedule.task_id) - set(tasks))
    if missing:
        raise HscaleError(f"{run_dir}: schedule names unknown tasks {missing[:3]}", REPLAN)
    rescue = _rescue_info(plan)
    if schedule.empty:  # the base model's run (val_only): veRL still wants one batch
        schedule = _placeholder_batch(manifest, list(tasks))
    train = _rows([(tasks[t], label) for t, label in zip(schedule.task_id, schedule.harness,
                                                         strict=True)], "train",
                  [dict(step=int(r.step), slot=int(r.slot), anchor=str(r.anchor), rescue=rescue)
                   for r in schedule.itertuples(index=False)],
                  harness_space(manifest))
    jobs = plan.evaluation()  # Rank-1 routing's rows: the worker picks each one's sibling
    routing = any(job.routed for job in jobs)
    route = rescue_info(manifest).write() if routing else None
    # every row of a routing run says its pick (-1: none); the routed rows carry the router
    val = _rows([(job.task, job.harness) for job in jobs], "val",
                [dict(setting=job.setting, run=job.run, decoding=job.decoding,
                      category=job.task.category, benchmark=job.benchmark, routing=routing,
                      route=route if job.routed else None) for job in jobs],
                harness_space(manifest))
    val["data_source"] = [f"hscale/{job.setting}" + ("/greedy" if job.greedy else "")
                          for job in jobs]
    val["reward_model"] = [{**r, "ground_truth": tag_truth(r["ground_truth"], i)}
                           for i, r in enumerate(val.reward_model)]

    out.mkdir(parents=True, exist_ok=True)
    write_parquet(out / "train.parquet", train)
    write_parquet(out / "val.parquet", val)
    agent_loop = write_agent_loop_config(out / "agent_loop.yaml", settings(manifest).segment_mode,
                                         blackbox=PLAYER)
    command = ["python", "-m", MAIN, *overrides]
    portable = build_overrides(run_dir, manifest, inputs=_HERE, outputs=_OUT, gpus_per_node=GPUS)
    atomic_write_text(out / "launch.sh", _launch_script(manifest, portable))
    (out / "launch.sh").chmod(0o755)
    return {"dir": out, "train": out / "train.parquet", "val": out / "val.parquet",
            "agent_loop": agent_loop, "launch": out / "launch.sh",
            "overrides": overrides, "command": command,
            "train_rows": len(train), "val_rows": len(val)}


def _placeholder_batch(manifest: Manifest, task_ids: list[str]) -> pd.DataFrame:
    """One step of training rows for a run of 0 steps: veRL builds its train dataloader
    (and refuses an empty one) even when ``trainer.val_only`` stops before training."""
    space = factor_space(manifest)
    base = space.label(space.base)
    ids = [task_ids[i % len(task_ids)] for i in range(manifest.budget.tasks_per_step)]
    return pd.DataFrame({"step": 0, "task_id": ids, "harness": base, "anchor": base,
                         "slot": 0})


def _rescue_info(plan: RunPlan) -> dict[str, Any] | None:
    """A rescue arm's rows say how to rescue their group (hscale.train.backends.verl.rescue)."""
    return rescue_info(plan.manifest).write() if plan.rescues else None


def _rows(pairs: list[tuple[Any, str]], split: str, extra: list[dict[str, Any]],
          space: Any = None) -> pd.DataFrame:
    """One veRL row per (task, harness) pair, in order; each distinct pair is rendered once.
    ``extra``: each row's further fields (hscale.contracts.RowInfo's); ``index`` is the row's
    position."""
    by_task: dict[str, list[str]] = {}
    for task, label in pairs:
        labels = by_task.setdefault(task.task_id, [])
        if label not in labels:
            labels.append(label)
    first = {task.task_id: task for task, _ in pairs}
    by_pair = {(info.task_id, info.harness): (row, info) for row, info in verl_records(
        [first[t] for t in by_task], by_task, split, max_turns=EPISODE_TURNS, space=space)}
    rows = []
    for i, ((task, label), more) in enumerate(zip(pairs, extra, strict=True)):
        row, info = by_pair[(task.task_id, label)]
        rows.append({**row, EXTRA_INFO: info.write(**more, index=i)})
    return pd.DataFrame(rows, columns=VERL_COLUMNS)


_COUNT_GPUS = [  # only when the spec names no GPUs per node: this node's
    'GPUS="${HSCALE_GPUS_PER_NODE:-$(nvidia-smi -L 2>/dev/null | grep -c \'^GPU\' || true)}"',
    'if [ "${GPUS:-0}" -lt 1 ]; then echo "hscale: no GPU on this node (nvidia-smi);'
    ' set HSCALE_GPUS_PER_NODE" >&2; exit 1; fi']


_NEEDS_SFT = [  # a black-box SFT run validates the model hscale fine-tuned beside verl/
    f'if [ ! -f "$HERE/../{SFT_DIR}/{MODEL}/{RESULT}" ]; then echo "hscale: no fine-tuned '
    f'model in $HERE/../{SFT_DIR}/{MODEL}: run hscale run for this arm (it collects the '
    'teacher and fine-tunes before veRL validates)" >&2; exit 1; fi']


def _launch_script(manifest: Manifest, overrides: list[str]) -> str:
    """launch.sh: inputs beside the script, outputs to $HSCALE_VERL_OUT or beside it too."""
    words = [_shell_word(o) for o in overrides]
    counts = any(GPUS in o for o in overrides)
    verl = settings(manifest)
    cpu = (cpu_launch_lines(verl.gpus_per_node or 1), [cpu_launch_args()]) \
        if is_cpu(verl.rollout) else ([], [])
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# veRL launch for {manifest.experiment}/{manifest.arm}/{manifest.seed} "
        f"(manifest {manifest.hash[:12]}); written by hscale, do not edit.",
        f"# Reads its inputs beside this script; writes checkpoints/ and validation/ to "
        f"${OUT_ENV} if set, else here. Extra arguments are more Hydra overrides.",
        "set -euo pipefail",
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        f'OUT="${{{OUT_ENV}:-$HERE}}"',
        'STAMP="$(date -u +%Y%m%dT%H%M%SZ)-$$"',
        *(_COUNT_GPUS if counts else []),
        *(_NEEDS_SFT if is_blackbox_sft(manifest) else []),
        f'mkdir -p "$OUT/{METRICS_DIR}"',
        *cpu[0],
        f"exec python -m {shlex.quote(MAIN)} \\",
        *(f"  {w} \\" for w in [*words, *cpu[1]]),
        '  "$@"',
        ""])


def _shell_word(override: str) -> str:
    """One shell word for ``override``, its placeholders expanded from $HERE, $OUT, $STAMP."""
    word = shlex.quote(override)
    quoted = word.startswith("'")
    for token, var in _PLACEHOLDERS:
        word = word.replace(token, f"'\"${var}\"'" if quoted else f'"${var}"')
    return word
