"""The report's comparisons on planted studies of every shape a user's data takes
(hscale.analysis._planted): unequal seeds (every run used), an arm whose runs diverge (judged
by its own spread), per-run harness effects, arms that interact with harnesses, heavy-tailed
runs, two settings of the same runs. Each null kind keeps its family's false resolutions near
5% and covers the truth; the intervals are no wider than Welch's on run means needs; the
max-t family is Dunnett's where Dunnett's applies. benchmarks/calibration.py runs the same
checks at 1,000 studies a kind."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hscale.analysis import check, compare_arms, plant

# internal: tests each multiplicity procedure alone
from hscale.analysis._families import fixed_sequence, holm_rejects, max_t

# internal: tests the planted-effect simulator's pieces
from hscale.analysis._planted import Arm, Study, binomial_interval, scenarios


def test_every_run_counts_whatever_the_seed_labels():
    """3 seeds in the reference and 5 in the other arm: all 8 runs, not the 3 pairs."""
    study = Study((Arm("ref", seeds=3), Arm("more", effect=5.0, seeds=5)))
    episodes = plant(study, 3)
    row = compare_arms(episodes, "ref").iloc[0]
    means = episodes.groupby(["method", "seed"], observed=True)["success"].mean() * 100
    assert row["seeds"] == 5 and row["seeds_ref"] == 3
    assert row["diff"] == pytest.approx(means["more"].mean() - means["ref"].mean())


def test_an_arm_whose_runs_diverge_is_judged_by_its_own_spread():
    study = scenarios()["unequal stability"]
    found = compare_arms(plant(study, 1), study.reference).set_index("method")
    steady = found.drop(index="unstable")
    assert (found.loc["unstable", "se"] > 1.8 * steady["se"]).all()
    assert found.loc["unstable", "var_run"] > 10 * steady["var_run"].median()
    assert (found["var_run_ref"] == found["var_run_ref"].iloc[0]).all()  # one reference


def test_one_seed_arm_borrows_the_pooled_run_variance_and_says_so():
    study = Study((Arm("ref", seeds=3), Arm("lone", seeds=1), Arm("other", seeds=3)))
    found = compare_arms(plant(study, 2), "ref").set_index("method")
    assert "lone has one seed" in found.loc["lone", "note"]
    assert np.isfinite(found.loc["lone", "se"]) and found.loc["lone", "seeds"] == 1


def test_an_unstable_arm_among_steady_ones_keeps_the_level():
    """The quick check of the kind a pooled variance fails (12.5% false resolutions there):
    60 studies, fixed seeds; benchmarks/calibration.py runs every kind at 1,000."""
    found = check(scenarios()["unequal stability"], n=60, seed=11)
    assert found["false_any"] <= binomial_interval(0.05, 60, 0.99)[1], found
    assert found["cover_all"] >= binomial_interval(0.95, 60, 0.99)[0], found
    assert found["width_ratio"] <= 1.12, found  # at most about Welch's on run means


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(scenarios()))
def test_each_kind_of_null_study_keeps_its_level_and_covers(kind):
    """150 studies a kind: false resolutions of a family and coverage of its simultaneous
    intervals within binomial error of 5% and 95%, widths about Welch's."""
    found = check(scenarios()[kind], n=150, seed=5)
    assert found["false_any"] <= binomial_interval(0.05, 150, 0.99)[1], found
    assert found["cover_all"] >= binomial_interval(0.95, 150, 0.99)[0], found
    assert found["width_ratio"] <= 1.12, found


def test_component_tests_keep_their_level_when_each_run_learns_its_own_harness_effects():
    """A per-run null (each training run its own harness effects, sd 8 pp, none on
    average): the task-clustered tests this replaced rejected 37% of main effects here.
    60 studies of 3 arms x 3 seeds on the 18 held-out harnesses (benchmarks/calibration.py:
    5.4% of 3,000 at 200 studies)."""
    from hscale.analysis import component_effects

    # internal: uses the synthetic runs' default eval sets
    from hscale.analysis._synthetic import default_eval_sets

    labels = tuple(default_eval_sets()["in_space"])
    study = Study(tuple(Arm(f"a{j}", run_harness_sd=8.0) for j in range(3)), labels=labels,
                  harness_sd=0.0)
    rejected, total = 0, 0
    for i in range(60):
        _, tests = component_effects(plant(study, [7, i]))
        assert (tests["F"].dropna() >= 0).all()
        main = tests[tests["kind"] == "main"].dropna(subset=["p"])
        rejected += int((main["p"] < 0.05).sum())
        total += len(main)
    assert total == 60 * 3 * 5
    assert rejected / total <= binomial_interval(0.05, total, 0.99)[1], rejected / total


def test_a_true_difference_is_resolved():
    study = Study((Arm("ref", run_sd=3.0, seeds=5), Arm("better", effect=15.0, run_sd=3.0,
                                                        seeds=5)), task_sd=8.0)
    found = check(study, n=20, seed=1)
    assert found["power"] >= 0.8


def test_max_t_is_the_t_test_for_one_and_beats_bonferroni_for_many():
    from scipy.stats import t

    crit, p = max_t(np.array([[4.0]]), np.array([6.0]), np.array([2.0]))
    assert crit[0] == pytest.approx(t.ppf(0.975, 6)) and p[0] == pytest.approx(2 * t.sf(2, 6))
    k = 8
    cov = np.full((k, k), 1.0) + np.eye(k)  # a shared reference: correlation 1/2
    crit, p = max_t(cov, np.full(k, 20.0), np.zeros(k))
    bonferroni = t.ppf(1 - 0.05 / (2 * k), 20)
    assert t.ppf(0.975, 20) < crit[0] < bonferroni
    assert (p >= 0).all()


def test_max_t_is_dunnetts_where_dunnetts_applies():
    """Equal variances, equal groups, one pooled variance: the many-to-one critical value
    is scipy.stats.dunnett's (its p-value of a statistic at our critical value is 5%)."""
    from scipy.stats import dunnett

    gen = np.random.default_rng(0)
    n, k = 12, 4
    groups = [gen.normal(0, 1, n) for _ in range(k)]
    control = gen.normal(0, 1, n)
    found = dunnett(*groups, control=control)
    df = (k + 1) * (n - 1)
    cov = (np.eye(k) + 1.0) / n
    crit, p_adj = max_t(cov, np.full(k, float(df)), found.statistic)
    assert p_adj == pytest.approx(found.pvalue, abs=0.004)


def test_two_settings_of_the_same_runs_are_one_family_and_correlated():
    study = Study(tuple(Arm(f"a{j}", run_sd=8.0) for j in range(4)), out_of_space=True,
                  out_corr=0.95)
    found = compare_arms(plant(study, 4), "a0", ("in_space", "out_of_space"))
    assert (found["m"] == 6).all() and set(found["setting"]) == {"in_space", "out_of_space"}
    # correlated members: a smaller critical value than six independent ones would have
    from scipy.stats import t

    independent = t.ppf(1 - (1 - 0.95 ** (1 / 6)) / 2, found["df"].min())
    assert found["crit"].max() < independent + 0.5


def test_fixed_sequence_and_holm():
    assert fixed_sequence([0.01, 0.2, 0.001]) == [True, False, False]
    assert holm_rejects([0.01, 0.2, 0.001]) == [True, False, True]
    assert holm_rejects([0.03, 0.04]) == [False, False]
    assert not any(fixed_sequence([math.nan, 0.001]))
