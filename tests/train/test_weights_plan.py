"""Weighted distances in specs and manifests: without weights, or with equal ones, planning
gives today's manifests and schedules byte for byte; unequal weights and adaptive K are
declared in the spec, recorded in the manifest and used by its schedule; bad ones are one
line naming the file and the line."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from hscale.cli import main
from hscale.contracts import MANIFEST, SCHEDULE, Manifest
from hscale.train.planning import Schedule, factor_space, plan

# Regenerate only when a change to the manifests is intended: plan GOLDEN's spec and record
# each run's sha256 of manifest.json and of its schedule rows as CSV.
GOLDEN = json.loads((Path(__file__).with_name("golden") / "unweighted_plan.json").read_text())


def planned(root: Path, **changes) -> Path:
    spec = copy.deepcopy(GOLDEN["spec"])
    spec.update(changes)
    root.mkdir(parents=True, exist_ok=True)
    path = root / "exp.yaml"
    path.write_text(yaml.safe_dump(spec))
    plan(path, root / "runs")
    return root / "runs" / spec["name"]


def digest(run: Path) -> dict[str, str]:
    rows = pd.read_parquet(run / SCHEDULE).to_csv(index=False).encode()
    return {"manifest_sha256": hashlib.sha256((run / MANIFEST).read_bytes()).hexdigest(),
            "hash": json.loads((run / MANIFEST).read_text())["hash"],
            "schedule_rows_sha256": hashlib.sha256(rows).hexdigest()}


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    return planned(tmp_path_factory.mktemp("plain"))


def test_a_spec_without_weights_plans_the_runs_it_always_planned(plain):
    for run, expected in GOLDEN["runs"].items():
        assert digest(plain / run) == expected, run


@pytest.mark.parametrize("weights", [
    {"S": 3.0, "T": 3.0, "O": 3.0, "C": 3.0, "W": 3.0},  # all equal, not 1
    {"context": 1.0, "workflow": 1},  # named by component, the others 1 too
    {},
], ids=["all-3", "components-1", "empty"])
def test_equal_weights_plan_byte_identical_manifests_and_schedules(plain, tmp_path, weights):
    equal = planned(tmp_path, weights=weights)
    for run in GOLDEN["runs"]:
        for name in (MANIFEST, SCHEDULE):
            assert (equal / run / name).read_bytes() == (plain / run / name).read_bytes(), \
                f"{run}/{name}"
        assert digest(equal / run) == GOLDEN["runs"][run]


@pytest.fixture(scope="module")
def weighted(tmp_path_factory) -> Path:
    arms = {"structured-18": {}, "random-18": {"train": {"recipe": "random", "n": 18}},
            "adaptive": {"train": {"recipe": "random", "n": 18},
                         "assignment": {"k": 4, "radius": 1.5}}}
    return planned(tmp_path_factory.mktemp("weighted"), weights={"context": 2.0, "S": 0.5},
                   arms=arms)


def test_weights_and_radius_are_recorded_in_the_manifest_only_when_set(weighted, plain):
    manifest = json.loads((weighted / "adaptive" / "0" / MANIFEST).read_text())
    weights = manifest["space"]["weights"]
    assert list(weights) == ["S", "T", "O", "C", "W"]
    assert [weights[f] for f in "STOCW"] == pytest.approx([0.5 / 1.1, 1 / 1.1, 1 / 1.1,
                                                           2 / 1.1, 1 / 1.1])
    assert manifest["assignment"]["radius"] == 1.5
    other = json.loads((weighted / "structured-18" / "0" / MANIFEST).read_text())
    assert "radius" not in other["assignment"] and other["space"]["weights"] == weights
    assert "weights" not in json.loads((plain / "k4" / "0" / MANIFEST).read_text())["space"]
    read = Manifest.read(weighted / "adaptive" / "0")  # the hash covers the new fields
    assert read.space.weight_vector() == pytest.approx([weights[f] for f in "STOCW"])
    assert read.assignment.radius == 1.5
    tampered = {**manifest, "space": {**manifest["space"], "weights": {**weights, "C": 9.0}}}
    (weighted / "tampered.json").write_text(json.dumps(tampered))
    with pytest.raises(Exception, match="hash does not match"):
        Manifest.read(weighted / "tampered.json")


def test_the_schedule_follows_the_manifests_weights_and_radius(weighted, plain):
    for arm in ("structured-18", "adaptive"):
        run = weighted / arm / "0"
        written = Schedule.read(run).frame
        pd.testing.assert_frame_equal(written, Schedule.for_manifest(Manifest.read(run)).frame)
    weighted_frame = Schedule.read(weighted / "structured-18" / "0").frame
    assert not weighted_frame.equals(Schedule.read(plain / "structured-18" / "0").frame)
    adaptive = Schedule.read(weighted / "adaptive" / "0").frame
    k_x = adaptive.assign(batch=adaptive.step // 4).groupby(["batch", "task_id"]).harness \
        .nunique()
    assert k_x.max() <= 4 and k_x.min() >= 1 and set(adaptive.slot) == {0, 1, 2, 3}


def test_a_weighted_eval_set_is_still_held_out_and_balanced(weighted):
    manifest = Manifest.read(weighted / "structured-18" / "0")
    held_out = manifest.eval_sets["in_space"]
    assert len(held_out) == 18 and not set(held_out) & set(manifest.train_harnesses)
    configs = factor_space(manifest).parse_labels(list(held_out))
    assert all(sorted(pd.Series(configs[:, j]).value_counts()) == [6, 6, 6] for j in range(5))


def run_cli(args, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def test_validate_shows_the_weights_and_each_adaptive_arms_k(tmp_path, capsys):
    spec = copy.deepcopy(GOLDEN["spec"])
    spec.update(weights={"C": 2.0}, arms={"adaptive": {"assignment": {"k": 4, "radius": 3}},
                                          "plain": {}})
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, out, _ = run_cli(["validate", str(path)], capsys)
    assert code == 0
    assert "weights (normalised to mean 1): S 0.833, T 0.833, O 0.833, C 1.67, W 0.833" in out
    assert "adaptive within distance 3: K_x" in out
    assert "plain: train structured (18 configurations), assignment locality K=2\n" in out


BAD = [
    ({"weights": {"contxt": 2.0}}, "weights:\n  contxt", "did you mean 'context'"),
    ({"weights": {"Q": 2.0}}, "weights:\n  Q", "components: S (system_prompt)"),
    ({"weights": {"C": -1.0}}, "weights:\n  C", "-1.0 is not more than 0"),
    ({"weights": {"C": True}}, "weights:\n  C", "True is not a number"),
    ({"weights": {"C": ".inf"}}, "weights:\n  C", "finite number"),
    ({"weights": [1, 2, 3, 4, 5]}, "weights:", "is not a mapping"),
    ({"weights": {"C": 2.0, "context": 1.0}}, "weights:\n  C: 2.0\n  context", "twice"),
    ({"arms": {"a": {"assignment": {"mode": "repeat", "radius": 2}}}},
     "arms:\n  a:\n    assignment", "needs locality assignment, not repeat"),
    ({"arms": {"a": {"assignment": {"radius": 0}}}},
     "arms:\n  a:\n    assignment:\n      radius", "0 is not more than 0"),
    ({"arms": {"a": {"assignment": {"radious": 2}}}},
     "arms:\n  a:\n    assignment:\n      radious", "did you mean 'radius'"),
]


@pytest.mark.parametrize("change, before, needle", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_weights_and_radii_are_one_line_with_file_and_line(tmp_path, capsys, change, before,
                                                                needle):
    spec = copy.deepcopy(GOLDEN["spec"])
    spec.update(change)
    path = tmp_path / "exp.yaml"
    text = yaml.safe_dump(spec, default_flow_style=False).replace("'.inf'", ".inf")
    path.write_text(text)
    for command in ("validate", "plan"):
        code, out, err = run_cli([command, str(path), *(["--out", str(tmp_path / "runs")]
                                                        if command == "plan" else [])], capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert needle in err and "Traceback" not in err
        line = text[:text.index(before)].count("\n") + 1 + before.count("\n")
        assert f"{path}:{line}:" in err, (err, line)
    assert not (tmp_path / "runs").exists()
