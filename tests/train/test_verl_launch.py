"""Launching veRL from ``hscale run --backend verl``: prerequisite errors, the local launch
(a stand-in for ``verl.trainer.main_ppo`` that writes validation dumps with veRL's own writer),
status.json, and validation dumps turned into eval.parquet rows."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.cli import main
from hscale.contracts import Manifest
from hscale.errors import HscaleError
from hscale.train.planning import plan

pytest.importorskip("verl")
pytest.importorskip("hydra")

SPEC = {
    "model": "Qwen/Qwen3-4B-Instruct-2507",  # a hub id: never loaded by these tests
    "name": "launchverl",
    "benchmark": {"name": "builtin", "tasks": 20, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 4, "rollouts": 2},
    "steps": 2, "seeds": [0], "backend": "verl",
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 2, "base_model": False},
    "defaults": {"train": "single", "assignment": {"mode": "repeat", "k": 1}},
    "arms": {"single": {}},
}
FAKE_MODULE = "fake_main_ppo"
# Stands in for verl.trainer.main_ppo: takes the same overrides, writes validation dumps with
# veRL's own writer (RayPPOTrainer._write_generations), each val row repeated val_kwargs.n
# times in a row as DataProto.repeat(interleave=True) does, at step 0 and the last step.
FAKE_MAIN = '''
import os, sys

args = dict(a.split("=", 1) for a in sys.argv[1:])
print("fake veRL:", " ".join(sys.argv[1:]), flush=True)
if os.environ.get("FAKE_VERL_FAIL"):
    print("boom: CUDA out of memory", flush=True)
    sys.exit(3)
import pandas as pd
from verl.trainer.ppo.ray_trainer import RayPPOTrainer
val = pd.read_parquet(args["data.val_files"])
n = int(args["actor_rollout_ref.rollout.val_kwargs.n"])
for step in (0, int(args["trainer.total_training_steps"])):
    gts, scores = [], []
    for i, rm in enumerate(val.reward_model):
        for run in range(n):
            gts.append(rm["ground_truth"])
            scores.append(float((i + run + step) % 2))
    RayPPOTrainer._write_generations(["prompt"] * len(gts), ["answer"] * len(gts), gts, scores,
                                     {"reward": scores, "success": scores},
                                     args["trainer.validation_data_dir"], step)
print("fake veRL: done", flush=True)
'''


def write_spec(folder: Path, **changes) -> Path:
    path = folder / "exp.yaml"
    path.write_text(yaml.safe_dump({**SPEC, **changes}))
    return path


def install_fake_main(run_dir: Path, monkeypatch) -> None:
    """Put the stand-in beside launch.sh (the launch's working folder, and a Ray job's
    working_dir) and make launch.sh run it instead of veRL's main_ppo."""
    # internal: tests the veRL input-building module
    from hscale.train.backends.verl import _inputs as inputs

    (run_dir / "verl").mkdir(parents=True, exist_ok=True)
    (run_dir / "verl" / f"{FAKE_MODULE}.py").write_text(FAKE_MAIN)
    monkeypatch.setattr(inputs, "MAIN", FAKE_MODULE)


def check_eval(run_dir: Path, manifest: Manifest) -> pd.DataFrame:
    """eval.parquet holds the contract's columns and the stand-in's rewards, row by row:
    one episode per val row (greedy run 0, then each sampled run of a setting, harness and
    task) at each validation step."""
    from hscale.contracts import BEHAVIOUR, COST, EVAL_COLUMNS

    frame = pd.read_parquet(run_dir / "eval.parquet")
    assert list(frame.columns) == [*EVAL_COLUMNS, "decoding", "category", "error",
                                   "termination", *BEHAVIOUR, *COST]
    assert frame[list(BEHAVIOUR)].isna().all().all()  # the stand-in's dump carries none
    val = pd.read_parquet(run_dir / "verl" / "val.parquet")
    info = list(val.extra_info)
    assert len(frame) == 2 * len(info)  # two validation steps
    sampled = {e["run"] for e in info if e["decoding"] == "sampled"}
    assert sorted(sampled) == list(range(manifest.evaluation.runs))
    for step, part in frame.groupby("step"):
        assert len(part) == len(info)
        for i, row in enumerate(part.itertuples(index=False)):
            assert (row.decoding, row.run, row.setting, row.harness, row.task_id) == (
                info[i]["decoding"], info[i]["run"], info[i]["setting"], info[i]["harness"],
                info[i]["task_id"])
            assert row.category == json.loads(info[i]["task"])["category"]
            assert row.reward == float((i + step) % 2)
            assert row.success == (row.reward == 1.0)
    assert sorted(frame.step.unique()) == [0, manifest.budget.steps]
    assert set(frame.setting) == set(manifest.eval_sets)
    assert (frame.experiment == manifest.experiment).all() and (frame.arm == "single").all()
    assert (frame.benchmark == "builtin").all() and (frame.turns == -1).all()
    return frame


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in args])
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------- prerequisites


@pytest.fixture
def gpu_machine(monkeypatch):
    """Pretend this machine has 2 CUDA GPUs and vLLM, whatever it has: where the package's
    own checks read them and where the other packages do (its public names)."""
    import hscale.train.backends as backends

    # internal: patches the environment probes at their source
    from hscale.train.backends import _environment as environment

    for module in (backends, environment):  # the package first: read through it lazily, the
        # module's patched name would be what the package "had" and is restored to
        monkeypatch.setattr(module, "cuda_gpus", lambda: 2)
        monkeypatch.setattr(module, "has_module", lambda name: True)
    return environment


def assert_one_line_exit_2(code, err, *needles, out: Path | None = None):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert "hint" in lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    if out is not None:
        assert not out.exists()  # nothing planned before the check


def test_verl_not_importable(tmp_path, capsys, gpu_machine, monkeypatch):
    monkeypatch.setattr(gpu_machine, "has_module", lambda name: name != "verl")
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", write_spec(tmp_path), "--backend", "verl", "--out", out],
                           capsys)
    assert_one_line_exit_2(code, err, "veRL is not installed", 'pip install -e ".[train]"',
                           out=out)


def test_no_gpu_points_to_dry_run_and_ray(tmp_path, capsys, gpu_machine, monkeypatch):
    monkeypatch.setattr(gpu_machine, "cuda_gpus", lambda: 0)
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", write_spec(tmp_path), "--backend", "verl", "--out", out],
                           capsys)
    assert_one_line_exit_2(code, err, "no CUDA GPU", "--dry-run", "--ray-address", out=out)


def test_no_gpu_on_this_machine_really(tmp_path, capsys):
    from hscale.train.backends import cuda_gpus

    if cuda_gpus():
        pytest.skip("this machine has a CUDA GPU")
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", write_spec(tmp_path), "--backend", "verl", "--out", out],
                           capsys)
    assert_one_line_exit_2(code, err, "no CUDA GPU", out=out)


def test_vllm_missing(tmp_path, capsys, gpu_machine, monkeypatch):
    monkeypatch.setattr(gpu_machine, "has_module", lambda name: name != "vllm")
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", write_spec(tmp_path), "--backend", "verl", "--out", out],
                           capsys)
    assert_one_line_exit_2(code, err, "vLLM is not installed", "pip install", out=out)


def test_a_rescue_group_must_match_the_group_it_replaces(tmp_path, capsys, gpu_machine):
    spec = write_spec(tmp_path, arms={"rescue": {"assignment": {
        "mode": "rescue", "router": "random", "group": 8}}})  # rollouts: 2
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", spec, "--backend", "verl", "--out", out], capsys)
    assert_one_line_exit_2(code, err, "rescue group of 8", "assignment.group to 2", out=out)


def test_a_rescue_arms_launch_loads_the_rescue_extension(tmp_path):
    """veRL loads hscale's rescue manager by name and corrects with w = clip(pi_old/q, 0, 2);
    every train row carries what its group needs to be rescued."""
    from hscale.contracts import RowInfo
    from hscale.train.backends.verl import prepare_verl_run
    from hscale.train.backends.verl.rescue import MANAGER_PATH

    spec = write_spec(tmp_path, arms={"rescue": {"assignment": {
        "mode": "rescue", "router": "profile", "group": 2}}})
    (planned,) = plan(spec, tmp_path / "runs")
    result = prepare_verl_run(planned.path, planned.manifest)
    assert f"+actor_rollout_ref.rollout.agent.agent_loop_manager_class={MANAGER_PATH}" \
        in result["overrides"]
    assert "algorithm.rollout_correction.rollout_is_threshold=2.0" in result["overrides"]
    infos = list(pd.read_parquet(result["train"]).extra_info)
    assert all(RowInfo.read(e).rescue["router"] == "profile" for e in infos)
    assert set(RowInfo.read(infos[0]).rescue["pool"]) == set(planned.manifest.assignment.pool)


def test_on_ray_the_spec_says_its_nodes_gpus(tmp_path, capsys):
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", write_spec(tmp_path), "--backend", "verl", "--out", out,
                            "--ray-address", "http://127.0.0.1:8265"], capsys)
    assert_one_line_exit_2(code, err, "GPUs per node", "gpus_per_node", out=out)


def test_unreachable_ray_cluster(tmp_path, capsys):
    out = tmp_path / "runs"
    address = f"http://127.0.0.1:{closed_port()}"
    code, _, err = run_cli(["run", write_spec(tmp_path, verl={"gpus_per_node": 1}),
                            "--backend", "verl", "--out", out, "--ray-address", address], capsys)
    assert_one_line_exit_2(code, err, f"no Ray cluster at {address}", "ray start --head",
                           out=out)


@pytest.mark.parametrize("args, needle", [
    (["--backend", "local", "--ray-address", "http://127.0.0.1:8265"], "is a dashboard"),
    (["--backend", "verl", "--ray-address", "auto"], "dashboard"),
    (["--backend", "scripted", "--ray-address", "auto"], "does not run on a Ray cluster"),
    (["--backend", "verl", "--dry-run", "--ray-address", "auto"], "runs nothing"),
    (["--backend", "verl", "--ray-address", " "], "empty"),
])
def test_bad_ray_arguments(tmp_path, capsys, args, needle):
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", write_spec(tmp_path), "--out", out, *args], capsys)
    assert_one_line_exit_2(code, err, needle, out=out)


# ------------------------------------------------------------------------------- local launch


def test_local_launch_runs_logs_completes_and_imports(tmp_path, capsys, gpu_machine,
                                                       monkeypatch):
    spec, out = write_spec(tmp_path), tmp_path / "runs"
    (planned,) = plan(spec, out)
    run_dir = planned.path
    install_fake_main(run_dir, monkeypatch)
    code, stdout, err = run_cli(["run", spec, "--backend", "verl", "--out", out], capsys)
    assert code == 0, err
    assert "1 of 1 runs completed" in stdout and "train.log" in stdout
    status = json.loads((run_dir / "status.json").read_text())
    manifest = Manifest.read(run_dir)
    assert status["state"] == "COMPLETED" and status["manifest_hash"] == manifest.hash
    assert status["backend"] == "verl"
    log = (run_dir / "verl" / "train.log").read_text()
    assert "fake veRL: done" in log
    # the launch passed this machine's GPU count and the manifest's overrides
    assert "trainer.n_gpus_per_node=2" in log and "trainer.total_training_steps=2" in log
    assert f"trainer.validation_data_dir={(run_dir / 'verl' / 'validation').resolve()}" in log
    check_eval(run_dir, manifest)
    # a completed run is skipped: nothing relaunched
    code, stdout, _ = run_cli(["run", spec, "--backend", "verl", "--out", out], capsys)
    assert code == 0 and "1 of 1 runs completed" in stdout and "train.log" not in stdout
    assert (run_dir / "verl" / "train.log").read_text() == log


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_a_failed_launch_is_failed_with_the_log_line(tmp_path, capsys, gpu_machine,
                                                      monkeypatch):
    spec, out = write_spec(tmp_path), tmp_path / "runs"
    (planned,) = plan(spec, out)
    install_fake_main(planned.path, monkeypatch)
    monkeypatch.setenv("FAKE_VERL_FAIL", "1")
    code, stdout, _ = run_cli(["run", spec, "--backend", "verl", "--out", out], capsys)
    assert code == 1 and "0 of 1 runs completed" in stdout and "FAILED" in stdout
    status = json.loads((planned.path / "status.json").read_text())
    assert status["state"] == "FAILED"
    assert "status 3" in status["error"] and "boom: CUDA out of memory" in status["error"]
    assert not (planned.path / "eval.parquet").exists()
    # the next launch appends to the same log, after a header line
    monkeypatch.delenv("FAKE_VERL_FAIL")
    code, _, _ = run_cli(["run", spec, "--backend", "verl", "--out", out], capsys)
    assert code == 0
    log = (planned.path / "verl" / "train.log").read_text()
    assert log.count("# hscale: launch.sh") == 2 and "boom" in log


def test_get_backend_knows_verl():
    from hscale.train.backends import get_backend

    assert get_backend("verl").name == "verl"
    with pytest.raises(HscaleError, match="unknown backend") as err:
        get_backend("verll")
    assert "did you mean 'verl'" in (err.value.hint or "")


# ------------------------------------------------------------------------------- dump import


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    from hscale.train.backends.verl import prepare_verl_run

    tmp = tmp_path_factory.mktemp("dumps")
    (planned,) = plan(write_spec(tmp), tmp / "runs")
    prepare_verl_run(planned.path, planned.manifest)
    return planned.path, planned.manifest


def truths(run_dir: Path) -> list[str]:
    val = pd.read_parquet(run_dir / "verl" / "val.parquet")
    return [rm["ground_truth"] for rm in val.reward_model]


def test_import_reads_the_classic_trainers_dump(prepared, tmp_path):
    """Dumps written by veRL 0.9.1's RayPPOTrainer._write_generations itself."""
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    from hscale.train.backends.verl import import_validation

    run_dir, manifest = prepared
    dump = run_dir / "verl" / "validation"
    gts = truths(run_dir)
    for step in (0, 2):
        scores = [float((j + step) % 2) for j in range(len(gts))]
        RayPPOTrainer._write_generations(["p"] * len(gts), ["o"] * len(gts), gts, scores,
                                         {"reward": scores, "success": scores}, str(dump), step)
    try:
        frame = import_validation(run_dir, manifest)
        frame.to_parquet(run_dir / "eval.parquet", index=False)
        check_eval(run_dir, manifest)
    finally:
        for path in dump.glob("*.jsonl"):
            path.unlink()


def test_validation_transcripts_in_the_dump_become_the_runs_transcripts(prepared):
    """An agent loop's validation episodes carry their transcripts in the reward extras;
    veRL's dump keeps them (its validation metrics skip text) and the import writes them to
    transcripts.parquet beside eval.parquet, one per eval row."""
    from verl.trainer.ppo.metric_utils import process_validation_metrics
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    from hscale.contracts import TRANSCRIPTS, read_eval, write_eval
    from hscale.train.backends.verl import import_validation

    run_dir, manifest = prepared
    dump = run_dir / "verl" / "validation"
    gts = truths(run_dir)
    for step in (0, 2):
        scores = [float((j + step) % 2) for j in range(len(gts))]
        extras = {"reward": scores, "success": scores,
                  "transcript": [json.dumps({"row": j, "step": step}) for j in range(len(gts))],
                  "seconds": [0.5 + j for j in range(len(gts))]}
        process_validation_metrics(["d"] * len(gts), [str(j) for j in range(len(gts))], extras)
        RayPPOTrainer._write_generations(["p"] * len(gts), ["o"] * len(gts), gts, scores,
                                         extras, str(dump), step)
    try:
        write_eval(run_dir, import_validation(run_dir, manifest))
        frame = read_eval(run_dir, transcripts=True)
        assert len(pd.read_parquet(run_dir / TRANSCRIPTS)) == len(frame) == 2 * len(gts)
        for step, part in frame.groupby("step"):
            assert [json.loads(t) for t in part.transcript] == [
                {"row": j, "step": step} for j in range(len(gts))]
            assert part.seconds.tolist() == [0.5 + j for j in range(len(gts))]
    finally:
        for path in dump.glob("*.jsonl"):
            path.unlink()
        for name in ("eval.parquet", TRANSCRIPTS):
            (run_dir / name).unlink(missing_ok=True)


def test_import_reads_the_v1_trainers_per_segment_dump(prepared):
    """The TransferQueue trainer dumps one line per trained segment, keyed
    <uid>_<session>_<segment>, each with the session's score; one episode per session."""
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    from hscale.train.backends.verl import import_validation

    run_dir, manifest = prepared
    dump = run_dir / "verl" / "validation"
    gts, scores, uids, turns = [], [], [], []
    for i, truth in enumerate(truths(run_dir)):
        for session in range(2):
            for segment in range(1 + i % 2):  # every other row's rollouts have 2 segments
                gts.append(truth)
                scores.append(1.0 if session == 0 else 0.25)
                uids.append(f"uid{i}_{session}_{segment}")
                turns.append(3)
    PPOTrainer._write_generations(["p"] * len(gts), ["o"] * len(gts), gts, scores,
                                  {"reward": scores, "turns": turns, "uid": uids},
                                  str(dump), 7)
    try:
        frame = import_validation(run_dir, manifest)
    finally:
        (dump / "7.jsonl").unlink()
    n_rows = len(truths(run_dir))
    assert len(frame) == 2 * n_rows and (frame.step == 7).all()
    # a val row dumped twice at a step (val_kwargs.n = 2 by hand): its second episode counts
    # as a run after the planned ones
    # (a greedy row is deterministic: its copies keep its run)
    info = list(pd.read_parquet(run_dir / "verl" / "val.parquet").extra_info)
    assert frame.run.tolist() == [
        e["run"] + (0 if e["decoding"] == "greedy" else k * manifest.evaluation.runs)
        for e in info for k in range(2)]
    assert frame.reward.tolist() == [1.0, 0.25] * n_rows
    assert frame.success.tolist() == [True, False] * n_rows  # no success key: reward >= 1
    assert (frame.turns == 3).all()


def test_import_refuses_foreign_or_missing_dumps(prepared):
    from hscale.train.backends.verl import import_validation

    run_dir, manifest = prepared
    dump = run_dir / "verl" / "validation"
    with pytest.raises(HscaleError, match="no veRL validation dumps"):
        import_validation(run_dir, manifest)
    dump.mkdir(parents=True, exist_ok=True)
    line = {"input": "p", "output": "o", "gts": '{"type": "exact"}', "score": 1.0, "step": 1}
    (dump / "1.jsonl").write_text(json.dumps(line) + "\n")
    try:
        with pytest.raises(HscaleError, match=r"1\.jsonl:1: not an hscale validation"):
            import_validation(run_dir, manifest)
        bad = {**line, "gts": json.dumps({"checker": {}, "hscale_val_index": 10**6})}
        (dump / "1.jsonl").write_text(json.dumps(bad) + "\n")
        with pytest.raises(HscaleError, match="not in val.parquet"):
            import_validation(run_dir, manifest)
        scoreless = {"gts": json.dumps({"checker": {}, "hscale_val_index": 0}), "step": 1}
        (dump / "1.jsonl").write_text(json.dumps(scoreless) + "\n")
        with pytest.raises(HscaleError, match=r"1\.jsonl:1: no numeric score"):
            import_validation(run_dir, manifest)
    finally:
        (dump / "1.jsonl").unlink()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc (Linux)")
def test_a_killed_runner_takes_its_launch_with_it(tmp_path):
    """kill -9 of the runner must not leave veRL holding the GPUs for the next launch."""
    import os
    import signal
    import subprocess
    import sys
    import time

    verl_dir = tmp_path / "run" / "verl"
    verl_dir.mkdir(parents=True)
    pid_file = tmp_path / "pid"
    (verl_dir / "launch.sh").write_text(
        "#!/usr/bin/env bash\nexec python -c \"import os, sys, time; "
        "open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(300)\" "
        f"{pid_file}\n")
    runner = subprocess.Popen([sys.executable, "-c", "import sys; from hscale.train.backends."
                               "verl._launch import launch_local; launch_local(sys.argv[1])",
                               str(tmp_path / "run")])
    try:
        deadline = time.monotonic() + 120
        while not (pid_file.is_file() and pid_file.read_text()):
            assert runner.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        child = int(pid_file.read_text())
        assert _alive(child)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait()
        while _alive(child):
            assert time.monotonic() < deadline, "the launch outlived its runner"
            time.sleep(0.1)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


@pytest.mark.gpu
def test_on_a_gpu_machine_the_launch_uses_every_gpu_or_asks_for_vllm(tmp_path):
    """With CUDA here the only prerequisite left is vLLM; the launch takes every GPU."""
    import torch

    from hscale.train.backends import has_module

    # internal: tests the launch prerequisites check
    from hscale.train.backends.verl._launch import check_launch

    (planned,) = plan(write_spec(tmp_path), tmp_path / "runs")
    if not has_module("vllm"):
        with pytest.raises(HscaleError, match="vLLM is not installed"):
            check_launch([planned.manifest], None)
        return
    assert check_launch([planned.manifest], None) == [
        f"trainer.n_gpus_per_node={torch.cuda.device_count()}", "trainer.nnodes=1"]
