"""The statistics checked like code: planted studies with known training-seed and task
variance go through the report's own comparison, and its intervals cover the truth, its tests
hold their level, and it detects true effects as often as `hscale power` predicts."""

from __future__ import annotations

import pytest

from hscale.analysis._calibration import calibrate, planted
from hscale.analysis._components import StudySize
from hscale.analysis._power import design_se, mde

# a seed effect of about 14 pp per arm, tasks and harnesses that interact with the arm
SEEDY = {"seed": 0.04, "task": 0.01, "harness": 0.002, "seed_task": 0.01, "run": 0.001,
         "residual": 0.36}
CALM = {**SEEDY, "seed": 0.0}


def test_three_seeds_hold_the_level_where_a_task_only_test_would_not():
    """The quick version of the slow check below: with three seeds per arm and a large seed
    effect, a true null is rejected at most at the nominal rate."""
    found = calibrate(SEEDY, StudySize(3, 20, 6, 2), effects=(0.0,), n=120, seed=7).iloc[0]
    assert found["rejected"] <= 0.09, found.to_dict()
    assert found["coverage"] >= 0.91, found.to_dict()


def test_planted_rows_have_the_contract_shape_and_the_planted_effect():
    design = StudySize(4, 10, 3, 2)
    rows = planted({**CALM, "task": 0.0, "harness": 0.0, "seed_task": 0.0}, design,
                   effect=[0.2, 0.0], rng=1)
    assert set(rows["method"].astype(str)) == {"reference", "arm1", "arm2"}
    assert len(rows) == 3 * 4 * 2 * 3 * 10
    means = rows.groupby("method", observed=True)["success"].mean()
    assert means["arm1"] - means["reference"] == pytest.approx(0.2, abs=0.06)
    assert means["arm2"] - means["reference"] == pytest.approx(0.0, abs=0.06)


@pytest.mark.slow
@pytest.mark.parametrize("components, seeds, arms", [
    (SEEDY, 3, 2), (SEEDY, 5, 2), (CALM, 3, 2), (SEEDY, 3, 4)])
def test_coverage_and_type_one_error_at_their_nominal_level(components, seeds, arms):
    """Over 400 planted null studies: the simultaneous 95% intervals hold the truth at least
    95% of the time (allowing for simulation error), and the family's tests reject a true
    null at most 5% of the time."""
    found = calibrate(components, StudySize(seeds, 20, 6, 2, arms=arms), effects=(0.0,),
                      n=400, seed=seeds * 10 + arms).iloc[0]
    assert found["coverage"] >= 0.93, found.to_dict()
    assert found["any_rejected"] <= 0.07, found.to_dict()


MODERATE = {"seed": 0.01, "task": 0.005, "harness": 0.001, "seed_task": 0.005, "run": 0.001,
            "residual": 0.4}


@pytest.mark.slow
def test_observed_power_is_the_power_hscale_power_predicts():
    """At the effects `hscale power` says are detected 40% and 80% of the time, the share
    of planted studies the report resolves is that (the noncentral t of the same model)."""
    design = StudySize(5, 20, 6, 2)
    se, df, spread = design_se(MODERATE, design)
    effects = [100 * mde(se, df=df, power=p, spread_df=spread) for p in (0.4, 0.8)]
    found = calibrate(MODERATE, design, effects=effects, n=300, seed=3)
    for row in found.itertuples():
        assert abs(row.rejected - row.power_predicted) <= 0.08, row
