"""Sweeps: arms over N and K declared in one line, expanded before planning, so validate,
plan and run all see them; what they sweep is read back from the manifests, not the names."""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import pytest
import yaml

from hscale.errors import HscaleWarning
from hscale.train.planning import plan_runs
from hscale.train.spec import ExperimentSpec, load_spec, quick

# internal: tests the sweep size limit
from hscale.train.spec._sweeps import MAX_SWEPT_ARMS
from tests.cli import Result, hscale

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "experiments" / "sweep.yaml"
BASE = yaml.safe_load(SWEEP.read_text())


def spec_with(**changes) -> dict:
    spec = copy.deepcopy(BASE)
    spec.update(steps=12, seeds=[0], benchmark={"name": "builtin", "tasks": 40, "seed": 0})
    spec.update(changes)
    return spec


def write(tmp_path: Path, spec: dict) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def validate(path: Path) -> Result:
    return hscale("validate", path, cwd=ROOT)


def planned(path: Path) -> dict[str, tuple[int, int, str]]:
    """arm -> (N, K, recipe-free description) from the manifests the plan would write (the
    base model's reference run aside: it trains nothing)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HscaleWarning)
        runs = plan_runs(path, path.parent / "runs")
    assert sum(r.manifest.arm == "base-model" for r in runs) == 1
    return {r.manifest.arm: (len(r.manifest.train_harnesses), r.manifest.assignment.k,
                             r.manifest.assignment.mode) for r in runs
            if r.manifest.arm != "base-model"}


def test_the_sweep_spec_plans_one_arm_per_recipe_and_size_and_per_k(tmp_path):
    path = write(tmp_path, spec_with(sweeps={
        "size": {"recipes": ["structured", "random"], "n": [9, 18, 27, 36]},
        "k": {"k": [1, 3, 4]}}))
    with pytest.warns(HscaleWarning, match=r"no structured-n9 arm: OA\(9; 3\^5\)"):
        load_spec(path)
    arms = planned(path)
    assert list(arms) == ["structured-n18", "structured-n27", "structured-n36", "random-n9",
                          "random-n18", "random-n27", "random-n36", "k1", "k3", "k4"]
    for name, (n, k, mode) in arms.items():
        if name.startswith(("structured-n", "random-n")):
            assert (n, k, mode) == (int(name.rsplit("-n", 1)[1]), 2, "locality"), name
        else:  # K arms train on the default set: structured, 18 runs
            assert (n, k) == (18, int(name[1:])), name


def test_explicit_and_swept_arms_coexist_and_share_the_defaults(tmp_path):
    path = write(tmp_path, spec_with(
        sweeps={"size": {"recipes": ["random"], "n": [27]}, "k": {"k": [4]}},
        arms={"single-harness": {"train": "single", "assignment": {"mode": "repeat", "k": 1}},
              "full-243": {"train": "full"}}))
    arms = planned(path)
    assert arms == {"single-harness": (1, 1, "repeat"), "full-243": (243, 2, "locality"),
                    "random-n27": (27, 2, "locality"), "k4": (18, 4, "locality")}
    spec = load_spec(path)
    assert spec.swept == {"random-n27": ("sweeps", "size"), "k4": ("sweeps", "k")}
    again = ExperimentSpec.model_validate(spec.model_dump())  # sweeps are consumed once
    assert again.arms == spec.arms and again.sweeps is None


def test_the_shipped_sweep_expands_and_its_quick_run_fits_every_k(tmp_path):
    with pytest.warns(HscaleWarning, match="no structured-n9 arm"):
        spec = load_spec(SWEEP)
    assert len(spec.arms) == 15 and "structured-n9" not in spec.arms
    assert {"structured-n81", "random-n9", "random-n81", "k1", "k6"} <= set(spec.arms)
    assert quick(spec).steps == 12  # lcm of K = 1, 2, 3, 4, 6: every schedule fits
    assert spec.steps % 12 == 0


@pytest.mark.parametrize("change, message", [
    ({"arms": {"k3": {}}, "sweeps": {"k": {"k": [3]}}},
     "exp.yaml:{k}: sweep arm 'k3' (sweeps.k) is also an explicit arm"),
    ({"arms": {"random-n27": {}}, "sweeps": {"size": {"recipes": ["random"], "n": [27]}}},
     "exp.yaml:{size}: sweep arm 'random-n27' (sweeps.size) is also an explicit arm"),
    ({"sweeps": {"size": {"n": list(range(18, 18 + 9 * 60, 9))}}},
     f"the sweeps make 120 arms, more than {MAX_SWEPT_ARMS}"),
    ({"sweeps": {"size": {"recipes": ["full"], "n": [18]}}}, "recipe 'full' takes no size"),
    ({"sweeps": {"size": {"recipes": ["structurd"], "n": [18]}}}, "did you mean 'structured'"),
    ({"sweeps": {"size": {"ns": [18]}}}, "unknown key 'sweeps.size.ns'"),
    ({"sweeps": {"k": {"k": [2, 2]}}}, "2 is listed twice"),
    ({"sweeps": {"k": {"k": [5]}}}, "arm k5: 12 steps do not split into groups of K=5"),
    ({"sweeps": None}, "an experiment needs at least one arm"),
])
def test_sweep_mistakes_are_one_line_errors(tmp_path, change, message):
    spec = spec_with(**change)
    if spec["sweeps"] is None:
        del spec["sweeps"]
    path = write(tmp_path, spec)
    lines = path.read_text().splitlines()
    start = next((i for i, text in enumerate(lines) if text.startswith("sweeps:")), len(lines))
    line = {key: next((i + 1 for i, text in enumerate(lines) if i > start
                       and text.strip().startswith(key)), None) for key in ("size:", "k:")}
    out = validate(path)
    assert out.returncode == 2, out.stdout + out.stderr
    errors = [e for e in out.stderr.strip().splitlines() if not e.startswith("warning:")]
    assert len(errors) == 1 and errors[0].startswith("error: "), out.stderr
    assert message.format(k=line.get("k:"), size=line.get("size:")) in errors[0], errors[0]
    assert "hint" in errors[0]
