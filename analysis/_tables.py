"""The papers' table layouts, filled with measured numbers beside the reported ones.

Every table is built from long "cells" (one number per row group x benchmark x setting),
so a measured Pass@1 and a paper's figure for the same cell sit in the same column. Reported
rows are the papers' numbers as printed (analysis/data/reported.csv), never recomputed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hscale.analysis._load import Results
from hscale.analysis._naming import (
    BASELINE,
    REFERENCE,
    SETTING_ORDER,
    SOURCE_ORDER,
    default_reference,
    is_base_model,
    method_key,
    order_key,
    setting_label,
)
from hscale.analysis._passk import pass1, passk
from hscale.analysis._render import Table, fmt, fmt_interval, fmt_p
from hscale.analysis._stats import compare_arms, rl_gains
from hscale.analysis._verdicts import comparable
from hscale.contracts import HEADLINE_SETTINGS, PaperFit, Setting, blackbox_name

ROW = ("source", "model", "algorithm", "method")
CELL_COLUMNS = ("source", "experiment", "model", "algorithm", "method", "baseline", "benchmark",
                "setting", "harness", "metric", "mean", "std", "n", "note")
PASS1_NOTE = ("Pass@1 in %: per evaluation run (seed x run) the mean success over the tasks x "
              "harnesses of a setting; mean ± sample standard deviation over runs. 'average' "
              "weighs benchmarks equally; 'overall' averages every benchmark x setting cell.")
HARNESS_S_METRICS = ("pass@3", "avg@3", "effective_group_rate", "extra_rollouts_pct",
                     "gpu_hours")
METRIC_LABELS = {"effective_group_rate": "effective-group rate (%)",
                 "extra_rollouts_pct": "extra rollouts (%)", "gpu_hours": "GPU·h",
                 "training_rollouts": "training rollouts"}


@dataclass
class Cells:
    """Everything the tables need, computed once from the results."""

    measured: pd.DataFrame  # pass@1 cells of measured and external episodes
    by_harness: pd.DataFrame  # pass@1 per out-of-space harness (benchmark average)
    reported: pd.DataFrame  # summary rows (papers, external summaries) with a ``table`` tag
    results: Results
    # the reported rows whose setup is this study's (hscale.analysis._verdicts.comparable):
    # the only ones a verdict checks; ``paper_note`` says why the others are not compared
    comparable: pd.DataFrame | None = None
    paper_note: str = ""


def _long(frame: pd.DataFrame, **fixed: object) -> pd.DataFrame:
    frame = frame.assign(**{k: v for k, v in fixed.items() if k not in frame.columns})
    for col in CELL_COLUMNS:
        if col not in frame.columns:
            frame[col] = np.nan if col in ("mean", "std", "n") else ""
    return frame[list(CELL_COLUMNS)]


def compute_cells(results: Results) -> Cells:
    ep = results.episodes
    oos = ep[ep["setting"] == Setting.OUT_OF_SPACE]
    by_harness = pass1(oos, harness=True) if len(oos) else pd.DataFrame(columns=["harness"])
    by_harness = by_harness[by_harness.get("benchmark", pd.Series(dtype=str)) == "average"]
    reported = results.reported.rename(columns={"value": "mean"}).copy()
    reported["experiment"] = ""
    reported["n"] = np.nan
    tags = reported.pop("table") if "table" in reported.columns else ""
    reported = _long(reported).assign(table=tags)
    measured = ep[ep["source"] == "measured"] if "source" in ep.columns else ep
    models = sorted({str(m) for m in results.runs.get("model", pd.Series(dtype=str))}
                    | {str(m) for m in measured.get("model", pd.Series(dtype=str)).unique()})
    same, note = comparable(reported[reported["source"] == "reported"]
                            if "source" in reported.columns else reported, models,
                            sorted({str(b) for b in measured["benchmark"].unique()}))
    return Cells(measured=_long(pass1(ep), metric="pass@1"),
                 by_harness=_long(by_harness, metric="pass@1"),
                 reported=reported, results=results, comparable=same, paper_note=note)


PASS1 = ("pass@1",)
ALL_SETTINGS = (Setting.BASE, Setting.IN_SPACE, Setting.OUT_OF_SPACE, "overall")


def reported_for(cells: Cells, tag: str, metrics: Sequence[str] = PASS1,
                 settings: Sequence[str] = ALL_SETTINGS) -> pd.DataFrame:
    """Summary rows tagged ``tag`` (reported.csv's ``table`` column, the papers' numbering),
    plus untagged ones (external CSVs) that fit it."""
    rows = cells.reported
    tagged = rows["table"] == tag
    fits = ((rows["table"] == "") & rows["metric"].isin(list(metrics))
            & rows["setting"].isin(list(settings)))
    return rows[tagged | fits].drop(columns="table")


def deltas(cells: pd.DataFrame, method: str = REFERENCE, baseline: str = BASELINE
           ) -> pd.DataFrame:
    """``method - baseline`` for every cell both measured (differences of means)."""
    keys = ["source", "experiment", "model", "algorithm", "benchmark", "setting", "harness",
            "metric"]
    own = cells[cells["baseline"] == ""]
    a = own[own["method"] == method]
    b = own[own["method"] == baseline]
    if a.empty or b.empty:
        return cells.iloc[0:0]
    merged = a.merge(b[[*keys, "mean"]], on=keys, suffixes=("", "_base"))
    merged["mean"] = merged["mean"] - merged.pop("mean_base")
    return merged.assign(std=np.nan, n=np.nan, baseline=baseline)[list(CELL_COLUMNS)]


def _drop_single_averages(cells: pd.DataFrame) -> pd.DataFrame:
    """A benchmark 'average' over one benchmark repeats it: leave it out."""
    keys = [*ROW, "experiment", "baseline", "setting", "harness", "metric"]
    real = cells["benchmark"] != "average"
    count = real.groupby([cells[k] for k in keys]).transform("sum")
    return cells[real | (count != 1)]


def default_column(row: pd.Series) -> str:
    if row["setting"] == "overall":
        return "overall"
    harness = f" ({row['harness']})" if row["harness"] else ""
    return f"{setting_label(row['setting'])}{harness} {row['benchmark']}"


def _column_order(cells: pd.DataFrame) -> list[str]:
    settings = order_key(cells["setting"], SETTING_ORDER)
    benches = {b: i for i, b in enumerate(dict.fromkeys(cells["benchmark"]))}
    benches["average"] = len(benches) + 1
    order = cells.assign(_s=cells["setting"].map(settings), _b=cells["benchmark"].map(benches))
    order = order.sort_values(["_s", "harness", "_b"], kind="stable")
    return list(dict.fromkeys(order["column"]))


def _row_sort(frame: pd.DataFrame) -> pd.DataFrame:
    sources = order_key(frame["source"], SOURCE_ORDER)
    methods = frame["method"].str.replace(r"^Δ (.*) − .*$", r"\1", regex=True)
    key = pd.DataFrame({"s": frame["source"].map(sources), "m": frame["model"],
                        "a": frame["algorithm"], "k": methods.map(method_key),
                        "d": frame["method"].str.startswith("Δ")})
    return frame.loc[key.sort_values(["s", "m", "a", "k", "d"], kind="stable").index]


def grid(cells: pd.DataFrame, column: Callable[[pd.Series], str] = default_column
         ) -> pd.DataFrame:
    """Cells pivoted to rows (source, model, algorithm, method) x formatted columns."""
    if cells.empty:
        return pd.DataFrame(columns=list(ROW))
    cells = cells.copy()
    cells["column"] = cells.apply(column, axis=1)
    delta = cells["baseline"] != ""
    cells["method"] = cells["method"].where(~delta, "Δ " + cells["method"] + " − "
                                            + cells["baseline"])
    cells["text"] = [fmt(m, s, signed=d) for m, s, d in
                     zip(cells["mean"], cells["std"], delta, strict=True)]
    cells["model"] = cells["model"].replace("", "—")
    wide = (cells.drop_duplicates([*ROW, "column"])
            .pivot(index=list(ROW), columns="column", values="text"))
    wide = wide[[c for c in _column_order(cells) if c in wide.columns]]
    return _row_sort(wide.reset_index()).reset_index(drop=True).fillna("—").rename_axis(
        columns=None)


def _notes(*frames: pd.DataFrame) -> list[str]:
    notes = []
    for frame in frames:
        for row in frame.itertuples():
            if row.note:
                notes.append(f"{row.source} {row.model or '—'} {row.method} "
                             f"({setting_label(row.setting)} {row.benchmark}): {row.note}")
    return list(dict.fromkeys(notes))


def _table(name: str, title: str, cells: pd.DataFrame, notes: Sequence[str],
           column: Callable[[pd.Series], str] = default_column) -> Table:
    return Table(name, title, grid(cells, column), cells.reset_index(drop=True),
                 [*notes, *_notes(cells)])


def settings_table(cells: Cells) -> Table:
    """Pass@1 of model x algorithm x method by benchmark x setting, with the main gain (the
    papers' Table 1)."""
    own = cells.measured
    rows = pd.concat([own, deltas(own), reported_for(cells, "table1")], ignore_index=True)
    return _table("settings", "Table 1: Pass@1 (%) by benchmark and setting",
                  _drop_single_averages(rows), [PASS1_NOTE])


def out_of_space_table(cells: Cells) -> Table:
    """Out-of-space harnesses, each averaged over benchmarks (the papers' Table 2)."""
    own = cells.measured
    own = own[(own["setting"] == Setting.OUT_OF_SPACE) & (own["benchmark"] == "average")]
    theirs = reported_for(cells, "table2", settings=(Setting.OUT_OF_SPACE,))
    rows = pd.concat([cells.by_harness, own, theirs], ignore_index=True)

    def column(row: pd.Series) -> str:  # a real CLI's rows sit under the papers' name
        return blackbox_name(row["harness"]) or "all out-of-space"

    return _table(Setting.OUT_OF_SPACE,
                  "Table 2: out-of-space Pass@1 (%), averaged over benchmarks",
                  rows, [PASS1_NOTE], column)


def base_harness_table(cells: Cells) -> Table:
    """The base harness against in-space and out-of-space, single vs reference (the papers'
    Table 4)."""
    own = cells.measured[cells.measured["setting"].isin(HEADLINE_SETTINGS)]
    keep = own["method"].isin([BASELINE, REFERENCE])
    own = own[keep] if keep.any() else own
    theirs = reported_for(cells, "table4", settings=(Setting.BASE, Setting.IN_SPACE,
                                                     Setting.OUT_OF_SPACE))
    rows = pd.concat([own, deltas(own), theirs], ignore_index=True)
    return _table("base_harness",
                  "Table 4: base harness vs in-space vs out-of-space, Pass@1 (%)",
                  _drop_single_averages(rows), [PASS1_NOTE])


METHODS_NOTE = (
    "How to read: Δ is the difference in Pass@1 (pp) between the arm's runs and the "
    "reference's: each training run (arm x seed) is one replicate, every run counts whatever "
    "its seed label, and each arm's run variance is its own (Welch; an arm of one seed borrows "
    "the others' pooled one, as its note says); the arms' interactions with tasks (and with "
    "in-space harnesses, a sample of the space) are added as crossed parts. p is the t test's, "
    "with the degrees of freedom shown. Intervals are simultaneous 95% over the m comparisons "
    "of the table (max-t: the shared reference and the runs evaluated in several settings "
    "correlate them), so an interval leaves out 0 exactly when p adjusted < 0.05, and the "
    "verdict reads that interval; '95% each' is one comparison's own interval. MDE: the true "
    "difference the adjusted test would detect with 80% power at this standard error, a "
    "planning figure (hscale power plans seeds with it), not a reading of a non-result. "
    "paper: the papers' reported difference, where their setup is this study's.")


def comparisons_table(comparisons: pd.DataFrame, name: str = "comparisons",
                      title: str = "Paired comparisons against the reference arm",
                      delta: str = "Δ (pp)") -> Table:
    """Every arm against the reference, judged as one family (hscale.analysis._stats)."""
    get = comparisons.get
    blank = pd.Series("", comparisons.index)
    frame = pd.DataFrame({
        "source": comparisons["source"], "model": comparisons["model"],
        "algorithm": comparisons["algorithm"], "method": comparisons["method"],
        "reference": comparisons["reference"],
        "setting": comparisons["setting"].map(setting_label),
        delta: [fmt(d, signed=True) for d in comparisons["diff"]],
        "simultaneous 95% CI": _intervals(comparisons["lo"], comparisons["hi"]),
        "verdict": get("verdict", blank),
        "paper (pp)": [fmt(v, signed=True) for v in get("paper_pp", pd.Series(
            np.nan, comparisons.index))],
        "paper inside?": get("paper_check", blank).replace(
            {PaperFit.CONSISTENT: "yes", PaperFit.ABOVE: "no, above",
             PaperFit.BELOW: "no, below", PaperFit.MIXED: "partly"}),
        "MDE (pp)": [fmt(v) for v in get("mde", pd.Series(np.nan, comparisons.index))],
        "95% each": _intervals(comparisons["lo_each"], comparisons["hi_each"]),
        "SE (pp)": [fmt(v) for v in comparisons["se"]],
        "df": [fmt(v, digits=0) if np.isfinite(v) else "∞" if v == np.inf else "—"
               for v in comparisons["df"]],
        "seeds": comparisons["seeds"], "tasks": comparisons["tasks"],
        "pairs": comparisons["pairs"],
        "p": [fmt_p(p) for p in comparisons["p"]],
        "p adjusted": [fmt_p(p) for p in comparisons["p_adj"]]})
    notes = [METHODS_NOTE + f" m = {len(comparisons)} here."]
    notes += sorted({str(n) for n in comparisons["note"] if str(n)})
    return Table(name, title, frame, comparisons.reset_index(drop=True), notes)


def _intervals(lo: pd.Series, hi: pd.Series) -> list[str]:
    return [f"[{a:+.2f}, {b:+.2f}]" if np.isfinite(a) and np.isfinite(b) else "—"
            for a, b in zip(lo, hi, strict=True)]


def rl_gain_table(gains: pd.DataFrame) -> Table:
    """Every arm against the base model (no RL) per setting: what training added."""
    table = comparisons_table(gains, "rl_gain", "RL gain: every arm against the base model "
                              "(no RL), paired on the same evaluation episodes",
                              "RL gain (pp)")
    table.notes.insert(0, "The base model is the starting model evaluated at step 0 (arm "
                       "base-model, one run per seed) on the tasks, harnesses and runs every "
                       "trained arm of that seed is evaluated on.")
    return table


def ablation_table(cells: Cells, comparisons: pd.DataFrame) -> Table:
    """The ablation: every arm in- and out-of-space, with its paired difference to the reference."""
    own = cells.measured[cells.measured["setting"].isin([Setting.IN_SPACE, Setting.OUT_OF_SPACE])]
    theirs = reported_for(cells, "ablation", settings=(Setting.IN_SPACE, Setting.OUT_OF_SPACE))
    rows = _drop_single_averages(pd.concat([own, theirs], ignore_index=True))
    table = _table("ablation", "Ablation: Pass@1 (%) of every arm, and Δ to the reference",
                   rows, [PASS1_NOTE])
    for setting, part in comparisons.groupby("setting", sort=False):
        label = setting_label(str(setting))
        extra = pd.DataFrame({
            "source": part["source"], "model": part["model"], "algorithm": part["algorithm"],
            "method": part["method"],
            f"Δ {label} vs {part['reference'].iloc[0]} [simultaneous 95% CI]": [
                f"{fmt(d, signed=True)} {fmt_interval(lo, hi)}"
                for d, lo, hi in zip(part["diff"], part["lo"], part["hi"], strict=True)],
            f"p adjusted ({label})": [fmt_p(p) for p in part["p_adj"]]})
        extra["model"] = extra["model"].replace("", "—")
        table.frame = table.frame.merge(extra, on=list(ROW), how="left").fillna("—")
    return table


def _train_metric(results: Results) -> pd.DataFrame:
    """Effective-group rate and extra rollouts per run, then mean/std over runs."""
    train, runs = results.train, results.runs
    rows = []
    keys = ["source", "experiment", "model", "algorithm", "method", "seed"]
    if "effective_group_rate" in train.columns and len(train):
        rate = train.groupby(keys, observed=True)["effective_group_rate"].mean() * 100
        rows.append(rate.rename("value").reset_index().assign(metric="effective_group_rate"))
    if "episodes" in train.columns and len(train) and len(runs):
        done = train.groupby(keys, observed=True)["episodes"].agg(["sum", "count"]).reset_index()
        budget = runs.assign(per_step=[b.get("tasks_per_step", np.nan) *
                                       b.get("rollouts_per_task", np.nan)
                                       for b in runs["budget"]])[[*keys, "per_step"]]
        done = done.astype({k: str for k in keys if k != "seed"}).merge(
            budget.astype({k: str for k in keys if k != "seed"}), on=keys)
        done["value"] = 100 * done["sum"] / (done["count"] * done["per_step"]) - 100
        rows.append(done[[*keys, "value"]].assign(metric="extra_rollouts_pct"))
    if not rows:
        return _long(pd.DataFrame(columns=["metric"]))
    per_run = pd.concat(rows, ignore_index=True).astype({k: str for k in keys if k != "seed"})
    out = per_run.groupby([*keys[:-1], "metric"])["value"].agg(["mean", "std", "count"])
    return _long(out.rename(columns={"count": "n"}).reset_index(), setting="", benchmark="")


def harness_s_table(cells: Cells, k: int | None = None) -> Table:
    """Harness-S: Pass@k / Avg@k per setting, effective-group rate and extra rollouts."""
    scores, k = passk(cells.results.episodes, k)
    scores = scores[scores["benchmark"] == "average"]
    rows = pd.concat([_long(scores), _train_metric(cells.results),
                      reported_for(cells, "harness-s", HARNESS_S_METRICS, ("", *ALL_SETTINGS))],
                     ignore_index=True)

    def column(row: pd.Series) -> str:
        metric = str(row["metric"])
        if metric.startswith(("pass@", "avg@")):
            name = metric.replace("pass@", "Pass@").replace("avg@", "Avg@")
            return f"{name} ({setting_label(row['setting'])})"
        return METRIC_LABELS.get(metric, metric)

    note = (f"Pass@{k} uses the unbiased estimator 1 - C(n-c,k)/C(n,k) over the n evaluation "
            f"runs of each seed x task x harness; Avg@{k} is c/n; both averaged over tasks x "
            "harnesses and benchmarks, then mean ± std over seeds. Effective-group rate: mean "
            "over training steps of the share of groups holding a success and a failure. "
            "Extra rollouts: rollouts beyond tasks_per_step x rollouts_per_task a step.")
    return _table("harness_s", f"Harness-S: Pass@{k} / Avg@{k} (%), effective groups, cost",
                  rows, [note], column)


def measured_ordering(cells: Cells) -> pd.DataFrame:
    """Arms of each measured group ranked by in-space Pass@1 (benchmark average); the base
    model (no RL) is not an arm."""
    own = cells.measured
    own = own[(own["setting"] == Setting.IN_SPACE) & (own["benchmark"] == "average")
              & (own["source"] != "reported")
              & ~own["method"].map(is_base_model).astype(bool)]
    own = own.sort_values(["source", "experiment", "model", "algorithm", "mean"],
                          ascending=[True, True, True, True, False], kind="stable")
    own = own.assign(rank=own.groupby(["source", "experiment", "model", "algorithm"])
                     .cumcount() + 1)
    return own[["source", "experiment", "model", "algorithm", "method", "mean", "std", "n",
                "rank"]].reset_index(drop=True)


def all_tables(results: Results, reference: str | None = None
               ) -> tuple[list[Table], Cells, pd.DataFrame]:
    """Every table of the report, the shared cells, and the paired comparisons (with their
    verdicts and the papers' check: hscale.analysis._verdicts)."""
    from hscale.analysis._verdicts import with_verdicts

    cells = compute_cells(results)
    methods = results.episodes["method"].astype(str).unique()
    reference = reference or default_reference(methods)
    comparisons = with_verdicts(compare_arms(results.episodes, reference,
                                             (Setting.IN_SPACE, Setting.OUT_OF_SPACE)),
                                cells.comparable)
    gains = with_verdicts(rl_gains(results.episodes), cells.comparable)
    tables = [settings_table(cells), out_of_space_table(cells),
              ablation_table(cells, comparisons), base_harness_table(cells),
              harness_s_table(cells), comparisons_table(comparisons)]
    if len(gains):
        tables.append(rl_gain_table(gains))
    return tables, cells, comparisons
