"""Behaviour frequencies per arm and setting, from the trajectory counts every evaluated
episode carries (hscale.harness._behaviour): how often an arm looked before acting, repeated
a call, hit a tool error, recovered after one, and how many calls it made; each with a
cluster-bootstrap interval over tasks. They describe behaviour, not correctness (Harness-S
says the same of its frequencies)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from hscale.analysis._bootstrap import bootstrap_ci
from hscale.analysis._load import Results
from hscale.analysis._naming import order_methods, setting_label
from hscale.analysis._passk import final_step
from hscale.analysis._render import Table
from hscale.analysis._stats import GROUP

# (column title, eval column, how an episode counts, scale): % of episodes, or a mean count
MEASURES = (
    ("looked before acting (%)", "looked_first", lambda v: v, 100.0),
    ("repeated a call (%)", "repeats", lambda v: (v > 0).astype(float), 100.0),
    ("a tool error (%)", "tool_errors", lambda v: (v > 0).astype(float), 100.0),
    ("recovered after an error (%)", "recovered", lambda v: v, 100.0),
    ("tool calls per episode", "tool_calls", lambda v: v, 1.0),
)
JUDGED = ("instruction_following", "interface_handling", "observation_reading",
          "state_tracking", "workflow_compliance", "error_recovery")  # judged_<name> columns
MEASURES += tuple((f"{name.replace('_', ' ')} (judged, 1-5)", f"judged_{name}",
                   lambda v: v, 1.0) for name in JUDGED)
NOTE = ("Frequencies from the trajectories' tool calls (final checkpoint, sampled runs): they "
        "describe behaviour, not correctness. 'recovered' counts episodes with a tool error; "
        "'looked before acting' episodes with a tool call (its first only listed, read or "
        "searched). Black-box CLIs run their own tools and are not counted. The judged "
        "capabilities (when the runs asked an LLM judge: HSCALE_JUDGE_CAPABILITIES=1) are its "
        "1-5 scores of each trajectory. Mean [95% interval over tasks].")


def behaviour_frame(results: Results, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Long rows: group, method, setting, measure, mean, lo, hi, episodes."""
    ep = results.episodes
    if "tool_calls" not in ep.columns or ep["tool_calls"].isna().all():
        return pd.DataFrame()
    ep = final_step(ep)
    by = [*GROUP, "method", "setting"]
    parts = []
    for title, column, counts, scale in MEASURES:
        if column not in ep.columns:
            continue
        rows = ep[ep[column].notna()]
        if rows.empty:
            continue
        rows = rows.assign(_value=counts(rows[column].astype(float)))
        found = bootstrap_ci(rows, by, value="_value", n_boot=n_boot, seed=seed, scale=scale)
        sizes = rows.groupby(by, observed=True).size().rename("episodes").reset_index()
        found = found.merge(sizes.astype({c: str for c in by}), on=by, how="left")
        parts.append(found.assign(measure=title))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def behaviour_table(results: Results, n_boot: int = 2000, seed: int = 0) -> Table:
    data = behaviour_frame(results, n_boot, seed)
    title = "Behaviour: what the trajectories did, per arm and setting"
    if data.empty:
        return Table("behaviour", title, pd.DataFrame(), data,
                     ["No trajectory counts in these runs (older run files, or black-box "
                      "harnesses only)."])
    cell = [("—" if not np.isfinite(m) else f"{m:.1f}" if not np.isfinite(lo) else
             f"{m:.1f} [{lo:.1f}, {hi:.1f}]")
            for m, lo, hi in zip(data["mean"], data["lo"], data["hi"], strict=True)]
    wide = data.assign(cell=cell).pivot_table(index=[*GROUP[:1], "model", "algorithm",
                                                     "method", "setting"],
                                              columns="measure", values="cell",
                                              aggfunc="first").reset_index()
    order = {m: i for i, m in enumerate(order_methods(wide["method"].unique()))}
    wide = wide.sort_values(["method", "setting"], key=lambda c: c.map(order)
                            if c.name == "method" else c)
    wide["setting"] = wide["setting"].map(setting_label)
    columns = [*GROUP[:1], "model", "algorithm", "method", "setting",
               *[t for t, *_ in MEASURES if t in wide.columns]]
    return Table("behaviour", title, wide[columns].reset_index(drop=True), data, [NOTE])
