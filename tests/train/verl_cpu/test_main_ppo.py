"""veRL's real ``main_ppo`` on the CPU through ``hscale run --backend verl`` (slow): 2 GRPO
steps of 2 tasks x 2 rollouts, every task under two harnesses, a tiny random Qwen2 model, the
CPU platform and the ``hscale_hf`` rollout (hscale.train.backends.verl.cpu). veRL writes its
checkpoints, validation dumps and file-logger metrics; hscale imports them into
eval.parquet and train.parquet and ``hscale report`` renders them; the runner is killed
after the first checkpoint and run again (veRL's ``resume_mode=auto``). Then the same as a
job on a local Ray head (``--ray-address``).

Timings on a shared 2-core machine: about 2 minutes a run (Ray and veRL start-up is most of
it; a training step takes about 10 s)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("verl")
pytest.importorskip("torch")

import pandas as pd  # noqa: E402

from hscale.contracts import read_eval  # noqa: E402
from tests.ray_head import local_ray_head  # noqa: E402
from tests.train.verl_cpu.conftest import (  # noqa: E402
    RUN,
    SPEC,
    hscale,
    launch_env,
    write_spec,
)

pytestmark = pytest.mark.slow


def assert_trained(run: Path, launches: int = 1, validated: tuple[int, ...] = (0, 2),
                   blackbox: str | None = None, harnesses_a_task: int = 2) -> None:
    """veRL's outputs for 2 steps and hscale's imports of them; ``validated``: the steps
    veRL validated at (a resumed launch validates its starting checkpoint too);
    ``blackbox``: a real CLI evaluated out of space too."""
    out = run / "verl"
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "COMPLETED", status
    assert (out / "checkpoints" / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    assert (out / "checkpoints" / "global_step_2" / "actor").is_dir()
    assert sorted(int(p.stem) for p in (out / "validation").glob("*.jsonl")) == list(validated)
    assert len(list((out / "metrics").glob("*.jsonl"))) == launches
    train = pd.read_parquet(run / "train.parquet")
    assert list(train.step) == [0, 1]
    assert train.reward_mean.notna().all() and train.entropy.gt(0).all()
    assert train["training/global_step"].tolist() == [1, 2]
    evals = pd.read_parquet(run / "eval.parquet")
    assert sorted(evals.step.unique()) == list(validated)
    # every evaluated episode's transcript, kept by the agent loop through veRL's dump
    kept = read_eval(run, transcripts=True)
    assert kept.transcript.notna().all() and kept.seconds.gt(0).all()
    first = kept.transcript.map(lambda t: json.loads(t)["messages"][0][0])
    calls = kept.transcript.map(lambda t: len(json.loads(t)["model_calls"]))
    inside = kept.harness != blackbox  # a real CLI's system prompt is in its model calls
    assert first[inside].eq("system").all() and calls[inside].eq(0).all()
    assert first[~inside].eq("user").all() and calls[~inside].ge(1).all()
    assert kept.prompt_tokens.gt(0).all() and kept.model_calls.ge(1).all()
    if blackbox is not None:  # the same episodes through the real CLI, at every validation
        outside, evals = evals[evals.harness == blackbox], evals[evals.harness != blackbox]
        assert len(outside) == 4 * len(validated) and set(outside.setting) == {"out_of_space"}
        assert sorted(outside.step.unique()) == list(validated)
        assert outside.turns.ge(1).all() and outside.reward.isin([0.0, 1.0]).all()
    # 2 held-out tasks under the base harness, a greedy and a sampled pass, at steps 0 and 2
    assert len(evals) == 4 * len(validated) and set(evals.setting) == {"base"}
    assert sorted(evals.decoding.unique()) == ["greedy", "sampled"]
    assert evals.reward.between(0, 1).all() and evals.turns.ge(1).all()
    schedule = pd.read_parquet(run / "schedule.parquet")
    assert schedule.groupby("task_id").harness.nunique().eq(harnesses_a_task).all()


def report(runs: Path) -> str:
    done = hscale("report", str(runs / "verl-cpu"), timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return (runs / "verl-cpu" / "report" / "tables.md").read_text()


def test_main_ppo_trains_is_killed_resumes_and_hscale_imports_it(tiny_model, tmp_path):
    """The runner is killed (kill -9) after the trained run's first checkpoint; the re-run
    resumes it from there (veRL's resume_mode=auto), then runs a second arm that veRL
    validates without training (``trainer.val_only``): where Claude Code is installed, a
    black-box SFT arm (the scripted teacher's episodes through Claude Code, LoRA steps,
    then veRL validates the fine-tuned model), else the base model's reference run; hscale
    imports both and reports them."""
    from hscale.harness import HARNESSES

    sft = HARNESSES.get("bb/claude-code").installed()
    spec = write_spec(tmp_path, tiny_model, **(
        {"evaluation": {**SPEC["evaluation"], "base_model": True}} if not sft else
        {"arms": {**SPEC["arms"], "black-box-sft": {"blackbox": {
             "harness": "bb/claude-code", "method": "sft", "episodes": 2, "batch": 2,
             "lr": 1e-2}}}}))
    runs, run = tmp_path / "runs", tmp_path / "runs" / RUN
    latest = run / "verl" / "checkpoints" / "latest_checkpointed_iteration.txt"
    start = time.monotonic()
    said = (tmp_path / "first-launch.log").open("w")  # what the killed runner printed
    first = subprocess.Popen([sys.executable, "-m", "hscale.cli", "run", str(spec), "--backend",
                              "verl", "--out", str(runs)], env=launch_env(),
                             stdout=said, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (latest.exists() and latest.read_text().strip() == "1"):
            if first.poll() is not None or time.monotonic() > deadline:
                why = ("the first launch ended before its first checkpoint"
                       if first.poll() is not None else "no checkpoint after 10 minutes")
                pytest.fail(f"{why}:\n{(tmp_path / 'first-launch.log').read_text()[-3000:]}"
                            f"{_tail(run)}")
            time.sleep(0.5)
        first.send_signal(signal.SIGKILL)  # the runner; veRL gets SIGTERM (PR_SET_DEATHSIG)
        first.wait(30)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
        said.close()
    _wait_for_launch_to_end(run / "verl" / "train.log")
    assert not (run / "verl" / "validation" / "2.jsonl").exists()

    done = hscale("run", str(spec), "--backend", "verl", "--out", str(runs))
    took = time.monotonic() - start
    log = (run / "verl" / "train.log").read_text()
    assert done.returncode == 0, done.stderr[-3000:] + log[-6000:]
    assert "Resuming from" in log.split("# hscale: launch.sh")[-1]  # veRL resumed
    assert "global_step_1, setting global step to 1" in log
    assert "Platform override from VERL_PLATFORM: cpu" in log
    assert "LLMServerManager: ['hscale_hf-0']" in log
    assert "'num_data_storage_units': 1," in log  # one TransferQueue storage process, not 8
    assert_trained(run, launches=2, validated=(0, 1, 2))
    steps = [json.loads(line)["step"] for p in sorted((run / "verl" / "metrics").glob("*"))
             for line in p.read_text().splitlines() if line.strip()]
    assert 2 in steps and steps.count(1) >= 1  # step 1 from the first launch, 2 from the rerun
    reference = runs / "verl-cpu" / ("black-box-sft" if sft else "base-model") / "0"
    assert "trainer.val_only=True" in (reference / "verl" / "launch.sh").read_text()
    base = pd.read_parquet(reference / "eval.parquet")
    trained = pd.read_parquet(run / "eval.parquet")
    keys = ["setting", "harness", "task_id", "run", "decoding"]
    assert set(base.step) == {2 if sft else 0}  # an SFT arm's at its final step
    assert (base[keys].sort_values(keys).to_numpy().tolist()
            == trained[trained.step == 2][keys].sort_values(keys).to_numpy().tolist())
    if sft:
        assert_fine_tuned(reference, tiny_model)
    else:
        assert pd.read_parquet(reference / "train.parquet").empty
    tables = report(runs)
    assert "structured-18" in tables
    assert ("black-box-sft" if sft else "base model (no RL)") in tables
    print(f"\nhscale run (veRL main_ppo on CPU, 2 steps killed and resumed, and the base "
          f"model): {took:.0f} s")


def assert_fine_tuned(run: Path, base: Path) -> None:
    """A black-box SFT run: the teacher's solved episodes through the CLI, the fine-tune's
    loss going down over its steps, weights that give other outputs than the base model's,
    and result files in the contract."""
    import torch
    from transformers import AutoModelForCausalLM

    from hscale.contracts import Manifest, result_problems

    episodes = (run / "sft" / "collection" / "record" / "episodes.jsonl").read_text()
    assert [json.loads(line)["reward"] for line in episodes.splitlines()] == [1.0, 1.0]
    train = pd.read_parquet(run / "train.parquet")
    assert list(train.step) == [0, 1] and train.teacher_solved.eq(2).all()
    assert train.sft_loss.iloc[-1] < train.sft_loss.iloc[0]
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    with torch.no_grad():
        before, after = (AutoModelForCausalLM.from_pretrained(folder)(ids).logits
                         for folder in (base, run / "sft" / "model"))
    assert (before - after).abs().max() > 1e-4
    assert result_problems(run, Manifest.read(run)) == []


def _tail(run: Path) -> str:
    """The end of veRL's log of a run, where there is one: why a launch ended."""
    log = run / "verl" / "train.log"
    return "\n--- train.log:\n" + log.read_text()[-6000:] if log.exists() else ""


def _wait_for_launch_to_end(log: Path, quiet: float = 15.0, limit: float = 120.0) -> None:
    """The killed launch's Ray stops writing to the log once it is down."""
    deadline, last, size = time.monotonic() + limit, time.monotonic(), -1
    while time.monotonic() < deadline:
        now = log.stat().st_size
        if now != size:
            size, last = now, time.monotonic()
        elif time.monotonic() - last > quiet:
            return
        time.sleep(1)


def test_main_ppo_runs_as_a_job_on_a_local_ray_head(tiny_model, tmp_path, cpu_ray_head):
    """On a Ray head, where Claude Code is installed: 2 black-box RL steps whose rollouts
    are Claude Code episodes against veRL's own rollout servers (each model call a trained
    sequence of the tokens it sampled), evaluated on Claude Code out of space too; else the
    structured arm."""
    from hscale.harness import HARNESSES

    blackbox = "bb/claude-code" if HARNESSES.get("bb/claude-code").installed() else None
    spec = write_spec(tmp_path, tiny_model, **({} if blackbox is None else {
        "evaluation": {**SPEC["evaluation"], "out_of_space": [blackbox]},
        "verl": {**SPEC["verl"], "prompt_length": 8192},
        "arms": {"black-box-rl": {"blackbox": {"harness": blackbox, "method": "rl"}}}}))
    done = hscale("run", str(spec), "--backend", "verl", "--out", str(tmp_path / "runs"),
                  "--ray-address", cpu_ray_head)
    run = tmp_path / "runs" / (RUN if blackbox is None else RUN.parent.with_name(
        "black-box-rl") / "0")
    log = run / "verl" / "train.log"
    assert done.returncode == 0, done.stderr[-3000:] + (log.read_text()[-6000:]
                                                         if log.exists() else "")
    assert json.loads((run / "verl" / "ray_job.json").read_text())["address"] == cpu_ray_head
    assert_trained(run, blackbox=blackbox, harnesses_a_task=1 if blackbox else 2)
    if blackbox is not None:  # the rollouts were the CLI's: its harness on every train row
        rows = pd.read_parquet(run / "verl" / "train.parquet")
        assert {r["harness"] for r in rows.extra_info} == {blackbox}
        train = pd.read_parquet(run / "train.parquet")
        assert train["response_length/mean"].gt(0).all()


@pytest.fixture
def cpu_ray_head():
    """A Ray head for veRL on the CPU: logical CPUs and one logical GPU (veRL's device
    slot), with its dashboard (the job API)."""
    with local_ray_head(cpus=16, gpus=1, env=launch_env()) as address:
        yield address

