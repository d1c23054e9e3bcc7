"""What an arm's episodes cost at inference: model calls, prompt and completion tokens and
seconds per episode and per solved task, per arm and setting, per harness and per component
level; and Pass@1 against tokens. The papers report Pass@1 alone (Harness Scaling lists
"no token cost or latency" among its limits); this answers their question "does harness
diversity cost more at inference?" from the same runs.

Counts come from the eval rows (hscale.harness._transcript.cost), seconds from
transcripts.parquet; a driver that cannot count a quantity leaves it NaN and it is left out.
Seconds are wall-clock on the machine that ran the episodes, inside whatever batch it played
them in: compare them within one study, not across machines.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hscale.analysis._bootstrap import bootstrap_ci
from hscale.analysis._effects import with_levels
from hscale.analysis._load import Results
from hscale.analysis._naming import order_methods, setting_label
from hscale.analysis._passk import final_step
from hscale.analysis._plots import FigureSpec, NoData, Options, _colors, _level_names, figure
from hscale.analysis._render import Table
from hscale.analysis._stats import GROUP
from hscale.contracts import Setting

# (column title, eval column): a mean per episode, with an interval over tasks
MEASURES = (("model calls", "model_calls"), ("prompt tokens", "prompt_tokens"),
            ("completion tokens", "completion_tokens"), ("seconds", "seconds"))
NOTE = ("Means per episode [95% interval over tasks] at the final checkpoint (sampled runs); "
        "'per solved' divides all episodes' total by the episodes solved, the price of one "
        "success. Tokens as the model's tokenizer counts them, each call's whole prompt (what "
        "an API bills); seconds are wall-clock on the machine that ran them, inside its "
        "batches. Empty where a driver could not count.")


def _tokens(ep: pd.DataFrame) -> pd.Series:
    return ep["prompt_tokens"] + ep["completion_tokens"]


def _measured(results: Results) -> pd.DataFrame:
    ep = results.episodes
    if "prompt_tokens" not in ep.columns or ep["prompt_tokens"].isna().all():
        return pd.DataFrame()
    return final_step(ep)


def efficiency_frame(results: Results, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Long rows: group, method, setting, measure, mean, lo, hi, per_solved, pass1,
    episodes."""
    ep = _measured(results)
    if ep.empty:
        return pd.DataFrame()
    ep = ep.assign(tokens=_tokens(ep))
    by = [*GROUP, "method", "setting"]
    parts = []
    for i, (title, column) in enumerate((*MEASURES, ("tokens", "tokens"))):
        if column not in ep.columns:
            continue
        rows = ep[ep[column].notna()]
        if rows.empty:
            continue
        found = bootstrap_ci(rows, by, value=column, n_boot=n_boot, seed=seed + i, scale=1.0)
        totals = rows.groupby(by, observed=True).agg(total=(column, "sum"),
                                                     solved=("success", "sum"),
                                                     episodes=("success", "size"),
                                                     pass1=("success", "mean"))
        totals["per_solved"] = totals["total"] / totals["solved"].replace(0, np.nan)
        totals["pass1"] *= 100
        totals = totals.reset_index().astype({c: str for c in by})
        found = found.merge(totals[[*by, "per_solved", "pass1", "episodes"]], on=by, how="left")
        parts.append(found.assign(measure=title))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def efficiency_table(results: Results, n_boot: int = 2000, seed: int = 0) -> Table:
    data = efficiency_frame(results, n_boot, seed)
    title = "Efficiency: what an episode costs, per arm and setting"
    if data.empty:
        return Table("efficiency", title, pd.DataFrame(), data,
                     ["No cost columns in these runs (run files from before hscale counted "
                      "tokens, or external results)."])
    data = data.assign(cell=[_cell(m, lo, hi) for m, lo, hi in
                             zip(data["mean"], data["lo"], data["hi"], strict=True)])
    index = [*GROUP[:1], "model", "algorithm", "method", "setting"]
    wide = data.pivot_table(index=index, columns="measure", values="cell",
                            aggfunc="first").reset_index()
    solved = data[data.measure.isin(["tokens", "seconds"])].pivot_table(
        index=index, columns="measure", values="per_solved", aggfunc="first")
    solved.columns = [f"{c} per solved" for c in solved.columns]
    pass1 = data.drop_duplicates(index).set_index(index)["pass1"].rename("Pass@1 (%)")
    wide = wide.merge(pass1.reset_index(), on=index).merge(solved.reset_index(), on=index,
                                                             how="left")
    for column in solved.columns:
        wide[column] = wide[column].map(lambda v: "—" if not np.isfinite(v) else f"{v:,.1f}")
    wide["Pass@1 (%)"] = wide["Pass@1 (%)"].map(lambda v: f"{v:.1f}")
    order = {m: i for i, m in enumerate(order_methods(wide["method"].unique()))}
    wide = wide.sort_values(["method", "setting"],
                            key=lambda c: c.map(order) if c.name == "method" else c)
    wide["setting"] = wide["setting"].map(setting_label)
    titles = [t for t, _ in MEASURES if t in wide.columns]
    columns = [*index, "Pass@1 (%)", *titles, *solved.columns]
    return Table("efficiency", title, wide[columns].reset_index(drop=True), data,
                 [NOTE, *diversity_statements(data)])


def diversity_statements(data: pd.DataFrame) -> list[str]:
    """Does harness diversity cost more at inference? Each arm's tokens per episode under
    the base harness beside Single-Harness's (when both ran), in one sentence."""
    base = data[(data.measure == "tokens") & (data.setting == Setting.BASE)]
    single = base[base.method == "single-harness"]
    if single.empty or len(base) < 2:
        return []
    ref = float(single["mean"].iloc[0])
    parts = [f"{row.method} {row.mean:,.0f} ({(row.mean / ref - 1) * 100:+.0f}%)"
             for row in base.itertuples() if row.method != "single-harness"]
    return ["Does harness diversity cost more at inference? Tokens per episode under the base "
            f"harness: single-harness {ref:,.0f}; " + ", ".join(parts) + "."]


def harness_cost_table(results: Results, n_boot: int = 2000, seed: int = 0) -> Table:
    """Tokens per episode per component level (in-space configurations, all arms pooled):
    what each level of each component costs, whatever was trained."""
    title = "Efficiency by component level: tokens per episode (in-space, all arms)"
    ep = _measured(results)
    frame = pd.DataFrame()
    if not ep.empty:
        ep, factors = with_levels(ep.assign(tokens=_tokens(ep)))
        ep = ep[ep["tokens"].notna()]
        parts = [bootstrap_ci(ep, [f], value="tokens", n_boot=n_boot, seed=seed + i, scale=1.0)
                 .rename(columns={f: "level"}).assign(factor=f)
                 for i, f in enumerate(factors)] if len(ep) else []
        frame = pd.concat(parts, ignore_index=True) if parts else frame
    if frame.empty:
        return Table("efficiency_levels", title, frame, frame,
                     ["No in-space episodes with token counts."])
    names, titles = _level_names(results)
    frame = frame.assign(level=frame["level"].astype(int)).sort_values(["factor", "level"],
                                                                        kind="stable")
    frame["component"] = [titles.get(f, f) for f in frame["factor"]]
    frame["level_name"] = [names.get(f, {}).get(lv, str(lv))
                           for f, lv in zip(frame["factor"], frame["level"], strict=True)]
    shown = frame.assign(**{"tokens per episode": [_cell(m, lo, hi) for m, lo, hi in
                                                   zip(frame["mean"], frame["lo"], frame["hi"],
                                                       strict=True)]})
    return Table("efficiency_levels", title,
                 shown[["component", "level", "level_name", "tokens per episode"]]
                 .reset_index(drop=True), frame,
                 ["A level whose prompt or observations are longer costs tokens on every call; "
                  "one that makes the model finish sooner saves them."])


def _cell(m: float, lo: float, hi: float) -> str:
    if not np.isfinite(m):
        return "—"
    return f"{m:,.1f}" if not np.isfinite(lo) else f"{m:,.1f} [{lo:,.1f}, {hi:,.1f}]"


# --- the figure ---------------------------------------------------------------------------
def cost_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    options = options or Options()
    data = efficiency_frame(results, options.n_boot, options.seed)
    if data.empty:
        raise NoData("no token counts in these runs")
    return data[data.measure == "tokens"]


def plot_cost(data: pd.DataFrame):
    settings = list(dict.fromkeys(data["setting"]))
    fig, axes = figure(3.4 * len(settings) + 0.6, 3.4, len(settings))
    methods = order_methods(data["method"].unique())
    colors = _colors(methods)
    for ax, setting in zip(axes, settings, strict=True):
        part = data[data.setting == setting]
        for method in methods:
            row = part[part.method == method]
            if row.empty:
                continue
            err = np.nan_to_num([[row["mean"].iloc[0] - row["lo"].iloc[0]],
                                 [row["hi"].iloc[0] - row["mean"].iloc[0]]])
            ax.errorbar(row["mean"], row["pass1"], xerr=err, fmt="o", ms=4, capsize=2,
                        color=colors[method], label=method)
        ax.set(title=setting_label(setting), xlabel="tokens per episode")
    axes[0].set_ylabel("Pass@1 (%)")
    axes[-1].legend(fontsize=6, loc="best")
    fig.suptitle("Success against cost (final checkpoint; 95% intervals of tokens over tasks)")
    return fig


FIGURE = FigureSpec("cost", "Success against tokens per episode", cost_data, plot_cost)
