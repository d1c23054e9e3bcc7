"""veRL backend: turn a planned run into veRL 0.9.1 inputs and a launch script.

:func:`prepare_verl_run` writes ``<run_dir>/verl/``:

- ``train.parquet``: one veRL row per schedule row (step, task), in schedule order, with that
  step's harness label in ``extra_info``; with ``data.shuffle=False`` and
  ``data.train_batch_size=tasks_per_step`` each batch is exactly one scheduled step.
- ``val.parquet``: every eval setting x harness x eval task (``extra_info.setting``; the
  ``data_source`` is ``hscale/<setting>`` so veRL's validation metrics split by setting).
- ``agent_loop.yaml``: the hscale agent loop registration (harness.verl_agent_loop).
- ``launch.sh``: ``python -m verl.trainer.main_ppo`` with the Hydra overrides.

The overrides are checked on CPU by composing veRL's own ``ppo_trainer`` Hydra config, so a
wrong key fails here, naming the override, not minutes into a GPU job. veRL and Hydra are
imported lazily.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from pathlib import Path
from typing import Any

from design.errors import HscaleError
from design.io import atomic_write_text
from train.files import write_parquet

VERL_DIR = "verl"
MAIN = "verl.trainer.main_ppo"
CONFIG_NAME = "ppo_trainer"


def build_overrides(run_dir: str | Path, manifest: dict) -> list[str]:
    """The Hydra overrides for veRL's ``main_ppo`` that this run's manifest implies."""
    out = Path(run_dir).resolve() / VERL_DIR
    algo, budget = manifest["algorithm"], manifest["budget"]
    name = algo.get("name", "grpo")
    if name not in ("grpo", "ppo"):
        raise HscaleError(f"algorithm {name!r} has no veRL mapping", "use grpo or ppo")
    overrides = [
        f"data.train_files={out / 'train.parquet'}",
        f"data.val_files={out / 'val.parquet'}",
        "data.shuffle=False",
        f"data.train_batch_size={int(budget['tasks_per_step'])}",
        f"actor_rollout_ref.model.path={manifest['model']}",
        f"actor_rollout_ref.rollout.n={int(budget['rollouts_per_task'])}",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={out / 'agent_loop.yaml'}",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={_agent_name()}",
        f"actor_rollout_ref.actor.optim.lr={float(algo['lr'])}",
        f"actor_rollout_ref.actor.clip_ratio_low={float(algo['clip_low'])}",
        f"actor_rollout_ref.actor.clip_ratio_high={float(algo['clip_high'])}",
    ]
    if name == "grpo":
        overrides.append("algorithm.adv_estimator=grpo")
    else:
        overrides += ["algorithm.adv_estimator=gae", f"algorithm.gamma={float(algo['gamma'])}",
                      f"algorithm.lam={float(algo['lam'])}",
                      f"critic.model.path={manifest['model']}"]
    overrides += [
        f"trainer.total_training_steps={int(budget['steps'])}",
        "trainer.logger=['console']",
        f"trainer.project_name=hscale-{manifest['experiment']}",
        f"trainer.experiment_name={manifest['arm']}-{manifest['seed']}",
        f"trainer.default_local_dir={out / 'checkpoints'}",
        "trainer.resume_mode=auto",
        f"trainer.validation_data_dir={out / 'validation'}",
    ]
    return overrides


def verl_config_dir() -> Path:
    """veRL's Hydra config folder inside the installed package."""
    try:
        import verl
    except ImportError as exc:
        raise HscaleError(f"veRL is not importable ({exc})", 'pip install -e ".[train]"') from exc
    path = Path(os.path.dirname(verl.__file__)) / "trainer" / "config"
    if not (path / f"{CONFIG_NAME}.yaml").is_file():
        raise HscaleError(f"{path}: no {CONFIG_NAME}.yaml in the installed veRL",
                          "install veRL 0.9.1 (pip install -e \".[train]\")")
    return path


def validate_overrides(overrides: list[str]) -> Any:
    """Compose veRL's ``ppo_trainer`` config with ``overrides`` (CPU only); the composed
    config, or an HscaleError naming the override that does not fit, with a did-you-mean."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf import OmegaConf

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(verl_config_dir()), version_base=None):
        try:
            return compose(config_name=CONFIG_NAME, overrides=list(overrides))
        except HydraException as exc:
            bad = _culprit(str(exc), overrides)
            hint = "check the key against verl/trainer/config/ppo_trainer.yaml"
            if bad is not None:
                base = OmegaConf.to_container(compose(config_name=CONFIG_NAME),
                                              resolve=False)
                hint = _hint(bad, base) or hint
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HscaleError(f"veRL rejects the override {bad or '(unknown)'!r}: {first}",
                              hint) from None


def prepare_verl_run(run_dir: str | Path, manifest: dict, *, validate: bool = True
                     ) -> dict[str, Any]:
    """Write ``<run_dir>/verl/{train,val}.parquet, agent_loop.yaml, launch.sh``.

    Returns the paths, the overrides and the command line.
    """
    import pandas as pd

    from harness.verl_agent_loop import to_verl_rows, write_agent_loop_config
    from harness.world import generate
    from train.backends.local import EVAL_TASKS

    run_dir = Path(run_dir)
    out = run_dir / VERL_DIR
    schedule = pd.read_parquet(run_dir / "schedule.parquet")
    budget, bench = manifest["budget"], manifest["benchmark"]
    per_step = schedule.groupby("step").size()
    wrong = per_step[per_step != int(budget["tasks_per_step"])]
    if len(wrong):
        raise HscaleError(f"{run_dir}: step {int(wrong.index[0])} has {int(wrong.iloc[0])} "
                          f"scheduled tasks, not tasks_per_step={budget['tasks_per_step']}",
                          "re-plan the run (hscale plan --force)")
    overrides = build_overrides(run_dir, manifest)
    if validate:
        validate_overrides(overrides)

    schedule = schedule.sort_values(["step", "slot"], kind="stable").reset_index(drop=True)
    tasks = {t.task_id: t for t in generate(bench["tasks"], seed=bench["seed"])}
    missing = sorted(set(schedule.task_id) - set(tasks))
    if missing:
        raise HscaleError(f"{run_dir}: schedule names unknown tasks {missing[:3]}",
                          "re-plan the run (hscale plan --force)")
    pairs: dict[str, list[str]] = {}
    for task_id, label in zip(schedule.task_id, schedule.harness, strict=True):
        labels = pairs.setdefault(task_id, [])
        if label not in labels:
            labels.append(label)
    unique = to_verl_rows([tasks[t] for t in pairs], pairs, "train")
    by_pair = {(r["extra_info"]["task_id"], r["extra_info"]["harness"]): r
               for r in unique.to_dict("records")}
    rows = []
    for i, rec in enumerate(schedule.itertuples(index=False)):
        row = dict(by_pair[(rec.task_id, rec.harness)])
        row["extra_info"] = {**row["extra_info"], "index": i, "step": int(rec.step),
                             "slot": int(rec.slot), "anchor": str(rec.anchor)}
        rows.append(row)
    train = pd.DataFrame(rows, columns=unique.columns)

    eval_tasks = generate(EVAL_TASKS, seed=bench["seed"], split="eval")
    frames = []
    for setting, labels in manifest["eval_sets"].items():
        frame = to_verl_rows(eval_tasks, list(labels), "val", data_source=f"hscale/{setting}")
        frame["extra_info"] = [{**e, "setting": setting} for e in frame.extra_info]
        frames.append(frame)
    val = pd.concat(frames, ignore_index=True)
    val["extra_info"] = [{**e, "index": i} for i, e in enumerate(val.extra_info)]

    out.mkdir(parents=True, exist_ok=True)
    write_parquet(out / "train.parquet", train)
    write_parquet(out / "val.parquet", val)
    agent_loop = write_agent_loop_config(out / "agent_loop.yaml")
    command = ["python", "-m", MAIN, *overrides]
    script = ("#!/usr/bin/env bash\n"
              f"# veRL launch for {manifest['experiment']}/{manifest['arm']}/{manifest['seed']}"
              f" (manifest {manifest['hash'][:12]}); written by hscale, do not edit\n"
              "set -euo pipefail\n"
              f"exec {' '.join(shlex.quote(c) for c in command[:3])} \\\n"
              + " \\\n".join(f"  {shlex.quote(o)}" for o in overrides) + ' "$@"\n')
    atomic_write_text(out / "launch.sh", script)
    (out / "launch.sh").chmod(0o755)
    return {"dir": out, "train": out / "train.parquet", "val": out / "val.parquet",
            "agent_loop": agent_loop, "launch": out / "launch.sh",
            "overrides": overrides, "command": command,
            "train_rows": len(train), "val_rows": len(val)}


# ------------------------------------------------------------------------------- helpers


def _agent_name() -> str:
    from harness.verl_agent_loop import AGENT_NAME

    return AGENT_NAME


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def _culprit(message: str, overrides: list[str]) -> str | None:
    """The override a Hydra error message is about (quoted key or value), if any."""
    quoted = re.findall(r"'([^']+)'", message)
    for q in quoted:
        for o in overrides:
            if _key(o) == q or o == q:
                return o
    for o in overrides:
        if _key(o) in message:
            return o
    return None


def _hint(override: str, config: dict) -> str | None:
    """A did-you-mean for the override's key, from the keys of its parent in the config."""
    parts = _key(override).split(".")
    node: Any = config
    for depth, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            known = list(node) if isinstance(node, dict) else []
            close = difflib.get_close_matches(part, known, n=1)
            where = ".".join(parts[:depth]) or "the top level"
            return (f"no {part!r} under {where}"
                    + (f"; did you mean {close[0]!r}?" if close else ""))
        node = node[part]
    if not isinstance(node, dict):
        return None
    leaf = parts[-1]
    if leaf in node:
        return f"the key exists; check the value type in {override!r}"
    close = difflib.get_close_matches(leaf, list(node), n=1)
    parent = ".".join(parts[:-1])
    if close:
        return f"did you mean {parent + '.' if parent else ''}{close[0]}?"
    return f"{parent or 'the top level'} has no key {leaf!r}; prefix + to add one"

