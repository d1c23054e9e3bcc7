"""provenance.jsonl: every run records what made it as it starts and resumes (an export as it
writes a run's inputs); the reader skips and names a damaged line; ``hscale report`` states a
study's provenance in a line and warns, naming the runs, when they were made under two code
revisions; the viewer and its export show a run's provenance, escaped."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.analysis import Study, export_html, synthetic_episodes, write_report, write_runs
from hscale.contracts import (
    PROVENANCE,
    Manifest,
    Provenance,
    Revision,
    RunState,
    append_provenance,
    capture_provenance,
    read_provenance,
    write_status,
)
from hscale.train.backends import Backend, get_backend
from hscale.train.running import export_experiment, run_experiment
from tests.cli import hscale

ROOT = Path(__file__).resolve().parents[1]
SPEC = {
    "name": "prov",
    "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
    "algorithm": {"name": "grpo", "tasks_per_step": 2, "rollouts": 2},
    "steps": 2, "seeds": [0],
    "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "runs": 2, "tasks": 3,
                   "episodes": 3, "base_model": False},
    "defaults": {"train": {"recipe": "structured", "runs": 18},
                 "assignment": {"mode": "locality", "k": 2}},
    "arms": {"structured": {}, "single": {"train": "single",
                                          "assignment": {"mode": "repeat", "k": 2}}},
}


def _spec(folder: Path) -> Path:
    path = folder / "prov.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    return path


@pytest.fixture(scope="module")
def scripted(tmp_path_factory) -> Path:
    """Two finished runs of the scripted backend (no model: a second)."""
    folder = tmp_path_factory.mktemp("scripted")
    run_experiment(_spec(folder), folder / "runs", backend=get_backend("scripted"))
    return folder / "runs" / "prov"


def test_capturing_reads_versions_without_importing_torch():
    code = ("import sys; from hscale.contracts import capture_provenance as c; "
            "p = c('start', backend='local'); print(p.model_dump_json()); "
            "print([m for m in ('torch', 'verl', 'ray', 'transformers') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code, "--flag"], capture_output=True,
                          text=True, cwd=ROOT, check=True)
    record, imported = done.stdout.splitlines()
    assert imported == "[]"
    made = Provenance.model_validate_json(record)
    assert made.event == "start" and made.backend == "local" and made.argv == ["-c", "--flag"]
    assert made.python == ".".join(map(str, sys.version_info[:3]))
    assert set(made.packages) >= {"torch", "verl", "transformers", "vllm", "sglang", "numpy"}
    assert made.packages["numpy"] == __import__("numpy").__version__
    assert made.hardware.threads >= 1 and made.hardware.cpu
    assert made.code().startswith(f"hscale {made.hscale}")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_revision_is_the_sources_commit_and_whether_it_is_dirty(tmp_path):
    # internal: tests the git reader itself
    from hscale.contracts._provenance import source_revision

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True,
                              text=True, check=True).stdout.strip()

    assert source_revision(tmp_path) is None  # not a repository
    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    git("add", "a.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    git("remote", "add", "origin", "https://user:secret@example.com/hscale.git")
    clean = source_revision(tmp_path)
    assert clean == Revision(commit=git("rev-parse", "HEAD"), dirty=False, diff="",
                             origin="https://example.com/hscale.git")
    (tmp_path / "a.py").write_text("x = 2\n")
    dirty = source_revision(tmp_path)
    assert dirty.dirty and len(dirty.diff) == 12 and dirty.short().endswith(dirty.diff[:7])
    (tmp_path / "a.py").write_text("x = 3\n")
    assert source_revision(tmp_path).diff != dirty.diff  # two dirty trees told apart
    assert source_revision(tmp_path / "lib" / "site-packages" / "hscale") is None


def test_gpus_driver_and_cuda_come_from_nvidia_smi_where_it_exists(tmp_path, monkeypatch):
    # internal: the hardware reader, against a stand-in nvidia-smi
    from hscale.contracts._provenance import hardware

    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\nif [ -n \"$1\" ]; then\n"
                    "echo 'NVIDIA H100 80GB HBM3, 81559, 550.54.15'\n"
                    "echo 'NVIDIA H100 80GB HBM3, 81559, 550.54.15'\nelse\n"
                    "echo '| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: "
                    "12.4 |'\nfi\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{__import__('os').environ['PATH']}")
    found = hardware()
    assert [g.name for g in found.gpus] == ["NVIDIA H100 80GB HBM3"] * 2
    assert found.gpus[0].memory_mib == 81559 and found.driver == "550.54.15"
    assert found.cuda == "12.4"
    assert found.line().startswith("2 x NVIDIA H100 80GB HBM3 (81559 MiB), driver 550.54.15, "
                                   "CUDA 12.4; ")


def test_lines_are_appended_and_a_damaged_one_is_skipped_and_named(tmp_path):
    assert read_provenance(tmp_path) == ([], [])
    first = capture_provenance("start", manifest_hash="h")
    append_provenance(tmp_path, first)
    with open(tmp_path / PROVENANCE, "a") as handle:
        handle.write('{"event": "resume", "time": 1}\nnot json\n{"event": "resu')  # torn
    append_provenance(tmp_path, first.model_copy(update={"event": "resume"}))
    records, problems = read_provenance(tmp_path)
    assert [r.event for r in records] == ["start", "resume"]
    assert problems == [f"{PROVENANCE} line 2: time: Input should be a valid string, skipped",
                        f"{PROVENANCE} line 3: not JSON, skipped",
                        f"{PROVENANCE} line 4: not JSON, skipped"]


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_any_bytes_are_read_as_records_and_named_problems_never_an_error(data):
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / PROVENANCE).write_bytes(data)
        records, problems = read_provenance(tmp)
        assert all(isinstance(r, Provenance) for r in records)
        assert all(p.startswith(f"{PROVENANCE} line ") and "\n" not in p for p in problems)


def test_the_runner_records_a_start_then_a_resume(scripted, tmp_path):
    # internal: drives one run's lifecycle directly
    from hscale.train.running._runner import run_one

    run = scripted / "structured" / "0"
    records, problems = read_provenance(run)
    assert problems == [] and len(records) == 1
    made = records[0]
    assert made.event == "start" and made.backend == "scripted"
    assert made.manifest_hash == Manifest.read(run).hash
    assert made.settings == {"error_rate": 0.3}
    copy = tmp_path / "prov" / "structured" / "0"
    shutil.copytree(run, copy)
    write_status(copy, RunState.INTERRUPTED, made.manifest_hash)
    assert run_one(copy, Manifest.read(copy), get_backend("scripted")) == "COMPLETED"
    assert [r.event for r in read_provenance(copy)[0]] == ["start", "resume"]


def _nothing(folder, manifest, progress) -> None:
    """A Ray task's work that trains nothing (its line is what the test reads)."""


def test_a_ray_task_adds_its_nodes_line_and_it_comes_back_with_the_results(scripted,
                                                                          tmp_path):
    from hscale.train.backends import RayTask

    # internal: a task's work on a node that cannot see the run folder (a copy travels)
    from hscale.train.ray_cluster import _tasks as ray_tasks

    run = tmp_path / "prov" / "single" / "0"
    shutil.copytree(scripted / "single" / "0", run)
    files = ray_tasks.execute(str(run), Manifest.read(run), "token",
                              RayTask("tests.test_provenance:_nothing"),
                              lambda: ray_tasks.folder_files(run), dict, lambda message: None)
    assert files is not None and PROVENANCE in files
    ray_tasks.write_back(run, files)
    records, problems = read_provenance(run)
    assert problems == [] and [r.event for r in records] == ["start", "ray-task"]
    assert records[1].settings == {"folder": "copied"}
    assert records[1].manifest_hash == records[0].manifest_hash


class _Exporting(Backend):
    name = "exporting"

    def run(self, run_dir, manifest, progress=None):
        raise AssertionError("an export runs nothing")

    def export(self, run_dir, manifest):
        (Path(run_dir) / "go.sh").write_text("echo go\n")
        return Path(run_dir) / "go.sh"


def test_an_export_records_its_provenance_and_the_file_that_starts_the_run(tmp_path):
    written = export_experiment(_spec(tmp_path), tmp_path / "runs", backend=_Exporting())
    for path in written:
        records, _ = read_provenance(path.parent)
        assert [r.event for r in records] == ["export"]
        assert records[0].backend == "exporting" and records[0].settings == {"inputs": "go.sh"}


@pytest.mark.slow  # veRL's config is composed to check the overrides (~10 s)
def test_a_verl_dry_run_records_its_provenance(tmp_path):
    pytest.importorskip("verl")
    done = hscale("run", ROOT / "experiments" / "paper" / "harness-scaling-4b-grpo.yaml",
                  "--backend", "verl", "--dry-run", "--quick", "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    runs = sorted(tmp_path.glob(f"*/*/0/{PROVENANCE}"))
    assert runs
    records, problems = read_provenance(runs[0].parent)
    assert problems == [] and [r.event for r in records] == ["export"]
    assert records[0].backend == "verl" and records[0].settings == {
        "overrides": [], "inputs": "verl/launch.sh"}
    assert records[0].argv == sys.argv  # in this process: the command line it was given


def _study(root: Path) -> Path:
    """Four synthetic runs, each with a provenance line of one revision."""
    episodes = synthetic_episodes({"a": 0.4, "b": 0.6}, arms=("a", "b"), seeds=(0, 1), runs=2,
                                  tasks=6, experiment="mixed")
    folders = write_runs(root, episodes)
    base = capture_provenance("start", backend="synthetic")
    for folder in folders:
        append_provenance(folder, base.model_copy(update={
            "manifest_hash": Manifest.read(folder).hash,
            "revision": Revision(commit="a" * 40), "hscale": "0.1.0"}))
    return root / "mixed"


@pytest.mark.slow  # a whole report: about 5 s
def test_a_uniform_study_is_one_line_and_the_report_says_its_own(tmp_path):
    study = _study(tmp_path / "runs")
    report = write_report(study, tmp_path / "report", n_boot=200)
    assert report.provenance.warnings == []
    line = report.provenance.line
    assert line.startswith("Produced by hscale 0.1.0 (commit aaaaaaa), ") and ": 4 runs, " in line
    page = (tmp_path / "report" / "report.html").read_text()
    assert "id='provenance'>Produced by hscale 0.1.0 (commit aaaaaaa)" in page
    assert "<br>This report: hscale " in page
    saved = json.loads((tmp_path / "report" / "provenance.json").read_text())
    assert saved["report"]["event"] == "report" and len(saved["runs"]) == 4


@pytest.mark.slow  # a whole report: about 8 s
def test_a_study_made_under_two_revisions_is_warned_of_naming_its_runs(tmp_path):
    study = _study(tmp_path / "runs")
    for run in (study / "b" / "1", study / "a" / "1"):
        records, _ = read_provenance(run)
        append_provenance(run, records[0].model_copy(update={
            "event": "resume", "revision": Revision(commit="b" * 40, dirty=True,
                                                    diff="c" * 12)}))
    (study / "b" / "1" / PROVENANCE).write_text(  # b/1: resumed after the upgrade, then
        (study / "b" / "1" / PROVENANCE).read_text().splitlines()[1] + "\n")  # only that
    with open(study / "a" / "0" / PROVENANCE, "a") as handle:
        handle.write("{damaged\n")
    report = write_report(study, tmp_path / "report", n_boot=200)
    warning = ("The runs were made under 2 code revisions: hscale 0.1.0 (commit aaaaaaa) "
               "(a/0, a/1, b/0; 3 runs); hscale 0.1.0 (commit bbbbbbb+dirty:ccccccc) (a/1, "
               "b/1; 2 runs); resumed under another: a/1. Their numbers may differ for that "
               "alone: rerun them under one (hscale rerun checks a run against its manifest).")
    assert report.provenance.warnings == [warning]
    assert "a/0/provenance.jsonl line 2: not JSON, skipped" in report.problems
    page = (tmp_path / "report" / "report.html").read_text()
    assert "class='problem provenance-warning'>The runs were made under 2 code revisions" \
        in page
    assert f"**Warning: {warning}**" in (tmp_path / "report" / "report.md").read_text()
    done = hscale("report", study, "--out", tmp_path / "again", "--n-boot", "200")
    assert done.returncode == 0 and f"warning: {warning}" in done.stderr


def test_runs_without_provenance_are_said_and_nothing_is_claimed(tmp_path):
    episodes = synthetic_episodes(0.5, arms=("a", "b"), seeds=(0,), runs=2, tasks=6,
                                  experiment="old")
    write_runs(tmp_path / "runs", episodes)
    report = write_report(tmp_path / "runs" / "old", tmp_path / "report", n_boot=200)
    assert report.provenance.line.startswith("No run records its provenance")
    assert report.provenance.warnings == []


def test_the_viewer_and_its_export_show_a_runs_provenance_escaped(scripted, tmp_path):
    run = scripted / "single" / "0"
    records, _ = read_provenance(run)
    (run / PROVENANCE).write_text(records[0].model_copy(update={
        "argv": ["hscale", "run", "<script>alert(1)</script>"]}).model_dump_json() + "\n")
    study = Study(scripted)
    index = int(study.select({"arm": "single"}).index[0])
    rows = dict(study.episode(index)["provenance"])
    assert rows["produced by"] == records[0].line()
    assert rows["runs"] == f"start {records[0].time}"
    assert rows["command"] == "hscale run <script>alert(1)</script>"
    page = export_html(study, {"arm": "single"}, limit=2)
    assert "how its run was made (provenance)" in page and "<script>" not in page
    assert "hscale run &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f"<td>produced by</td><td>{records[0].line()}</td>" in page
