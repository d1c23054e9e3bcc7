"""A study's confirmatory hypotheses: declared in the spec (study.json), tested by a fixed
sequence or Holm at family-wise alpha, or in stages with O'Brien-Fleming-type boundaries;
planted studies whose truth is known, the spec's checks, and `hscale run` growing a staged
study look by look."""

from __future__ import annotations

import math

import pytest
import yaml

from hscale.analysis import judge_hypotheses, open_arms, plant, spending_levels

# internal: tests the planted-effect simulator's pieces
from hscale.analysis._planted import Arm, Study
from hscale.contracts import HypothesisRecord, StudyRecord
from tests.cli import assert_user_error, hscale

H_IN = HypothesisRecord(arm="better", than="ref", setting="in_space")
H_NULL = HypothesisRecord(arm="same", than="ref", setting="in_space")
H_LAST = HypothesisRecord(arm="better", than="ref", setting="in_space", direction="differs")


def _study(seeds: int = 4, effect: float = 20.0) -> Study:
    return Study((Arm("ref", seeds=seeds, run_sd=3.0), Arm("better", effect=effect,
                                                            seeds=seeds, run_sd=3.0),
                  Arm("same", seeds=seeds, run_sd=3.0)), task_sd=8.0)


def _record(tests, procedure="fixed-sequence", stages=None, seeds=4) -> StudyRecord:
    return StudyRecord(hypotheses=list(tests), procedure=procedure, stages=stages,
                       seeds={a: list(range(seeds)) for a in ("ref", "better", "same")})


def test_a_fixed_sequence_stops_at_the_first_not_confirmed():
    episodes = plant(_study(), 1)
    found = judge_hypotheses(episodes, _record([H_IN, H_NULL, H_LAST]))
    assert [o.verdict for o in found] == ["confirmed", "not confirmed", "not tested"]
    assert found[0].bound > 0 and found[0].p < 0.05 and found[0].level == 0.05
    assert "earlier hypothesis" in found[2].why
    assert "H1 (better above ref, in-space): better - ref = +" in found[0].sentence


def test_holm_tests_them_together():
    episodes = plant(_study(), 1)
    found = judge_hypotheses(episodes, _record([H_NULL, H_IN], procedure="holm"))
    assert [o.verdict for o in found] == ["not confirmed", "confirmed"]
    assert found[1].level == pytest.approx(0.025)  # the smallest p faces alpha / 2


def test_spending_levels_are_the_published_obrien_fleming_type_values():
    one_sided = spending_levels((1 / 3, 2 / 3, 1.0), 0.025)
    assert one_sided == pytest.approx((0.0001, 0.0060, 0.0231), abs=0.0003)
    two = spending_levels((0.5, 1.0), 0.05, two_sided=True)
    assert two == pytest.approx((0.0052, 0.0480), abs=0.001)


def test_a_staged_study_confirms_early_and_stops_growing_the_arm():
    record = _record([H_IN], stages=[2, 4])
    early = plant(Study(tuple(Arm(a.name, a.effect, 2, a.run_sd) for a in _study().arms),
                        task_sd=8.0), 2)
    found = judge_hypotheses(early, record)
    assert found[0].look == 1 and found[0].looks == 2
    if found[0].verdict == "confirmed":  # a 20 pp gain on two calm seeds a side
        assert open_arms(found) == []
    weak = plant(Study(tuple(Arm(a.name, 0.0, 2, 8.0) for a in _study().arms)), 3)
    found = judge_hypotheses(weak, record)
    assert found[0].verdict == "open" and "look 1 of 2" in found[0].why
    assert open_arms(found) == ["better", "ref"]


def test_a_staged_null_study_keeps_its_level():
    """100 planted null studies of two looks (2 then 4 seeds): at most alpha confirmed."""
    record = _record([HypothesisRecord(arm="same", than="ref")], stages=[2, 4])
    study = Study((Arm("ref", seeds=4), Arm("same", seeds=4), Arm("better", seeds=4)))
    confirmed = sum(judge_hypotheses(plant(study, [9, i]), record)[0].verdict == "confirmed"
                    for i in range(100))
    assert confirmed <= 11  # the 99% binomial bound of 5% in 100


SPEC = {"name": "h", "model": "hscale-tiny", "steps": 2, "seeds": [0, 1],
        "benchmark": {"name": "builtin", "tasks": 12, "seed": 0},
        "evaluation": {"in_space": 18, "out_of_space": ["oos/shell"], "tasks": 4,
                       "episodes": 18, "runs": 1},
        "arms": {"single": {"train": "single", "assignment": {"mode": "repeat", "k": 1}},
                 "structured": {"train": {"recipe": "structured", "runs": 18},
                                "assignment": {"mode": "repeat", "k": 1}}}}


@pytest.mark.parametrize("hypotheses, says", [
    ([{"arm": "strctured", "than": "single"}], "did you mean 'structured'?"),
    ([{"arm": "structured", "than": "structured"}], "compared with itself"),
    ({"stages": [2, 3], "tests": [{"arm": "structured", "than": "single"}]},
     "has 2 seeds; the last look needs 3"),
    ({"stages": [3, 2], "tests": [{"arm": "structured", "than": "single"}]},
     "must increase"),
    ({"procedure": "holm", "stages": [2, 3],
      "tests": [{"arm": "structured", "than": "single"}]}, "fixed sequence"),
])
def test_bad_hypotheses_are_one_line_naming_the_key(tmp_path, hypotheses, says):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({**SPEC, "hypotheses": hypotheses}))
    assert_user_error(hscale("validate", path), says, "hypotheses")


def test_hscale_run_grows_a_staged_study_look_by_look(tmp_path):
    spec = {**SPEC, "backend": "scripted", "reference": "structured",
            "hypotheses": {"stages": [2, 3], "tests": [
                {"arm": "structured", "than": "single", "setting": "in_space"}]},
            "arms": {name: {**body, "seeds": [0, 1, 2]}
                     for name, body in SPEC["arms"].items()}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    done = hscale("run", path, "--out", tmp_path / "runs")
    assert done.returncode == 0, done.stderr
    assert "look 1 of 2: H1" in done.stdout + done.stderr
    study = yaml.safe_load((tmp_path / "runs" / "h" / "study.json").read_text())
    assert study["stages"] == [2, 3] and study["reference"] == "structured"
    assert study["seeds"]["structured"] == [0, 1, 2] and study["declared"]
    seeds = {p.name for p in (tmp_path / "runs" / "h" / "single").iterdir()}
    said = done.stdout + done.stderr
    assert seeds == ({"0", "1"} if "stops early" in said else {"0", "1", "2"})
    report = hscale("report", tmp_path / "runs" / "h", "--n-boot", "100")
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("Confirmatory (h: 1 hypotheses declared in the spec")
    import pandas as pd

    table = pd.read_csv(tmp_path / "runs" / "h" / "report" / "hypotheses.csv")
    assert table["hypothesis"].tolist() == ["H1"] and table["looks"].tolist() == [2]
    assert table["verdict"].iloc[0] in ("confirmed", "not confirmed")
    assert math.isfinite(table["diff"].iloc[0])
