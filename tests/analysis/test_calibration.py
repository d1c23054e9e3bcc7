"""Planted studies by variance components have the shape and effect planted, and the report
detects a planted difference as often as `hscale power` predicts (the same model: each arm's
run variance over its runs, Welch's degrees of freedom). The null calibration of every kind
of study is tests/analysis/test_planted.py's and benchmarks/calibration.py's."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hscale.analysis import StudySize, check, planted

# internal: tests the planted-effect simulator's pieces
from hscale.analysis._planted import Arm, Study, binomial_interval, effect_for_power, run_variance

CALM = {"seed": 0.0, "task": 0.0, "harness": 0.0, "seed_task": 0.0, "run": 0.001,
        "residual": 0.36}


def test_planted_rows_have_the_contract_shape_and_the_planted_effect():
    design = StudySize(4, 10, 3, 2)
    rows = planted(CALM, design, effect=[0.2, 0.0], rng=1)
    assert set(rows["method"].astype(str)) == {"reference", "arm1", "arm2"}
    assert len(rows) == 3 * 4 * 2 * 3 * 10
    means = rows.groupby("method", observed=True)["success"].mean()
    assert means["arm1"] - means["reference"] == pytest.approx(0.2, abs=0.06)
    assert means["arm2"] - means["reference"] == pytest.approx(0.0, abs=0.06)


@pytest.mark.slow
def test_observed_power_is_the_power_hscale_power_predicts():
    """At the effects hscale power says are detected 50% and 80% of the time, the share of
    planted studies the report resolves is that, within the binomial interval."""
    base = Study((Arm("ref", seeds=6, run_sd=6.0), Arm("other", seeds=6, run_sd=6.0)),
                 task_sd=10.0)
    var = run_variance(base)
    for target in (0.5, 0.8):
        effect = 100 * effect_for_power(var, {"ref": 6, "other": 6}, target)
        study = replace(base, arms=(base.arms[0], replace(base.arms[1], effect=effect)))
        found = check(study, n=150, seed=int(100 * target))
        low, high = binomial_interval(found["power"], 150, 0.99)
        assert low - 0.05 <= target <= high + 0.05, (target, found)
