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
COLUMNS = ["experiment", "factor", "levels", "episodes", "range_pp", "sd_pp", "weight"]


def estimate_weights(episodes: pd.DataFrame, floor: float = FLOOR) -> pd.DataFrame:
    """Per measured experiment and component: its level means' range and standard deviation
    (pp), the episodes behind them, and the weight (range normalised to mean 1, at least
    ``floor``, rounded). Empty where no in-space configuration was evaluated, or where no
    component moves success at all."""
    measured = episodes[episodes["source"].astype(str) == "measured"] \
        if "source" in episodes.columns else episodes
    ep, factors = with_levels(measured)
    rows = []
    for experiment, part in ep.groupby("experiment", observed=True, sort=True):
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
        raw = np.maximum(spread / spread.mean(), floor)
        for row, weight in zip(found, raw / raw.mean(), strict=True):
            rows.append({**row, "weight": round(float(weight), DIGITS)})
    return pd.DataFrame(rows, columns=COLUMNS)


def weights_yaml(frame: pd.DataFrame, experiment: str) -> str:
    """The ``weights:`` block of one experiment, with a comment saying where it came from."""
    part = frame[frame["experiment"] == experiment]
    ranges = ", ".join(f"{f} {r:.1f}" for f, r in zip(part["factor"], part["range_pp"],
                                                       strict=True))
    pairs = ", ".join(f"{f}: {w:g}" for f, w in zip(part["factor"], part["weight"],
                                                     strict=True))
    return (f"# component weights estimated by hscale report from experiment {experiment}'s\n"
            f"# in-space main effects over {int(part['episodes'].iloc[0])} episodes (range of "
            f"level means, pp: {ranges});\n# paste into an experiment spec, or pass to "
            f"hscale design neighbours --weights FILE\nweights: {{{pairs}}}\n")


def weights_table(frame: pd.DataFrame) -> Table:
    shown = pd.DataFrame({"experiment": frame["experiment"], "component": frame["factor"],
                          "range of level means (pp)": frame["range_pp"].map("{:.1f}".format),
                          "sd of level means (pp)": frame["sd_pp"].map("{:.1f}".format),
                          "weight": frame["weight"].map("{:g}".format)})
    note = ("Each component's weight is the range of its levels' in-space Pass@1 (main "
            "effects over every measured arm), normalised to mean 1 and at least "
            f"{FLOOR:g}; {WEIGHTS_FILE} holds it as a spec's weights: block. A small pilot's "
            "ranges are mostly noise: compare them with the effects table's intervals.")
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
