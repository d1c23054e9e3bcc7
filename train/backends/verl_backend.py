"""veRL backend: turn a planned run into veRL 0.9.1 inputs and a launch script.

:func:`prepare_verl_run` writes ``<run_dir>/verl/``:

- ``train.parquet``: one veRL row per schedule row (step, task), in schedule order, with that
  step's harness label in ``extra_info``; with ``data.shuffle=False`` and
  ``data.train_batch_size=tasks_per_step`` each batch is exactly one scheduled step.
- ``val.parquet``: every eval setting x harness x held-out task (the manifest's
  ``evaluation.tasks`` of the world's eval split, else 36) (``extra_info.setting``; the
  ``data_source`` is ``hscale/<setting>`` so veRL's validation metrics split by setting).
  veRL's validation dump keeps no ``extra_info``, only ``reward_model.ground_truth`` (as
  ``gts``), so a val row's ground truth is ``{"checker": <the checker spec>,
  "hscale_val_index": <row>}``: :func:`import_validation` finds each dumped episode's row by it.
- ``agent_loop.yaml``: the hscale agent loop registration (harness.verl_agent_loop).
- ``launch.sh``: ``python -m verl.trainer.main_ppo`` with the Hydra overrides. It reads its
  inputs beside itself and writes outputs (checkpoints, validation dumps) to
  ``$HSCALE_VERL_OUT``, else beside itself too, so the folder can be copied to a GPU node.

The overrides are checked on CPU by composing veRL's own ``ppo_trainer`` Hydra config, so a
wrong key fails here, naming the override, not minutes into a GPU job.

Launching (:class:`VerlBackend`, driven by train.runner like every backend): each run's
launch.sh runs here as a subprocess (log in ``verl/train.log``), or, with a Ray address, as a
Ray job whose working_dir is ``verl/`` and whose outputs go to this run folder's absolute path
(so the cluster must see the runs folder at the same path: one machine or a shared filesystem).
The job id is kept in ``verl/ray_job.json`` and status.json; a re-run re-attaches to a job still
running. veRL's ``trainer.resume_mode=auto`` resumes from the last checkpoint. After a run, its
validation dumps become ``eval.parquet``. veRL, Hydra, torch and Ray are imported lazily.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from hscale.errors import HscaleError
from hscale.files import atomic_write_text, write_parquet
from train.manifest import eval_pairs
from train.spec import EVAL_TASKS
from train.status import RunState, read_status, write_status

if TYPE_CHECKING:
    import pandas as pd

VERL_DIR = "verl"
MAIN = "verl.trainer.main_ppo"
CONFIG_NAME = "ppo_trainer"
LOG = "train.log"
JOB_RECORD = "ray_job.json"
OUT_ENV = "HSCALE_VERL_OUT"
VAL_TAG = "hscale_val_index"
EVAL_COLUMNS = ("experiment", "arm", "seed", "run", "step", "benchmark", "setting", "harness",
                "task_id", "reward", "success", "turns")
# what a Ray job must not upload from verl/: outputs, logs, Hydra's run folders
RAY_EXCLUDES = ("/checkpoints/", "/validation/", "/outputs/", "*.log", f"/{JOB_RECORD}")
MICRO_BATCH = 4  # sequences per GPU forward/backward in veRL's actor, ref and critic
POLL_SECONDS = 10.0  # between two looks at a Ray job
_HERE, _OUT = "@HERE@", "@OUT@"  # launch.sh placeholders for its folder and $HSCALE_VERL_OUT


def build_overrides(run_dir: str | Path, manifest: dict, *, inputs: str | None = None,
                    outputs: str | None = None) -> list[str]:
    """The Hydra overrides for veRL's ``main_ppo`` that this run's manifest implies.

    Paths are absolute unless ``inputs`` / ``outputs`` give the folder to read the data and
    agent-loop config from / to write checkpoints and validation dumps to.
    """
    out = str(Path(run_dir).resolve() / VERL_DIR)
    src, dst = inputs or out, outputs or out
    algo, budget = manifest["algorithm"], manifest["budget"]
    evaluation = manifest.get("evaluation") or {}
    runs, every = int(evaluation.get("runs") or 1), evaluation.get("every")
    steps = int(budget["steps"])
    name = algo.get("name", "grpo")
    if name not in ("grpo", "ppo"):
        raise HscaleError(f"algorithm {name!r} has no veRL mapping", "use grpo or ppo")
    overrides = [
        f"data.train_files={src}/train.parquet",
        f"data.val_files={src}/val.parquet",
        "data.shuffle=False",
        f"data.train_batch_size={int(budget['tasks_per_step'])}",
        f"actor_rollout_ref.model.path={manifest['model']}",
        f"actor_rollout_ref.rollout.n={int(budget['rollouts_per_task'])}",
        "actor_rollout_ref.rollout.mode=async",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={src}/agent_loop.yaml",
        f"actor_rollout_ref.rollout.agent.default_agent_loop={_agent_name()}",
        f"actor_rollout_ref.actor.optim.lr={float(algo['lr'])}",
        f"actor_rollout_ref.actor.clip_ratio_low={float(algo['clip_low'])}",
        f"actor_rollout_ref.actor.clip_ratio_high={float(algo['clip_high'])}",
        # one optimizer step per scheduled step; micro batches sized for one GPU each
        f"actor_rollout_ref.actor.ppo_mini_batch_size={int(budget['tasks_per_step'])}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={MICRO_BATCH}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={MICRO_BATCH}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={MICRO_BATCH}",
    ]
    if name == "grpo":
        overrides.append("algorithm.adv_estimator=grpo")
    else:
        overrides += ["algorithm.adv_estimator=gae", f"algorithm.gamma={float(algo['gamma'])}",
                      f"algorithm.lam={float(algo['lam'])}",
                      f"critic.model.path={manifest['model']}",
                      f"critic.ppo_mini_batch_size={int(budget['tasks_per_step'])}",
                      f"critic.ppo_micro_batch_size_per_gpu={MICRO_BATCH}"]
    # evaluation: each eval row `runs` times, sampled, so the runs are independent
    overrides.append(f"actor_rollout_ref.rollout.val_kwargs.n={runs}")
    if runs > 1:
        overrides += ["actor_rollout_ref.rollout.val_kwargs.do_sample=True",
                      "actor_rollout_ref.rollout.val_kwargs.temperature=1.0"]
    overrides += [
        f"trainer.total_training_steps={steps}",
        "trainer.logger=[console]",
        f"trainer.project_name=hscale-{manifest['experiment']}",
        f"trainer.experiment_name={manifest['arm']}-{manifest['seed']}",
        f"trainer.default_local_dir={dst}/checkpoints",
        "trainer.resume_mode=auto",
        # a checkpoint every `every` steps (else every tenth of the run) for resume; keep one
        f"trainer.save_freq={int(every or max(1, steps // 10))}",
        "trainer.max_actor_ckpt_to_keep=1",
        f"trainer.test_freq={int(every or steps)}",
        f"trainer.validation_data_dir={dst}/validation",
    ]
    if name == "ppo":
        overrides.append("trainer.max_critic_ckpt_to_keep=1")
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
            config = compose(config_name=CONFIG_NAME, overrides=list(overrides))
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
    _check_dataclasses(config)
    return config


def _check_dataclasses(config: Any) -> None:
    """Build veRL's actor config dataclass, whose own checks (batch sizes and their
    divisibility) would otherwise first fire on the GPU node. (The critic's dataclass loads
    the model's Hugging Face config, which needs the model, so it is left to the node.)"""
    from verl.utils.config import omega_conf_to_dataclass

    try:
        omega_conf_to_dataclass(config.actor_rollout_ref.actor)
    except (AssertionError, ValueError, TypeError) as exc:
        raise HscaleError("veRL rejects the actor settings: "
                          f"{exc or type(exc).__name__}",
                          "check the batch sizes the manifest implies") from None


def prepare_verl_run(run_dir: str | Path, manifest: dict, *, validate: bool = True
                     ) -> dict[str, Any]:
    """Write ``<run_dir>/verl/{train,val}.parquet, agent_loop.yaml, launch.sh``.

    Returns the paths, the overrides and the command line.
    """
    import pandas as pd

    from harness.verl_agent_loop import to_verl_rows, write_agent_loop_config
    from harness.world import generate

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

    n_eval = int((manifest.get("evaluation") or {}).get("tasks") or EVAL_TASKS)
    eval_tasks = generate(n_eval, seed=bench["seed"], split="eval")
    frames = []
    episodes = (manifest.get("evaluation") or {}).get("episodes")
    for setting, labels in manifest["eval_sets"].items():
        # the same (harness, task) pairs the embedded trainer evaluates in its first run
        by_task: dict[str, list[str]] = {}
        for label, task in eval_pairs(list(labels), eval_tasks, episodes):
            by_task.setdefault(task.task_id, []).append(label)
        chosen = [t for t in eval_tasks if t.task_id in by_task]
        frame = to_verl_rows(chosen, by_task, "val", data_source=f"hscale/{setting}")
        frame["extra_info"] = [{**e, "setting": setting} for e in frame.extra_info]
        frames.append(frame)
    val = pd.concat(frames, ignore_index=True)
    val["extra_info"] = [{**e, "index": i} for i, e in enumerate(val.extra_info)]
    val["reward_model"] = [{**r, "ground_truth": _tag_truth(r["ground_truth"], i)}
                           for i, r in enumerate(val.reward_model)]

    out.mkdir(parents=True, exist_ok=True)
    write_parquet(out / "train.parquet", train)
    write_parquet(out / "val.parquet", val)
    agent_loop = write_agent_loop_config(out / "agent_loop.yaml")
    command = ["python", "-m", MAIN, *overrides]
    portable = build_overrides(run_dir, manifest, inputs=_HERE, outputs=_OUT)
    atomic_write_text(out / "launch.sh", _launch_script(manifest, portable))
    (out / "launch.sh").chmod(0o755)
    return {"dir": out, "train": out / "train.parquet", "val": out / "val.parquet",
            "agent_loop": agent_loop, "launch": out / "launch.sh",
            "overrides": overrides, "command": command,
            "train_rows": len(train), "val_rows": len(val)}


def _launch_script(manifest: dict, overrides: list[str]) -> str:
    """launch.sh: inputs beside the script, outputs to $HSCALE_VERL_OUT or beside it too."""
    words = [_shell_word(o) for o in overrides]
    rescue = manifest["assignment"].get("mode") == "rescue"
    warning = "echo " + shlex.quote(
        f"hscale: arm {manifest['arm']} uses Harness-S rescue, which veRL's main_ppo does not "
        "run: this trains plain GRPO under the base harness") + " >&2"
    return "\n".join([
        "#!/usr/bin/env bash",
        f"# veRL launch for {manifest['experiment']}/{manifest['arm']}/{manifest['seed']} "
        f"(manifest {manifest['hash'][:12]}); written by hscale, do not edit.",
        f"# Reads its inputs beside this script; writes checkpoints/ and validation/ to "
        f"${OUT_ENV} if set, else here. Extra arguments are more Hydra overrides.",
        "set -euo pipefail",
        *([warning] if rescue else []),
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        f'OUT="${{{OUT_ENV}:-$HERE}}"',
        f"exec python -m {shlex.quote(MAIN)} \\",
        *(f"  {w} \\" for w in words),
        '  "$@"',
        ""])


def _shell_word(override: str) -> str:
    """One shell word for ``override``, its path placeholders expanded from $HERE / $OUT."""
    word = shlex.quote(override)
    quoted = word.startswith("'")
    for token, var in ((_HERE, "HERE"), (_OUT, "OUT")):
        word = word.replace(token, f"'\"${var}\"'" if quoted else f'"${var}"')
    return word


def _tag_truth(ground_truth: str, index: int) -> str:
    """A val row's ground truth: the checker spec and the row's index in val.parquet."""
    return json.dumps({"checker": json.loads(ground_truth), VAL_TAG: index}, sort_keys=True)


# ------------------------------------------------------------------------------- launching


def check_launch(spec_path: str | Path, ray_address: str | None) -> list[str]:
    """Everything a launch needs, checked before anything is written: the overrides a local
    launch adds (its GPU count). Each missing piece is one HscaleError naming the fix."""
    from train.spec import load_spec

    spec = load_spec(spec_path)
    rescue = [n for n, a in spec.resolved_arms().items() if a.assignment.mode == "rescue"]
    if rescue:
        raise HscaleError(f"arm {rescue[0]} uses Harness-S rescue, which veRL's trainer does "
                          "not run: launching it would train plain GRPO",
                          "use --dry-run to write its veRL inputs, or drop the rescue arms")
    if not _has_module("verl"):
        raise HscaleError("veRL is not importable", 'pip install -e ".[train]"')
    if ray_address:
        from train.backends.ray_jobs import connect

        connect(ray_address)
        return []
    gpus = _cuda_gpus()
    if not gpus:
        raise HscaleError("no CUDA GPU on this machine (torch.cuda.is_available() is false)",
                          "use --dry-run to write each run's launch.sh for a GPU node, or "
                          "--ray-address ADDR to run on a Ray cluster")
    if not _has_module("vllm"):
        raise HscaleError("vLLM is not installed: veRL's async rollouts need it",
                          'pip install "verl[vllm]==0.9.1" (the vLLM release veRL 0.9.1 pins)')
    return [f"trainer.n_gpus_per_node={gpus}", "trainer.nnodes=1"]


class VerlBackend:
    """Run a planned run with veRL: launch.sh here, or as a job on the Ray cluster at
    ``ray_address``; then its validation dumps become eval.parquet."""

    name = "verl"

    def __init__(self, ray_address: str | None = None, extra: Sequence[str] = (),
                 interval: float | None = None) -> None:
        self.ray_address, self.extra = ray_address, list(extra)
        self.interval = POLL_SECONDS if interval is None else interval

    def run(self, run_dir: str | Path, manifest: dict, progress: Any = None) -> None:
        run_dir = Path(run_dir)
        prepare_verl_run(run_dir, manifest)
        if self.ray_address:
            launch_ray(run_dir, manifest, self.ray_address, self.extra, self.interval)
        else:
            launch_local(run_dir, self.extra)
        write_parquet(run_dir / "eval.parquet", import_validation(run_dir, manifest))

    def status_fields(self, run_dir: Path) -> dict[str, Any]:
        return job_fields(run_dir)


def job_fields(run_dir: Path) -> dict[str, Any]:
    """The Ray job a run was submitted as (kept in status.json across state changes)."""
    status = read_status(run_dir)
    return {k: status[k] for k in ("ray_address", "ray_job_id") if k in status}


def launch_local(run_dir: str | Path, extra: Sequence[str] = ()) -> None:
    """Run the run's launch.sh here, its output appended to verl/train.log; an error with the
    log's last line when veRL fails. Ctrl-C stops veRL too (its process group)."""
    out = Path(run_dir).resolve() / VERL_DIR
    log_path = out / LOG
    env = {k: v for k, v in os.environ.items() if k != OUT_ENV}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    with open(log_path, "a", encoding="utf-8") as log:
        log.write(f"# hscale: launch.sh {shlex.join(extra)} at {_now()}\n")
        log.flush()
        proc = subprocess.Popen(["bash", str(out / "launch.sh"), *extra], cwd=out, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_die_with_parent(os.getpid()))
        try:
            code = proc.wait()
        except BaseException:
            _stop(proc)
            raise
    if code:
        raise RuntimeError(f"veRL exited with status {code}: {_last_line(log_path)} "
                           f"(see {log_path})")


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """On Linux, a launched veRL gets SIGTERM when the runner dies (even by kill -9), so a
    re-run never finds the previous launch still holding the GPUs."""
    if not sys.platform.startswith("linux"):
        return None

    def arm() -> None:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_DEATHSIG
        if os.getppid() != parent:  # the runner died before the line above
            os._exit(1)

    return arm


def _stop(proc: subprocess.Popen) -> None:
    """Stop the launched process group: SIGTERM, then SIGKILL after a grace period."""
    for sig, grace in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(grace)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def launch_ray(run_dir: str | Path, manifest: dict, address: str, extra: Sequence[str] = (),
               interval: float = 10.0) -> str:
    """Run launch.sh as a Ray job, or re-attach to this run's job if it still runs; follow it
    to the end with its logs in verl/train.log. Returns the job id."""
    from train.backends import ray_jobs

    run_dir = Path(run_dir).resolve()
    out = run_dir / VERL_DIR
    client = ray_jobs.connect(address)
    job_id, submit = _job_to_follow(client, out, manifest, address)
    if submit:
        atomic_write_text(out / JOB_RECORD, json.dumps(
            {"job_id": job_id, "address": address, "manifest_hash": manifest["hash"],
             "submitted_at": _now()}, indent=2) + "\n")
        ray_jobs.submit(client, shlex.join(["bash", "launch.sh", *extra]), out,
                        submission_id=job_id, env_vars={OUT_ENV: str(out)},
                        py_modules=ray_jobs.hscale_py_modules(), excludes=RAY_EXCLUDES,
                        metadata={"hscale_run": str(run_dir), "manifest": manifest["hash"]})
    write_status(run_dir, RunState.RUNNING, manifest["hash"], backend="verl",
                 ray_address=address, ray_job_id=job_id)
    state = ray_jobs.follow(client, job_id, out / LOG, interval=interval)
    if state != "SUCCEEDED":
        why = ray_jobs.job_message(client, job_id) or _last_line(out / LOG)
        raise RuntimeError(f"Ray job {job_id} ended {state}: {why} (see {out / LOG})")
    return job_id


def _job_to_follow(client: Any, out: Path, manifest: dict, address: str) -> tuple[str, bool]:
    """(job id, submit it?): the recorded job if it is pending, running or succeeded; the
    recorded id again if it never reached the cluster; else a fresh id."""
    from train.backends.ray_jobs import job_state

    try:
        record = json.loads((out / JOB_RECORD).read_text())
    except (OSError, json.JSONDecodeError):
        record = {}
    if (record.get("job_id") and record.get("address") == address
            and record.get("manifest_hash") == manifest["hash"]):
        state = job_state(client, record["job_id"])
        if state is None:
            return record["job_id"], True
        if state in ("PENDING", "RUNNING", "SUCCEEDED"):
            return record["job_id"], False
    name = f"hscale-{manifest['experiment']}-{manifest['arm']}-{manifest['seed']}"
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '-', name)}-{uuid4().hex[:8]}", True


# ------------------------------------------------------------------------------- validation


def import_validation(run_dir: str | Path, manifest: dict) -> pd.DataFrame:
    """veRL's validation dumps (``verl/validation/<step>.jsonl``) as eval.parquet rows.

    veRL 0.9.1 writes one JSON line per validation episode (verl/trainer/ppo/ray_trainer.py,
    ``_write_generations``; same in ppo/v1/trainer_base.py): ``input``, ``output``, ``gts``
    (the row's ``reward_model.ground_truth``), ``score`` (the episode's reward), ``step``,
    then every per-episode reward_extra_info key (``reward``, and the agent loop's
    ``success``); the v1 trainer adds ``uid`` = ``<uid>_<session>_<segment>``, one line per
    trained segment. Each eval row is repeated ``val_kwargs.n`` times (its runs). The row
    index comes from ``gts`` (see :func:`_tag_truth`), setting/harness/task_id from
    val.parquet's extra_info. ``turns`` is read from a ``turns`` key when the dump has one,
    else -1: veRL does not dump its turn counts.
    """
    import pandas as pd

    out = Path(run_dir) / VERL_DIR
    files = sorted((p for p in (out / "validation").glob("*.jsonl") if p.stem.isdigit()),
                   key=lambda p: int(p.stem))
    if not files:
        raise HscaleError(f"{out / 'validation'}: no veRL validation dumps",
                          "veRL writes them at trainer.test_freq; check verl/train.log (on a "
                          "Ray cluster, the runs folder must be shared at the same path)")
    info = [_extra(e) for e in pd.read_parquet(out / "val.parquet").extra_info]
    rows: list[dict[str, Any]] = []
    for path in files:
        runs: dict[int, int] = {}  # val row -> episodes seen at this step: the run number
        for rec, where in _episodes(path):
            index = _row_index(rec, where, len(info))
            runs[index] = runs.get(index, -1) + 1
            rows.append(_eval_row(manifest, info[index], runs[index], rec, where))
    frame = pd.DataFrame(rows, columns=list(EVAL_COLUMNS))
    return frame.astype({"seed": "int64", "run": "int64", "step": "int64", "reward": "float64",
                         "success": "bool", "turns": "int64"})


def _eval_row(manifest: dict, row: dict[str, Any], run: int, rec: dict[str, Any], where: str
              ) -> dict[str, Any]:
    """One eval.parquet row from a dumped episode and its val row's extra_info."""
    reward = rec.get("score", rec.get("reward"))
    if not isinstance(reward, int | float) or "step" not in rec:
        raise HscaleError(f"{where}: no numeric score and step",
                          "not a veRL 0.9.1 validation dump; check veRL's version")
    success, turns = rec.get("success"), rec.get("turns")
    return {"experiment": manifest["experiment"], "arm": manifest["arm"],
            "seed": int(manifest["seed"]), "run": run, "step": int(rec["step"]),
            "benchmark": manifest["benchmark"]["name"], "setting": str(row["setting"]),
            "harness": str(row["harness"]), "task_id": str(row["task_id"]),
            "reward": float(reward),
            "success": float(success) >= 0.5 if success is not None else reward >= 1.0,
            "turns": int(turns) if turns is not None else -1}


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


def _row_index(rec: dict[str, Any], where: str, rows: int) -> int:
    try:
        index = json.loads(rec["gts"])[VAL_TAG]
    except (KeyError, TypeError, ValueError):
        raise HscaleError(f"{where}: not an hscale validation episode (no {VAL_TAG} in gts)",
                          "the dump comes from a val.parquet hscale did not write; re-launch "
                          "the run") from None
    if not isinstance(index, int) or not 0 <= index < rows:
        raise HscaleError(f"{where}: val row {index!r} is not in val.parquet ({rows} rows)",
                          "val.parquet changed after the run; re-plan and re-launch it")
    return index


def _extra(raw: Any) -> dict[str, Any]:
    return json.loads(raw) if isinstance(raw, str) else dict(raw)


def _has_module(name: str) -> bool:
    """Whether ``name`` is installed (found without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _cuda_gpus() -> int:
    """CUDA GPUs torch sees here (0 without torch or CUDA)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _last_line(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no log)"
    text = next((ln.strip() for ln in reversed(lines) if ln.strip()), "(empty log)")
    return text[:300]


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

