"""Ray jobs: addresses, package sizes and polling against a stand-in client; then, marked slow,
a real local CPU Ray head (dashboard included) running an hscale entry point and a veRL run
(the main_ppo stand-in) submitted, interrupted, re-attached and completed."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from hscale.errors import HscaleError

# internal: tests the Ray jobs/tasks modules
from hscale.train.ray_cluster import _jobs as ray_jobs
from tests.ray_head import local_ray_head

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]


class StandInClient:
    """A JobSubmissionClient's polling surface: states and logs played back in order."""

    def __init__(self, states, logs, fail_first: int = 0):
        self.states, self.logs, self.fail_first, self.calls = list(states), list(logs), \
            fail_first, 0

    def get_job_status(self, job_id):
        self.calls += 1
        if self.calls <= self.fail_first:
            raise ConnectionError("dashboard restarting")
        if job_id == "missing":
            raise RuntimeError("Request failed with status code 404: Job missing does not exist")
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return SimpleNamespace(value=state)

    def get_job_logs(self, job_id):
        return self.logs.pop(0) if len(self.logs) > 1 else self.logs[0]


@pytest.mark.parametrize("address, url", [
    ("http://head:8265", "http://head:8265"), ("head:8265", "http://head:8265"),
    (" https://ray.example.org ", "https://ray.example.org"),
    # the addresses a task run takes mean the same head's dashboard
    ("head:6379", "http://head:8265"), ("ray://head:10001", "http://head:8265"),
    ("ray://head", "http://head:8265"),
])
def test_dashboard_url(address, url):
    assert ray_jobs.dashboard_url(address) == url


@pytest.mark.parametrize("address, needle", [("  ", "empty"), ("auto", "dashboard"),
                                             ("ray://", "not a Ray address")])
def test_addresses_jobs_cannot_use_are_refused(address, needle):
    with pytest.raises(HscaleError, match=needle) as err:
        ray_jobs.dashboard_url(address)
    assert "8265" in (err.value.hint or "")


def test_no_cluster_is_one_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(HscaleError, match=f"no Ray cluster at 127.0.0.1:{port}") as err:
        ray_jobs.connect(f"127.0.0.1:{port}")
    assert "ray start --head" in (err.value.hint or "")


def test_package_size_skips_excluded_folders_and_refuses_too_much(tmp_path, monkeypatch):
    monkeypatch.setattr(ray_jobs, "_max_package_size", lambda: 1 << 20)
    (tmp_path / "train.parquet").write_bytes(b"x" * 1000)
    (tmp_path / "checkpoints" / "step_1").mkdir(parents=True)
    (tmp_path / "checkpoints" / "step_1" / "model.pt").write_bytes(b"x" * (2 << 20))
    (tmp_path / "train.log").write_bytes(b"x" * (2 << 20))
    excludes = ["/checkpoints/", "*.log"]
    assert ray_jobs.check_package_size(tmp_path, excludes) == 1000
    (tmp_path / "big.bin").write_bytes(b"x" * (2 << 20))
    with pytest.raises(HscaleError, match="over Ray's 1 MiB limit"):
        ray_jobs.check_package_size(tmp_path, excludes)
    with pytest.raises(HscaleError, match="no such folder"):
        ray_jobs.check_package_size(tmp_path / "nope", excludes)


def test_follow_mirrors_the_logs_until_the_job_ends(tmp_path):
    client = StandInClient(["PENDING", "RUNNING", "RUNNING", "SUCCEEDED"],
                           ["", "step 1\n", "step 1\nstep 2\n", "step 1\nstep 2\ndone\n"],
                           fail_first=2)
    seen = []
    state = ray_jobs.follow(client, "job", tmp_path / "train.log", interval=0,
                            on_poll=seen.append)
    assert state == "SUCCEEDED" and seen == ["PENDING", "RUNNING", "RUNNING", "SUCCEEDED"]
    assert (tmp_path / "train.log").read_text() == "step 1\nstep 2\ndone\n"


def test_follow_gives_up_after_repeated_failures(tmp_path):
    client = StandInClient(["RUNNING"], [""], fail_first=10)
    with pytest.raises(ConnectionError):
        ray_jobs.follow(client, "job", tmp_path / "train.log", interval=0, retries=3)
    assert client.calls == 4


def test_job_state_of_an_unknown_job_is_none():
    assert ray_jobs.job_state(StandInClient(["RUNNING"], [""]), "missing") is None
    assert ray_jobs.job_state(StandInClient(["STOPPED"], [""]), "job") == "STOPPED"


@pytest.mark.parametrize("recorded, state, expect", [
    ({}, None, "new"),
    ({"job_id": "j1"}, "RUNNING", "attach"), ({"job_id": "j1"}, "PENDING", "attach"),
    ({"job_id": "j1"}, "SUCCEEDED", "attach"),
    ({"job_id": "missing"}, None, "resubmit"),  # recorded, never reached the cluster
    ({"job_id": "j1"}, "FAILED", "new"), ({"job_id": "j1"}, "STOPPED", "new"),
    ({"job_id": "j1", "manifest_hash": "other"}, "RUNNING", "new"),
    ({"job_id": "j1", "address": "http://elsewhere:8265"}, "RUNNING", "new"),
])
def test_which_job_a_rerun_follows(tmp_path, recorded, state, expect):
    from hscale.train.backends import RayJob

    manifest = SimpleNamespace(experiment="e", arm="a b", seed=0, hash="h")
    work = RayJob("true", tmp_path, tmp_path / "job.log", tmp_path / "ray_job.json")
    if recorded:
        record = {"address": "http://head:8265", "manifest_hash": "h", **recorded}
        work.record.write_text(json.dumps(record))
    jobs = ray_jobs.RayJobs("http://head:8265")
    jobs.client = StandInClient([state or "RUNNING"], [""])
    job_id, submit = jobs._job_to_follow(work, manifest)
    if expect == "attach":
        assert (job_id, submit) == ("j1", False)
    elif expect == "resubmit":
        assert (job_id, submit) == ("missing", True)
    else:
        assert submit and job_id.startswith("hscale-e-a-b-0-") and job_id != "j1"


# ------------------------------------------------------------------------------- a real head


@pytest.fixture(scope="module")
def ray_head():
    """A CPU Ray head with its dashboard (the job API)."""
    with local_ray_head(cpus=1) as address:
        yield address


def run_job(address: str, entrypoint: str, work: Path, log: Path, **options) -> tuple[str, str]:
    """Submit ``entrypoint`` and follow it to the end: (job id, final state)."""
    client = ray_jobs.connect(address)
    job_id = ray_jobs.submit(client, entrypoint, work, **options)
    return job_id, ray_jobs.follow(client, job_id, log, interval=0.5)


@pytest.mark.slow
def test_a_job_runs_an_hscale_entry_point(ray_head, tmp_path):
    work = tmp_path / "job"
    work.mkdir()
    shutil.copy(ROOT / "experiments" / "demo.yaml", work / "demo.yaml")
    marker = tmp_path / "marker.txt"
    entry = ("python -m hscale.cli validate demo.yaml && python -c \"import sys, "
             "hscale.train as train; open(sys.argv[1], 'w').write(train.__file__)\" "
             f"{marker}")
    job_id, state = run_job(ray_head, entry, work, tmp_path / "job.log",
                            py_modules=ray_jobs.hscale_py_modules())
    log = (tmp_path / "job.log").read_text()
    assert state == "SUCCEEDED", log
    assert "demo.yaml: experiment demo: 9 arms x 1 to 8 seeds" in log
    # the job ran the hscale shipped with it, not whatever the cluster has installed
    assert "py_modules_files" in marker.read_text()
    client = ray_jobs.connect(ray_head)
    assert ray_jobs.job_state(client, job_id) == "SUCCEEDED"


@pytest.mark.slow
def test_a_failing_job_is_reported_with_its_log(ray_head, tmp_path):
    work = tmp_path / "job"
    work.mkdir()
    entry = "python -c \"import sys; print('went wrong here'); sys.exit(4)\""
    job_id, state = run_job(ray_head, entry, work, tmp_path / "job.log")
    assert state == "FAILED"
    assert "went wrong here" in (tmp_path / "job.log").read_text()
    assert "4" in ray_jobs.job_message(ray_jobs.connect(ray_head), job_id)


@pytest.mark.slow
def test_verl_run_as_a_ray_job_reattaches_after_an_interrupt(ray_head, tmp_path, capsys,
                                                              monkeypatch):
    """hscale run --backend verl --ray-address: submit, lose the runner (Ctrl-C) while the
    job runs, re-run: the same job is followed to the end (no second submission), its
    validation dumps become eval.parquet, and a third run skips the completed run."""
    from hscale.contracts import Manifest
    from hscale.train.planning import plan
    from tests.train.test_verl_launch import SPEC, check_eval, install_fake_main, run_cli

    spec, out = tmp_path / "exp.yaml", tmp_path / "runs"
    spec.write_text(yaml.safe_dump({**SPEC, "verl": {"gpus_per_node": 1}}))
    (planned,) = plan(spec, out)
    run_dir = planned.path
    install_fake_main(run_dir, monkeypatch)
    monkeypatch.setattr(ray_jobs, "POLL_SECONDS", 0.5)
    real_follow = ray_jobs.follow

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ray_jobs, "follow", interrupted)
    args = ["run", spec, "--backend", "verl", "--out", out, "--ray-address", ray_head]
    code, _, err = run_cli(args, capsys)
    assert code == 130, err
    status = json.loads((run_dir / "status.json").read_text())
    job_id = status["ray_job_id"]
    assert status["state"] == "INTERRUPTED" and status["ray_address"] == ray_head
    assert json.loads((run_dir / "verl" / "ray_job.json").read_text())["job_id"] == job_id

    monkeypatch.setattr(ray_jobs, "follow", real_follow)
    code, stdout, err = run_cli(args, capsys)
    assert code == 0, (stdout, err)
    status = json.loads((run_dir / "status.json").read_text())
    assert status["state"] == "COMPLETED" and status["ray_job_id"] == job_id
    client = ray_jobs.connect(ray_head)
    ours = [j for j in client.list_jobs()
            if (j.metadata or {}).get("hscale_run") == str(run_dir.resolve())]
    assert [j.submission_id for j in ours] == [job_id]
    assert "fake veRL: done" in (run_dir / "verl" / "train.log").read_text()
    check_eval(run_dir, Manifest.read(run_dir))

    code, stdout, _ = run_cli(args, capsys)
    assert code == 0 and "1 of 1 runs completed" in stdout and "Ray job" not in stdout
    assert len([j for j in client.list_jobs()
                if (j.metadata or {}).get("hscale_run") == str(run_dir.resolve())]) == 1
