"""What the harness components do to success (the level means), and how success falls with
distance to training.

The held-out eval set is an orthogonal array, so every level of a component meets every level
of every other component equally often: a level's marginal mean is an unbiased main effect.
The components' tests, with training runs as the replicates, are
hscale.analysis._component_tests'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from hscale.analysis._bootstrap import bootstrap_ci
from hscale.analysis._passk import final_step
from hscale.analysis._stats import GROUP
from hscale.contracts import Setting

PART = re.compile(r"([A-Za-z_]+)(\d+)")


def parse_harnesses(labels: Sequence[str]) -> pd.DataFrame:
    """Labels such as ``S0-T1-O2-C0-W1`` as a table of level indices (index: label).

    Labels that are not factor configurations (``oos/shell``) or name other factors than
    the first configuration label are left out.
    """
    rows, names = {}, None
    for label in dict.fromkeys(map(str, labels)):
        parts = [PART.fullmatch(p) for p in label.split("-")]
        if not all(parts):
            continue
        these = tuple(m.group(1) for m in parts)
        names = names or these
        if these == names:
            rows[label] = [int(m.group(2)) for m in parts]
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(names or ()))


def with_levels(episodes: pd.DataFrame, settings: Sequence[str] = (Setting.IN_SPACE,)
                ) -> tuple[pd.DataFrame, list[str]]:
    """Final-step episodes of ``settings`` whose harness is a configuration, plus level columns."""
    ep = final_step(episodes)
    ep = ep[ep["setting"].isin(list(settings))]
    table = parse_harnesses(ep["harness"].astype(str).unique())
    ep = ep[ep["harness"].astype(str).isin(table.index)]
    codes = table.reindex(ep["harness"].astype(str).to_numpy())
    out = ep.reset_index(drop=True)
    for name in table.columns:
        out[name] = codes[name].to_numpy()
    return out, list(table.columns)


def main_effects(episodes: pd.DataFrame, by: Sequence[str] = (*GROUP, "method"),
                 settings: Sequence[str] = (Setting.IN_SPACE,), n_boot: int = 2000,
                 seed: int = 0) -> pd.DataFrame:
    """Marginal success (%) of every level of every component, with intervals over tasks.

    ``effect`` is the level's mean minus the group's grand mean, in percentage points.
    """
    ep, factors = with_levels(episodes, settings)
    if ep.empty:
        return pd.DataFrame(columns=[*by, "factor", "level", "mean", "lo", "hi", "effect"])
    grand = ep.groupby(list(by), observed=True)["success"].mean().mul(100).rename("mean")
    grand = grand.reset_index().astype({c: str for c in by})
    parts = []
    for i, name in enumerate(factors):
        part = bootstrap_ci(ep, [*by, name], n_boot=n_boot, seed=seed + i)
        parts.append(part.rename(columns={name: "level"}).assign(factor=name))
    out = pd.concat(parts, ignore_index=True).merge(grand, on=list(by), suffixes=("", "_all"))
    out["effect"] = out["mean"] - out.pop("mean_all")
    out["level"] = out["level"].astype(int)
    return out[[*by, "factor", "level", "mean", "lo", "hi", "effect"]]


def _coding(levels: np.ndarray, count: int) -> np.ndarray:
    """Effect (sum-to-zero) coding: column l is +1 at level l, -1 at the last level."""
    cols = [(levels == lv).astype(float) - (levels == count - 1) for lv in range(count - 1)]
    return np.column_stack(cols) if cols else np.zeros((len(levels), 0))


def distance_to_training(episodes: pd.DataFrame,
                         train_sets: Mapping[tuple[str, str], Sequence[str]]) -> pd.Series:
    """Hamming distance from each row's harness to the nearest of its arm's training harnesses.

    NaN where the harness is not a configuration (out-of-space) or the arm's training set is
    unknown.
    """
    from hscale.design import distance_matrix

    keys = ["experiment", "method", "harness"]
    grouped = episodes.groupby(keys, observed=True, sort=False)
    combos = pd.DataFrame(list(grouped.groups), columns=keys).astype(str)
    found = parse_harnesses([*combos["harness"], *(h for s in train_sets.values() for h in s)])
    dist = np.full(len(combos), np.nan)
    for (exp, method), part in combos.groupby(["experiment", "method"]):
        train = [h for h in train_sets.get((exp, method), []) if h in found.index]
        rows = part[part["harness"].isin(found.index)]
        if train and len(rows):
            d = distance_matrix(found.loc[rows["harness"]].to_numpy(),
                                found.loc[train].to_numpy())
            dist[rows.index] = d.min(axis=1)
    codes = grouped.ngroup().to_numpy()
    return pd.Series(dist[codes], index=episodes.index, name="distance", dtype="float64")


def success_by_distance(episodes: pd.DataFrame,
                        train_sets: Mapping[tuple[str, str], Sequence[str]],
                        settings: Sequence[str] = (Setting.BASE, Setting.IN_SPACE),
                        n_boot: int = 2000,
                        seed: int = 0) -> pd.DataFrame:
    """Pass@1 (%) by Hamming distance to the nearest training configuration, per arm."""
    ep = final_step(episodes)
    ep = ep[ep["setting"].isin(list(settings))]
    ep = ep.assign(distance=distance_to_training(ep, train_sets)).dropna(subset=["distance"])
    by = [*GROUP, "method", "distance"]
    if ep.empty:
        return pd.DataFrame(columns=[*by, "harnesses", "mean", "lo", "hi", "clusters"])
    ep["distance"] = ep["distance"].astype(int)
    out = bootstrap_ci(ep, by, n_boot=n_boot, seed=seed)
    sizes = ep.groupby(by, observed=True)["harness"].nunique().rename("harnesses").reset_index()
    sizes[by] = sizes[by].astype(str)
    out = out.merge(sizes, on=by)
    out["distance"] = out["distance"].astype(int)
    return out[[*by, "harnesses", "mean", "lo", "hi", "clusters"]]
