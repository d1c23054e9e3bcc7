"""Component weights for weighted Hamming distances, estimated from a pilot's main effects.

The in-space eval set is an orthogonal array, so each component's level means are balanced
against the other components: the spread of a component's level means (max - min, in
percentage points of Pass@1) says how much changing it moves success. The weights are those
ranges normalised to mean 1 (hscale.design._weights' convention), each at least :data:`FLOOR` (a
weight must be positive), pooled over every measured arm of an experiment. ``hscale report``
adds them as a table and writes ``weights.yaml``, a ``weights:`` block to paste into a spec
(or to pass to ``hscale design neighbours --weights``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hscale.analysis._effects import with_levels
from hscale.analysis._load import Results
from hscale.analysis._render import Table
from hscale.files import atomic_write_text

FLOOR = 0.1  # least weight, relative to the mean: no component is free to change
DIGITS = 3
WEIGHTS_FILE = "weights.yaml"
COLUMNS = ["experiment", "factor", "levels", "episodes", "range_pp", "sd_pp", "weight",
           "weight_lo", "weight_hi"]
RESAMPLES = 500  # bootstrap resamples of the runs, for the weights' intervals


def estimate_weights(episodes: pd.DataFrame, floor: float = FLOOR, level: float = 0.8,
                     seed: int = 0) -> pd.DataFrame:
    """Per measured experiment and component: its level means' range and standard deviation
    (pp), the episodes behind them, and the weight (range normalised to mean 1, at least
    ``floor``, rounded), with a ``level`` interval from resampling each arm's training runs
    (how much another set of runs could move it). Empty where no in-space configuration was
    evaluated, or where no component moves success at all."""
    measured = episodes[episodes["source"].astype(str) == "measured"] \
        if "source" in episodes.columns else episodes
    ep, factors = with_levels(measured)
    rows = []
    gen = np.random.default_rng(seed)
    for experiment, part in ep.groupby("experiment", observed=True, sort=True):
        # per run: each level's mean; a run is (arm, seed)
        runs = part.assign(run_key=part["method"].astype(str) + "|" + part["seed"].astype(str))
        per_run = {f: runs.groupby(["run_key", f], observed=True)["success"].mean().unstack(f)
                   for f in factors}
        arm_of = runs.drop_duplicates("run_key").set_index("run_key")["method"].astype(str)
        found = []
        for name in factors:
            means = part.groupby(name)["success"].mean().mul(100)
            found.append({"experiment": str(experiment), "factor": name,
                          "levels": len(means), "episodes": len(part),
                          "range_pp": float(means.max() - means.min()),
                          "sd_pp": float(means.std(ddof=0))})
        spread = np.array([r["range_pp"] for r in found])
        if not len(spread) or spread.mean() <= 0:
            continue
        weights = _normalised(spread, floor)
        draws = _resampled(per_run, arm_of, factors, gen, floor)
        tail = (1 - level) / 2
        for j, (row, weight) in enumerate(zip(found, weights, strict=True)):
            lo, hi = (np.quantile(draws[:, j], [tail, 1 - tail]) if len(draws)
                      else (math.nan, math.nan))
            rows.append({**row, "weight": round(float(weight), DIGITS),
                         "weight_lo": round(float(lo), DIGITS),
                         "weight_hi": round(float(hi), DIGITS)})
    return pd.DataFrame(rows, columns=COLUMNS)


def _normalised(spread: np.ndarray, floor: float) -> np.ndarray:
    raw = np.maximum(spread / spread.mean(), floor)
    return raw / raw.mean()


def _resampled(per_run: dict[str, pd.DataFrame], arm_of: pd.Series, factors: list[str],
               gen: np.random.Generator, floor: float) -> np.ndarray:
    """Weights of :data:`RESAMPLES` resamples of each arm's runs (with replacement); empty
    when no arm has two runs (nothing to resample)."""
    by_arm = {a: list(keys) for a, keys in arm_of.groupby(arm_of).groups.items()}
    if all(len(k) < 2 for k in by_arm.values()):
        return np.empty((0, len(factors)))
    out = []
    for _ in range(RESAMPLES):
        picked = [k for keys in by_arm.values() for k in gen.choice(keys, len(keys))]
        spread = np.array([float((per_run[f].loc[picked].mean() * 100).pipe(
            lambda m: m.max() - m.min())) for f in factors])
        if spread.mean() > 0:
            out.append(_normalised(spread, floor))
    return np.array(out) if out else np.empty((0, len(factors)))


def weights_yaml(frame: pd.DataFrame, experiment: str) -> str:
    """The ``weights:`` block of one experiment, with a comment saying where it came from."""
    part = frame[frame["experiment"] == experiment]
    ranges = ", ".join(f"{f} {r:.1f}" for f, r in zip(part["factor"], part["range_pp"],
                                                       strict=True))
    pairs = ", ".join(f"{f}: {w:g}" for f, w in zip(part["factor"], part["weight"],
                                                     strict=True))
    spans = ", ".join(f"{f} [{lo:g}, {hi:g}]" for f, lo, hi in zip(
        part["factor"], part["weight_lo"], part["weight_hi"], strict=True)
        if np.isfinite(lo))
    uncertain = (f"# 80% intervals over resampled training runs: {spans}\n" if spans else
                 "# one seed an arm: how uncertain these are is not known\n")
    return (f"# component weights estimated by hscale report from experiment {experiment}'s\n"
            f"# in-space main effects over {int(part['episodes'].iloc[0])} episodes (range of "
            f"level means, pp: {ranges});\n{uncertain}# paste into an experiment spec, or "
            f"pass to hscale design neighbours --weights FILE\nweights: {{{pairs}}}\n")


def weights_table(frame: pd.DataFrame) -> Table:
    shown = pd.DataFrame({"experiment": frame["experiment"], "component": frame["factor"],
                          "range of level means (pp)": frame["range_pp"].map("{:.1f}".format),
                          "sd of level means (pp)": frame["sd_pp"].map("{:.1f}".format),
                          "weight": frame["weight"].map("{:g}".format),
                          "80% interval": [f"[{lo:g}, {hi:g}]" if np.isfinite(lo) else "—"
                                           for lo, hi in zip(frame["weight_lo"],
                                                             frame["weight_hi"],
                                                             strict=True)]})
    note = ("Each component's weight is the range of its levels' in-space Pass@1 (main "
            "effects over every measured arm), normalised to mean 1 and at least "
            f"{FLOOR:g}; {WEIGHTS_FILE} holds it as a spec's weights: block. The interval is "
            "where the weight lands when each arm's training runs are resampled (80%): a "
            "weight whose interval spans 1 is not told apart from the others'.")
    return Table("weights", "Component weights for weighted Hamming distances", shown, frame,
                 [note])


def add_weights(results: Results, report: Any) -> None:
    """Add the weights table to ``report`` (hscale.analysis._report.Report) and write its snippet,
    ``weights.yaml`` (``weights-<experiment>.yaml`` each when there are several experiments),
    into the report folder, with a note naming it. Nothing when there is nothing to estimate."""
    frame = estimate_weights(results.episodes)
    if frame.empty:
        return
    report.tables.append(weights_table(frame))
    experiments = list(dict.fromkeys(frame["experiment"]))
    report.out.mkdir(parents=True, exist_ok=True)
    for experiment in experiments:
        name = WEIGHTS_FILE if len(experiments) == 1 else \
            f"weights-{re.sub(r'[^A-Za-z0-9_.-]', '_', experiment)}.yaml"
        atomic_write_text(Path(report.out) / name, weights_yaml(frame, experiment))
        part = frame[frame["experiment"] == experiment]
        report.notes.append(f"component weights of {experiment} from main effects: "
                            + ", ".join(f"{f} {w:g}" for f, w in
                                        zip(part["factor"], part["weight"], strict=True))
                            + f" (written to {Path(report.out) / name})")
