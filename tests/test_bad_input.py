"""Input a tester found accepted, coerced or crashing, by class: a spec's model that names
nothing, YAML tags beyond JSON's, task fields that are not text, mount points in the system,
empty task sets, all-zero variances, manifests of the wrong types, a very symmetric
enumeration. Each is refused in one line (exit 2) or handled, never a traceback."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
import yaml

from tests.cli import assert_user_error, hscale
from tests.test_fuzz import BASE


def _spec(tmp_path, text: str):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("model", ["gpt-9", "../../../etc/passwd", "hscale-tinyy", "/nowhere",
                                   "./no-such-folder", "Qwen/../../x", "org/name/extra"])
def test_a_spec_model_that_names_nothing_is_refused(tmp_path, model):
    path = _spec(tmp_path, yaml.safe_dump({**BASE, "model": model}))
    for command in ("validate", "plan"):
        done = hscale(command, path, "--out", tmp_path / "out") if command == "plan" else \
            hscale(command, path)
        assert_user_error(done, f"{path}:", f"model {model!r}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("model", ["hscale-tiny", "Qwen/Qwen3-4B-Instruct-2507",
                                   "Qwen3-4B-Instruct", "./mine"])
def test_a_spec_model_that_names_something_is_taken(tmp_path, model):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "config.json").write_text("{}")
    done = hscale("validate", _spec(tmp_path, yaml.safe_dump({**BASE, "model": model})),
                  cwd="/")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("value, tag", [("!!set {a, b}", "set"), ("!!binary aGVsbG8=", "binary"),
                                        ("!!omap [a: 1]", "omap"), ("!!pairs [a: 1]", "pairs")])
def test_yaml_tags_beyond_json_are_refused(tmp_path, value, tag):
    text = yaml.safe_dump(BASE).replace("name: fuzz", f"name: fuzz\nnotes: {value}")
    assert_user_error(hscale("validate", _spec(tmp_path, text)), f"!!{tag}")


def test_a_date_stays_text(tmp_path):
    text = yaml.safe_dump(BASE).replace("name: fuzz", "name: 2026-12-02")
    done = hscale("validate", _spec(tmp_path, text))
    assert done.returncode == 0, done.stderr


ROW = {"task_id": "t1", "user_query": "say plum", "checker": {"kind": "answer",
                                                              "expected": "plum"}}


@pytest.mark.parametrize("field, value", [("task_id", 7), ("task_id", 1.5), ("task_id", True),
                                          ("user_query", 42), ("user_query", ["a"]),
                                          ("user_query", "   ")])
def test_task_fields_must_be_text(tmp_path, field, value):
    rows = tmp_path / "tasks.jsonl"
    rows.write_text(json.dumps({**ROW, field: value}) + "\n")
    done = hscale("tasks", "list", rows)
    assert_user_error(done, field)
    check = hscale("tasks", "check", rows)
    assert check.returncode == 2 and field in check.stdout


def _folder(root, entry: dict):
    task = root / "task_0001"
    (task / "reward").mkdir(parents=True)
    (task / "input_files").mkdir()
    (task / "reward" / "reward.sh").write_text("echo 1.0\n")
    (task / "data_entry.json").write_text(json.dumps(entry))
    return task


ENTRY = {"task_id": "task_0001", "user_query": "do it", "metadata": {"category": "x"}}


@pytest.mark.parametrize("mount", ["/etc", "/", "/usr/lib", "/proc/self", "../outside",
                                   "/root/../etc", "//etc", "", 5, "/sys/fs/cgroup"])
def test_a_mount_point_in_the_system_is_refused(tmp_path, mount):
    _folder(tmp_path / "set", {**ENTRY, "input_mount_dir": mount})
    assert_user_error(hscale("tasks", "list", tmp_path / "set"), "input_mount_dir")


@pytest.mark.parametrize("mount", ["/root/.openclaw/workspace", "/workspace", ".", "sub/dir",
                                   None])
def test_a_workspace_mount_point_is_taken(tmp_path, mount):
    entry = {**ENTRY} if mount is None else {**ENTRY, "input_mount_dir": mount}
    _folder(tmp_path / "set", entry)
    done = hscale("tasks", "list", tmp_path / "set")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_an_empty_task_list_is_a_problem_for_check_as_for_list(tmp_path, kind):
    path = tmp_path / f"tasks.{kind}"
    if kind == "jsonl":
        path.write_text("")
    else:
        pd.DataFrame({"task_id": pd.Series([], dtype=str)}).to_parquet(path)
    check = hscale("tasks", "check", path)
    assert check.returncode == 2 and "holds no tasks" in check.stdout
    assert hscale("tasks", "list", path).returncode == 2


@pytest.mark.parametrize("components", ["seed=0,task=0,residual=0", "residual=0", "seed=0.0"])
def test_all_zero_variances_are_refused(tmp_path, components):
    path = _spec(tmp_path, yaml.safe_dump(BASE))
    assert_user_error(hscale("power", path, "--components", components), "all zero")


@pytest.mark.slow  # over 10 s on 2 cores: CI's slow step
def test_a_report_over_a_manifest_of_the_wrong_types_warns_and_reports(tmp_path):
    done = hscale("evaluate", "hscale-tiny", "--harnesses", "base+out_of_space", "--tasks", "2",
                  "--out", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "runs" / "evaluate"
    for broken in ({"seed": "s"}, {"seed": 1.5, "arm": 3}, {"train_harnesses": "abc",
                                                             "eval_sets": [1], "space": 3},
                   {"budget": "x", "assignment": 7, "algorithm": ["grpo"]}):
        run = tmp_path / "copy"
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(folder, run / "evaluate")
        path = run / "evaluate" / "hscale-tiny" / "0" / "manifest.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **broken}))
        report = hscale("report", run / "evaluate")
        assert report.returncode == 0, report.stderr
        assert "Traceback" not in report.stderr and "manifest.json" in report.stderr


def test_a_very_symmetric_enumeration_finishes_in_bounded_memory():
    """OA(25; 5^3): its canonical forms once expanded 86,400 states x 120 relabellings x 25
    runs at once (2 GB); in chunks the peak stays near what the rest of hscale uses."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    done = hscale("design", "candidates", "5^3", "--runs", "25")
    assert done.returncode == 0, done.stderr
    assert "OA25.5^3#2" in done.stdout and "OA25.5^3#3" not in done.stdout
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 1 << 20, f"peak memory grew {grown >> 10} MB"  # ru_maxrss is in KB
