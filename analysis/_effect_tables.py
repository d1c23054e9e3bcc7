"""Tables of the harness components' effects and of success against distance to training."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hscale.analysis._component_tests import component_effects
from hscale.analysis._effects import success_by_distance
from hscale.analysis._load import Results
from hscale.analysis._naming import method_key
from hscale.analysis._render import Table, fmt, fmt_p
from hscale.analysis._stats import GROUP

KEYS = [*GROUP, "method"]


def _sorted(frame: pd.DataFrame, *extra: str) -> pd.DataFrame:
    key = frame["method"].map(method_key)
    return frame.assign(_k=key).sort_values([*GROUP[:1], "_k", *extra], kind="stable").drop(
        columns="_k").reset_index(drop=True)


def effects_table(results: Results, n_boot: int = 2000, seed: int = 0) -> Table:
    """Level effects (pp against the arm's in-space mean) per arm: rows factor x level, with
    intervals over the arm's training runs (hscale.analysis._component_tests)."""
    data, _ = component_effects(results.episodes, KEYS)
    if data.empty:
        return Table("effects", "Component main effects", pd.DataFrame(), data,
                     ["No in-space configuration harnesses were evaluated."])
    data = _sorted(data, "factor", "level")
    data["text"] = [fmt(e, signed=True) if not np.isfinite(lo) else
                    f"{fmt(e, signed=True)} [{lo:+.1f}, {hi:+.1f}]"
                    for e, lo, hi in zip(data["effect"], data["lo"], data["hi"], strict=True)]
    frame = data.pivot_table(index=["factor", "level"], columns="method", values="text",
                             aggfunc="first", sort=False).reset_index().rename_axis(columns=None)
    note = ("Each level's in-space Pass@1 effect (pp; a factor's level effects sum to zero), "
            "from each training run's regression on the eval set's components, averaged "
            "over the arm's runs, with 95% intervals from how much the runs disagree (pooled "
            "over the arms); no interval with one seed an arm. The eval set is an orthogonal "
            "array: levels are balanced against every other component.")
    return Table("effects", "Component main effects (pp)", frame, data, [note])


def tests_table(results: Results) -> Table:
    """F tests of main effects and two-factor interactions, training runs as replicates."""
    _, tests = component_effects(results.episodes, KEYS)
    if tests.empty:
        return Table("component_tests", "Component tests", pd.DataFrame(), tests,
                     ["No in-space configuration harnesses were evaluated."])
    tests = _sorted(tests)
    frame = pd.DataFrame({"method": tests["method"], "term": tests["term"],
                          "df": [f"{a:.0f}, {b:.0f}" if np.isfinite(b) else f"{a:.0f}"
                                 for a, b in zip(tests["df1"], tests["df2"], strict=True)],
                          "F": tests["F"].map(lambda v: "—" if pd.isna(v) else f"{v:.2f}"),
                          "p": tests["p"].map(fmt_p), "p (Holm)": tests["p_holm"].map(fmt_p),
                          "runs": tests["runs"], "note": tests["note"]})
    note = ("Each training run's in-space Pass@1 per harness regressed on the components "
            "(effect coding, a linear probability model: no separation); a term's "
            "coefficients averaged over the arm's runs and tested against how much runs "
            "disagree (Hotelling's T^2 as an F, the covariance pooled over the arms). An "
            "interaction is tested beside the main effects where the eval set separates it; "
            "in an 18-run array the main effects are partially aliased with two-factor "
            "interactions (the note gives the largest alias). Holm adjusts each arm's tests "
            "together.")
    return Table("component_tests", "Component main effects and interactions: F tests "
                 "over training runs", frame, tests, [note])


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


def sensitivity_table(results: Results, n_boot: int = 2000, seed: int = 0) -> Table:
    """How much the harness alone moves each arm's success: the best and the worst harness
    it was evaluated under and the spread between them, with a cluster-bootstrap interval
    over tasks (best and worst re-chosen in every resample)."""
    rows, rng = [], np.random.default_rng(seed)
    for keys, group in results.episodes.groupby(KEYS, observed=True, sort=False):
        table = group.pivot_table(index="task_id", columns="harness", values="success",
                                  aggfunc="mean", observed=True)
        if table.shape[1] < 2:
            continue
        counts = group.pivot_table(index="task_id", columns="harness", values="success",
                                   aggfunc="size", observed=True).fillna(0).to_numpy()
        sums = table.fillna(0).to_numpy() * counts
        means = sums.sum(0) / np.maximum(counts.sum(0), 1)
        draws = rng.integers(0, len(table), size=(n_boot, len(table)))
        boot = sums[draws].sum(1) / np.maximum(counts[draws].sum(1), 1)
        spread = boot.max(1) - boot.min(1)
        lo, hi = np.percentile(spread, [2.5, 97.5])
        best, worst = int(means.argmax()), int(means.argmin())
        rows.append({**dict(zip(KEYS, keys, strict=True)), "harnesses": table.shape[1],
                     "best": table.columns[best], "best_pass1": 100 * means[best],
                     "worst": table.columns[worst], "worst_pass1": 100 * means[worst],
                     "spread": 100 * (means[best] - means[worst]),
                     "lo": 100 * lo, "hi": 100 * hi})
    data = pd.DataFrame(rows)
    if data.empty:
        return Table("sensitivity", "Harness sensitivity", pd.DataFrame(), data,
                     ["Fewer than two harnesses per arm were evaluated."])
    data = _sorted(data)
    frame = pd.DataFrame({
        "method": data["method"], "harnesses": data["harnesses"],
        "best harness": [f"{h} ({fmt(v)})" for h, v in zip(data["best"], data["best_pass1"],
                                                            strict=True)],
        "worst harness": [f"{h} ({fmt(v)})" for h, v in zip(data["worst"],
                                                             data["worst_pass1"], strict=True)],
        "spread (pp)": [f"{fmt(s)} [{lo:.1f}, {hi:.1f}]" for s, lo, hi in
                        zip(data["spread"], data["lo"], data["hi"], strict=True)]})
    note = ("Pass@1 (%) of the best and worst harness each arm was evaluated under (every "
            "setting), and the spread between them with a 95% cluster-bootstrap interval over "
            "tasks; with few tasks a harness, the spread is inflated by noise: compare it with "
            "the interval, and with the main effects above.")
    return Table("sensitivity", "Harness sensitivity: best vs worst harness", frame, data,
                 [note])
