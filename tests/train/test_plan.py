"""Experiment specs and planning: validation errors, manifests, idempotence."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.cli import main
from hscale.train.spec import ExperimentSpec

DEMO = Path(__file__).resolve().parents[2] / "experiments" / "demo.yaml"
BASE = yaml.safe_load(DEMO.read_text())


def small(**changes):
    spec = copy.deepcopy(BASE)
    spec.update(steps=8, seeds=[0], benchmark={"name": "builtin", "tasks": 40, "seed": 0})
    for arm in spec["arms"].values():  # one seed an arm: the demo's hypotheses' arms have 8
        (arm or {}).pop("seeds", None)
    if "arms" in changes:  # the demo's reference and hypotheses name the demo's arms
        spec.pop("reference", None)
        spec.pop("hypotheses", None)
    spec.update(changes)
    return spec


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def typo(word: str) -> str:
    return word[1] + word[0] + word[2:] if len(word) > 1 else word + "x"


def malformed_specs():
    """(name, spec-or-text) pairs, each wrong in one way."""
    cases = []
    for key in ExperimentSpec.model_fields:
        spec = small()
        spec[typo(key)] = spec.pop(key, 1)
        cases.append((f"typo-top-{key}", spec))
    for section, keys in [("benchmark", ["name", "tasks", "seed"]),
                          ("algorithm", ["name", "tasks_per_step", "rollouts", "lr"]),
                          ("evaluation", ["base", "in_space", "runs"])]:
        for key in keys:
            spec = small()
            spec[section] = dict(spec[section])
            spec[section][typo(key)] = spec[section].pop(key)
            cases.append((f"typo-{section}-{key}", spec))
    for key in ["train", "assignment", "description"]:
        spec = small()
        spec["arms"]["structured-18"] = {typo(key): {}}
        cases.append((f"typo-arm-{key}", spec))
    for key in ["mode", "k"]:
        spec = small()
        spec["defaults"]["assignment"] = {typo(key): 1}
        cases.append((f"typo-assignment-{key}", spec))
    for key in ["recipe", "runs"]:
        spec = small()
        spec["arms"]["structured-18"] = {"train": {typo(key): 18}}
        cases.append((f"typo-train-{key}", spec))
    bad_values = [
        ("steps", "many"), ("steps", -1), ("steps", 0), ("seeds", []), ("seeds", ["a"]),
        ("name", "bad name!"), ("name", ""), ("arms", {}), ("backend", "slurm"),
        ("algorithm", {"name": "sac"}), ("algorithm", {"tasks_per_step": 0}),
        ("algorithm", {"lr": -1}), ("algorithm", {"gamma": 2}), ("benchmark", {"tasks": 0}),
        ("evaluation", {"runs": 0}), ("evaluation", {"in_space": -1}), ("model", 3),
        ("defaults", {"assignment": {"mode": "nearest"}}), ("defaults", {"assignment": {"k": 0}}),
        ("defaults", {"train": "grid"}), ("defaults", {"train": {"runs": "x"}}),
        ("arms", {"a": {"assignment": {"mode": "rescue"}}}), ("arms", {"a": {"train": 5}}),
        ("seeds", "zero"), ("evaluation", {"out_of_space": "oos/shell"}),
    ]
    for i, (key, value) in enumerate(bad_values):
        cases.append((f"value-{i}-{key}", small(**{key: value})))
    cases += [("not-a-mapping", "- a\n- b\n"), ("bad-yaml", "name: [unclosed\n"),
              ("tabs", "name: x\n\tarms: {}\n"), ("empty", "")]
    return cases


CASES = malformed_specs()


def test_there_are_at_least_fifty_malformed_specs():
    assert len(CASES) >= 50


@pytest.mark.parametrize("name, spec", CASES, ids=[c[0] for c in CASES])
def test_malformed_spec_is_one_line_exit_2_and_plans_nothing(tmp_path, capsys, name, spec):
    path = tmp_path / "exp.yaml"
    path.write_text(spec if isinstance(spec, str) else yaml.safe_dump(spec))
    out = tmp_path / "runs"
    code, stdout, stderr = run_cli(["plan", str(path), "--out", str(out)], capsys)
    assert code == 2, (name, stdout, stderr)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "hint" in lines[0], stderr
    assert "exp.yaml" in lines[0]
    assert not out.exists()


def test_unknown_key_names_the_line_and_suggests(tmp_path, capsys):
    path = tmp_path / "exp.yaml"
    path.write_text("name: x\nsteps: 4\narms:\n  a:\n    assignment: {mode: locality, kk: 2}\n")
    code, _, stderr = run_cli(["validate", str(path)], capsys)
    assert code == 2 and "exp.yaml:5" in stderr and "did you mean 'k'" in stderr


def test_plan_writes_manifests_and_schedules_and_is_idempotent(tmp_path, capsys):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(small()))
    out = tmp_path / "runs"
    code, stdout, _ = run_cli(["plan", str(path), "--out", str(out)], capsys)
    assert code == 0 and "10 written" in stdout  # 9 arms and the base model's reference
    manifests = {p.parent.parent.name: json.loads(p.read_text())
                 for p in out.glob("demo/*/0/manifest.json")}
    reference = manifests.pop("base-model")
    assert len(manifests) == 9
    assert reference["budget"]["steps"] == 0 and reference["train_harnesses"] == []
    assert reference["eval_sets"] == manifests["structured-18"]["eval_sets"]
    assert reference["evaluation"] == manifests["structured-18"]["evaluation"]
    assert pd.read_parquet(out / "demo" / "base-model" / "0" / "schedule.parquet").empty
    held_out = set(manifests["structured-18"]["eval_sets"]["in_space"])
    assert len(held_out) == 18
    for arm, manifest in manifests.items():
        overlap = set(manifest["train_harnesses"]) & held_out
        assert overlap == (held_out if arm == "full-243" else set()), arm
        for key in ("schema_version", "experiment", "arm", "seed", "space", "train_harnesses",
                    "eval_sets", "assignment", "algorithm", "budget", "backend", "hash"):
            assert key in manifest
    frame = pd.read_parquet(out / "demo" / "k4" / "0" / "schedule.parquet")
    assert list(frame.columns) == ["step", "task_id", "harness", "anchor", "slot"]
    assert frame.step.max() == 7 and sorted(frame.slot.unique()) == [0, 1, 2, 3]
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    code, stdout, _ = run_cli(["plan", str(path), "--out", str(out)], capsys)
    assert code == 0 and "10 unchanged" in stdout
    assert before == {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}


def test_a_changed_spec_is_refused_without_force(tmp_path, capsys):
    path = tmp_path / "exp.yaml"
    out = tmp_path / "runs"
    path.write_text(yaml.safe_dump(small()))
    assert run_cli(["plan", str(path), "--out", str(out)], capsys)[0] == 0
    path.write_text(yaml.safe_dump(small(steps=12)))
    code, _, stderr = run_cli(["plan", str(path), "--out", str(out)], capsys)
    assert code == 2 and "--force" in stderr
    code, stdout, _ = run_cli(["plan", str(path), "--out", str(out), "--force"], capsys)
    assert code == 0 and "9 replaced" in stdout


def test_manifest_hash_is_the_same_across_python_runs(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(small()))
    code = ("import sys; from hscale.train.spec import load_spec; "
            "from hscale.train.planning._manifest import *; "
            "s = load_spec(sys.argv[1]); sp = space_of(s); e = eval_sets(s, sp); "
            "a = s.resolved_arms(); "
            "print(build_manifest(s, 'random-18', a['random-18'], 0, sp, e).hash)")
    hashes = {subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                             text=True, env={"PYTHONHASHSEED": seed, "PATH": ""},
                             check=True).stdout for seed in ("1", "2")}
    assert len(hashes) == 1


# (the GPU smoke spec names a model folder its script builds first: test_gpu_smoke.py)
@pytest.mark.parametrize("path", sorted(p for p in DEMO.parent.rglob("*.yaml")
                                        if "gpu-smoke" not in p.parts), ids=lambda p: p.stem)
def test_every_shipped_experiment_validates(path, capsys):
    code, stdout, _ = run_cli(["validate", str(path)], capsys)
    assert code == 0 and "arms" in stdout


PAPER = DEMO.parent / "paper"


def test_harness_s_plans_rescue_arms_with_pool_router_and_group(tmp_path, capsys):
    from hscale.design import structured
    from hscale.harness import factor_space

    out = tmp_path / "runs"
    code, stdout, _ = run_cli(["plan", str(PAPER / "harness-s-4b.yaml"), "--out", str(out)],
                              capsys)
    assert code == 0 and "18 written" in stdout  # 5 arms x 3 seeds, and the base model's
    space = factor_space()
    base = space.label(space.base)
    oa18 = structured(space).labels
    routers = {"rescue-original": "original", "rescue-random": "random",
               "rescue-rule": "rule", "harness-s": "profile"}
    for arm, router in routers.items():
        manifest = json.loads((out / "harness-s-4b" / arm / "0" / "manifest.json").read_text())
        a = manifest["assignment"]
        assert manifest["train_harnesses"] == [base]
        assert (a["mode"], a["router"], a["group"], a["k"]) == ("rescue", router, 8, 1)
        # the frozen sibling pool: the structured OA-18 training set without the base harness
        assert a["pool"] == [label for label in oa18 if label != base] and len(a["pool"]) == 17
        assert not set(a["pool"]) & set(manifest["eval_sets"]["in_space"])
        frame = pd.read_parquet(out / "harness-s-4b" / arm / "0" / "schedule.parquet")
        assert len(frame) == 40 * 16 and set(frame.harness) == set(frame.anchor) == {base}
    grpo = json.loads((out / "harness-s-4b" / "grpo" / "0" / "manifest.json").read_text())
    assert grpo["assignment"]["mode"] == "repeat" and grpo["assignment"]["pool"] is None


def rescue_spec(**assignment):
    spec = small(arms={"rescue": {"train": "single",
                                  "assignment": {"mode": "rescue", "k": 1, "router": "rule",
                                                 **assignment}}})
    return spec


def test_a_given_pool_is_kept_in_canonical_order(tmp_path, capsys):
    path = tmp_path / "exp.yaml"
    pool = ["S2-T2-O2-C2-W2", "S1-T0-O0-C0-W0"]
    path.write_text(yaml.safe_dump(rescue_spec(pool=pool, group=2)))
    code, _, err = run_cli(["plan", str(path), "--out", str(tmp_path / "runs")], capsys)
    assert code == 0, err
    manifest = json.loads(next((tmp_path / "runs").rglob("rescue/0/manifest.json")).read_text())
    assert manifest["assignment"]["pool"] == pool and manifest["assignment"]["group"] == 2


@pytest.mark.parametrize("change, needle", [
    ({"pool": ["S0-T0-O0-C0-W0", "S1-T0-O0-C0-W0"]}, "base harness"),
    ({"pool": ["S1-T0-O0-C0-W0", "S1-T0-O0-C0-W0"]}, "twice"),
    ({"pool": ["S7-T0-O0-C0-W0"]}, "pool: label"),
    ({"train": "structured"}, "trains under the base harness"),
])
def test_bad_rescue_arms_are_one_line_and_plan_nothing(tmp_path, capsys, change, needle):
    spec = rescue_spec(**{k: v for k, v in change.items() if k != "train"})
    if "train" in change:
        spec["arms"]["rescue"]["train"] = change["train"]
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(spec))
    out = tmp_path / "runs"
    code, _, err = run_cli(["plan", str(path), "--out", str(out)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and needle in lines[0] and "hint" in lines[0], err
    assert not out.exists()


def test_a_pool_holding_held_out_eval_harnesses_is_refused(tmp_path, capsys):
    from hscale.train.planning import space_of

    # internal: tests the manifest's eval-set helper
    from hscale.train.planning._manifest import eval_sets
    from hscale.train.spec import ExperimentSpec

    spec = rescue_spec()
    held_out = eval_sets(ExperimentSpec.model_validate(spec), space_of(
        ExperimentSpec.model_validate(spec)))["in_space"]
    spec["arms"]["rescue"]["assignment"]["pool"] = held_out[:3]
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, _, err = run_cli(["plan", str(path), "--out", str(tmp_path / "runs")], capsys)
    assert code == 2 and "held-out eval harnesses" in err


@pytest.mark.parametrize("name, text, words", [
    ("non-utf8", b"name: \xff\xfe\n", ["not UTF-8"]),
    ("deep", "a: " + "[" * 2000 + "]" * 2000, ["nested"]),
    ("self-anchor", "name: x\narms: &a {x: *a}\n", ["refers to itself"]),
    ("duplicate-key", "name: x\nname: y\narms: {a: {}}\n", [":2:", "duplicate key"]),
    ("negative-seed", {"seeds": [-1]}, ["seeds.0"]),
    ("huge-seed", {"seeds": [2**64]}, ["seeds.0"]),
    ("same-seed", {"seeds": [0, 0]}, ["listed twice"]),
    ("inf-lr", {"algorithm": {"name": "grpo", "lr": float("inf")}}, ["algorithm.lr"]),
    ("huge-steps", {"steps": 10**9}, ["steps"]),
    ("huge-tasks", {"benchmark": {"name": "builtin", "tasks": 10**9, "seed": 0}},
     ["benchmark.tasks"]),
    ("huge-schedule", {"steps": 90_000, "algorithm": {"name": "grpo", "tasks_per_step": 4000}},
     ["scheduled rows"]),
    ("traversing-arm", {"arms": {"../../../x": {}}}, ["not a folder name"]),
    ("absolute-arm", {"arms": {"/tmp/x": {}}}, ["not a folder name"]),
    ("dot-arm", {"arms": {".": {}}}, ["not a folder name"]),
    ("reserved-arm", {"arms": {"report": {}}}, ["report"]),
    ("nul-arm", {"arms": {"a\x00b": {}}}, ["not a folder name"]),
    ("unknown-oos", {"evaluation": {"out_of_space": ["oos/shel"]}}, ["oos/shel", "did you mean"]),
    ("every-past-steps", {"steps": 8, "evaluation": {"every": 9}}, ["every"]),
])
def test_the_testers_bad_specs_are_refused_by_validate_and_plan(tmp_path, capsys, name, text,
                                                               words):
    path = tmp_path / "spec.yaml"
    if isinstance(text, dict):
        path.write_text(yaml.safe_dump(small(**text), allow_unicode=True))
    else:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    out = tmp_path / "runs"
    for args in (["validate", str(path)], ["plan", str(path), "--out", str(out)]):
        code, _, err = run_cli(args, capsys)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (name, err)
        assert "Traceback" not in err and all(w in lines[0] for w in words), (name, lines[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]  # nothing written


def test_ctrl_c_says_interrupted(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("hscale.train.running.run_experiment", interrupted)  # as the CLI reads it
    code, _, err = run_cli(["run", str(DEMO), "--quick"], capsys)
    assert code == 130 and err.strip() == "interrupted"


def test_the_base_model_run_can_be_left_out_and_its_name_is_reserved(tmp_path, capsys):
    path = tmp_path / "exp.yaml"
    spec = small(seeds=[0, 1])
    spec["evaluation"] = {**spec.get("evaluation", {}), "base_model": False}
    path.write_text(yaml.safe_dump(spec))
    code, stdout, err = run_cli(["plan", str(path), "--out", str(tmp_path / "runs")], capsys)
    assert code == 0 and "18 written" in stdout, err
    assert not (tmp_path / "runs" / "demo" / "base-model").exists()
    spec = small(arms={"base-model": {}})
    path.write_text(yaml.safe_dump(spec))
    code, _, err = run_cli(["plan", str(path), "--out", str(tmp_path / "other")], capsys)
    assert code == 2 and "'base-model' is reserved" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "other").exists()
