"""Tables of the harness components' effects and of success against distance to training."""

from __future__ import annotations

import pandas as pd

from analysis.effects import logit_effects, main_effects, success_by_distance
from analysis.load import Results
from analysis.naming import method_key
from analysis.render import Table, fmt, fmt_p
from analysis.stats import GROUP

KEYS = [*GROUP, "method"]


def _sorted(frame: pd.DataFrame, *extra: str) -> pd.DataFrame:
    key = frame["method"].map(method_key)
    return frame.assign(_k=key).sort_values([*GROUP[:1], "_k", *extra], kind="stable").drop(
        columns="_k").reset_index(drop=True)


def effects_table(results: Results, n_boot: int = 2000, seed: int = 0) -> Table:
    """Level effects (pp against the arm's in-space mean) per arm: rows factor x level."""
    data = main_effects(results.episodes, KEYS, n_boot=n_boot, seed=seed)
    if data.empty:
        return Table("effects", "Component main effects", pd.DataFrame(), data,
                     ["No in-space configuration harnesses were evaluated."])
    data = _sorted(data, "factor", "level")
    data["text"] = [f"{fmt(e, signed=True)} [{lo - m + e:+.1f}, {hi - m + e:+.1f}]"
                    for e, m, lo, hi in zip(data["effect"], data["mean"], data["lo"],
                                            data["hi"], strict=True)]
    frame = data.pivot_table(index=["factor", "level"], columns="method", values="text",
                             aggfunc="first", sort=False).reset_index().rename_axis(columns=None)
    note = ("Marginal in-space Pass@1 of each level minus the arm's in-space mean, in percentage "
            "points, with 95% cluster-bootstrap intervals over tasks; the eval set is an "
            "orthogonal array, so levels are balanced against every other component.")
    return Table("effects", "Component main effects (pp)", frame, data, [note])


def tests_table(results: Results) -> Table:
    """Wald tests of main effects and two-factor interactions (logistic regression)."""
    _, tests = logit_effects(results.episodes, KEYS)
    if tests.empty:
        return Table("component_tests", "Component tests", pd.DataFrame(), tests,
                     ["No in-space configuration harnesses were evaluated."])
    tests = _sorted(tests)
    frame = pd.DataFrame({"method": tests["method"], "term": tests["term"],
                          "df": tests["df"], "chi²": tests["chi2"].map(
                              lambda v: "—" if pd.isna(v) else f"{v:.2f}"),
                          "p": tests["p"].map(fmt_p), "p (Holm)": tests["p_holm"].map(fmt_p),
                          "covariance": tests["cov"], "note": tests["note"]})
    note = ("Logistic regression of in-space success on the components (effect coding). "
            "Two-factor interactions are fitted jointly when the eval design separates them "
            "all; otherwise (an 18-run array) each pair alone beside the main effects, where "
            "pairs are partially aliased with one another: a small p says where to look, not "
            "which pair it is. Covariance: cluster-robust over tasks with >= 20 tasks, "
            "otherwise quasi-binomial. Holm adjusts each arm's tests together.")
    return Table("component_tests", "Component main effects and interactions: Wald tests",
                 frame, tests, [note])


def distance_table(results: Results, n_boot: int = 2000, seed: int = 0) -> Table:
    """Pass@1 by Hamming distance to the arm's nearest training configuration."""
    data = success_by_distance(results.episodes, results.train_sets(), n_boot=n_boot, seed=seed)
    if data.empty:
        return Table("distance", "Success against distance to training", pd.DataFrame(), data,
                     ["No evaluated configuration with a known training set."])
    data = _sorted(data, "distance")
    data["text"] = [f"{m:.1f} [{lo:.1f}, {hi:.1f}] ({h})" for m, lo, hi, h in
                    zip(data["mean"], data["lo"], data["hi"], data["harnesses"], strict=True)]
    frame = data.pivot_table(index="method", columns="distance", values="text",
                             aggfunc="first", sort=False)
    frame.columns = [f"d = {c}" for c in frame.columns]
    frame = frame[sorted(frame.columns)].reset_index().fillna("—")
    note = ("Pass@1 (%) of base and in-space harnesses grouped by Hamming distance to the "
            "nearest training configuration of the arm, 95% intervals over tasks; in "
            "parentheses the number of harnesses at that distance.")
    return Table("distance", "Success against distance to training", frame, data, [note])
