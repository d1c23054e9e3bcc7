"""Figures: each is a data function (a DataFrame you can inspect) and a drawing function.

Drawing uses ``matplotlib.figure.Figure`` directly, never pyplot, so it needs no display,
keeps no global state and works the same under Agg, in a notebook or in a thread.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hscale.analysis._bootstrap import CLUSTER
from hscale.analysis._load import RUN_GROUP, Results
from hscale.analysis._naming import default_reference, is_base_model, order_methods, setting_label
from hscale.analysis._passk import final_step, run_scores, summarize
from hscale.analysis._stats import GROUP, arm_intervals, paired_differences
from hscale.contracts import Setting
from hscale.registry import Registry


class NoData(ValueError):
    """Nothing to draw (for example no training metric): reported as skipped, not failed."""


@dataclass
class Options:
    reference: str | None = None
    n_boot: int = 2000
    seed: int = 0


def figure(width: float = 7.0, height: float = 4.0, ncols: int = 1):
    """A pyplot-free figure with ``ncols`` axes side by side."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def _colors(methods: list[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(methods) <= 10 else "tab20"]
    return {m: cmap(i % cmap.N) for i, m in enumerate(methods)}


def _need(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    if frame is None or frame.empty:
        raise NoData(what)
    return frame


# --- evaluation curves --------------------------------------------------------------------
def curve_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    """Pass@1 per evaluated step when some trained run was evaluated more than once
    (``evaluation.every``), each arm's curve starting from the base model's step-0 score
    where the arm has none of its own; else the training reward."""
    ep = results.episodes
    base = ep["method"].map(is_base_model).to_numpy(dtype=bool)
    trained = ep[~base]
    if len(trained) and trained.groupby(["method", "seed"], observed=True)["step"].nunique(
            ).max() > 1:
        scores = run_scores(trained, [*RUN_GROUP, "setting", "step"])
        start = run_scores(ep[base], [*RUN_GROUP, "setting", "step"])
        start = start[start["step"] == 0]
        scores = pd.concat([scores, _start_points(scores, start)], ignore_index=True)
        out = summarize(scores, ["method", "setting", "step"])
        return out.assign(smoothed=out["mean"], kind="Pass@1 (%)", window=1)
    train = results.train
    _need(train if "reward_mean" in train.columns else None, "no evaluation over steps and no "
          "reward_mean in train.parquet")
    per_seed = train.groupby(["method", "seed", "step"], observed=True)["reward_mean"].mean()
    scores = (per_seed * 100).rename("score").reset_index().astype({"method": str})
    out = summarize(scores.dropna(), ["method", "step"]).sort_values(["method", "step"])
    return _smooth(out).assign(setting="training", kind="training reward (%)")


def _start_points(scores: pd.DataFrame, start: pd.DataFrame) -> pd.DataFrame:
    """The base model's step-0 scores as step 0 of every arm of its group that was not
    evaluated at step 0 itself (every arm starts from that model)."""
    if start.empty:
        return start
    group = [c for c in ("source", "experiment", "model", "algorithm") if c in scores.columns]
    own0 = set(map(tuple, scores.loc[scores["step"] == 0, [*group, "method"]]
                   .astype(str).to_numpy()))
    arms = scores[[*group, "method"]].astype(str).drop_duplicates()
    arms = arms[[tuple(r) not in own0 for r in arms.to_numpy()]]
    joined = arms.merge(start.drop(columns="method").astype({c: str for c in group}),
                        on=group)
    return joined[scores.columns]


def _smooth(frame: pd.DataFrame) -> pd.DataFrame:
    """Rolling mean over a tenth of the steps: per-step training metrics are noisy."""
    window = max(1, int(frame["step"].nunique()) // 10)
    frame = frame.assign(smoothed=frame.groupby("method")["mean"].transform(
        lambda s: s.rolling(window, min_periods=1).mean()))
    return frame.assign(window=window).reset_index(drop=True)


def plot_curves(data: pd.DataFrame):
    data = _need(data, "no curves")
    settings = list(dict.fromkeys(data["setting"]))
    fig, axes = figure(max(4.6 * len(settings), 6.5), 3.8, len(settings))
    colors = _colors(order_methods(data["method"]))
    evaluated = data["kind"].iloc[0].startswith("Pass")
    for ax, setting in zip(axes, settings, strict=True):
        part = data[data["setting"] == setting]
        for method in order_methods(part["method"]):
            line = part[part["method"] == method].sort_values("step")
            ax.plot(line["step"], line["smoothed"], marker="o" if evaluated else None, ms=3,
                    color=colors[method], label=method, lw=1.2)
            if evaluated:
                std = line["std"].fillna(0).to_numpy()
                ax.fill_between(line["step"], line["mean"] - std, line["mean"] + std,
                                color=colors[method], alpha=0.12, lw=0)
        title = setting_label(setting) if evaluated else (
            "training reward: no intermediate evaluations"
            + (f" (rolling mean of {int(part['window'].iloc[0])} steps)"
               if part["window"].iloc[0] > 1 else ""))
        ax.set(title=title, xlabel="step", ylabel=data["kind"].iloc[0])
    axes[-1].legend(fontsize=7, loc="best")
    return fig


# --- ablation bars ------------------------------------------------------------------------
def ablation_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    """Pass@1 per arm, in- and out-of-space, with 95% intervals over training runs and tasks
    (hscale.analysis._stats.arm_intervals: the comparisons' model)."""
    ep = final_step(results.episodes)
    ep = ep[ep["setting"].isin([Setting.IN_SPACE, Setting.OUT_OF_SPACE])]
    _need(ep, "no in-space or out-of-space episodes")
    return arm_intervals(ep, ["method", "setting"])


def plot_ablation(data: pd.DataFrame):
    data = _need(data, "no ablation data")
    methods = order_methods(data["method"])
    settings = [s for s in (Setting.IN_SPACE, Setting.OUT_OF_SPACE) if s in set(data["setting"])]
    fig, (ax,) = figure(max(6.0, 0.75 * len(methods) + 2), 4.0)
    width = 0.8 / len(settings)
    x = np.arange(len(methods))
    for i, setting in enumerate(settings):
        part = data[data["setting"] == setting].set_index("method").reindex(methods)
        err = np.vstack([part["mean"] - part["lo"], part["hi"] - part["mean"]])
        ax.bar(x + (i - (len(settings) - 1) / 2) * width, part["mean"], width,
               yerr=np.nan_to_num(err), capsize=3, label=setting_label(setting))
    ax.set_xticks(x, methods, rotation=30, ha="right")
    ax.set(ylabel="Pass@1 (%)",
           title="Ablation: Pass@1 with 95% intervals over training runs and tasks")
    ax.legend(fontsize=8)
    return fig


# --- heat map -----------------------------------------------------------------------------
def heatmap_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    """Pass@1 of every arm under every evaluated harness (final checkpoint)."""
    ep = final_step(results.episodes)
    scores = run_scores(ep, ["method", "setting", "harness"])
    return summarize(scores, ["method", "setting", "harness"])


def plot_heatmap(data: pd.DataFrame):
    data = _need(data, "no evaluated harnesses")
    order = {s: i for i, s in enumerate((Setting.BASE, Setting.IN_SPACE, Setting.OUT_OF_SPACE))}
    cols = (data[["setting", "harness"]].drop_duplicates()
            .assign(o=lambda d: d["setting"].map(order).fillna(9))
            .sort_values(["o", "harness"])["harness"].tolist())
    methods = order_methods(data["method"])
    grid = data.pivot_table(index="method", columns="harness", values="mean").reindex(
        index=methods, columns=cols)
    fig, (ax,) = figure(max(6.0, 0.32 * len(cols) + 3), max(3.0, 0.35 * len(methods) + 1.6))
    image = ax.imshow(grid.to_numpy(), aspect="auto", cmap="viridis", vmin=0, vmax=100)
    ax.set_xticks(range(len(cols)), cols, rotation=70, ha="right", fontsize=7)
    ax.set_yticks(range(len(methods)), methods, fontsize=8)
    settings = data.drop_duplicates("harness").set_index("harness")["setting"].reindex(cols)
    for edge in np.flatnonzero(settings.to_numpy()[1:] != settings.to_numpy()[:-1]):
        ax.axvline(edge + 0.5, color="white", lw=2)  # base | in-space | out-of-space
    ax.set_title("Pass@1 (%) over the evaluated harnesses")
    fig.colorbar(image, ax=ax, fraction=0.03)
    return fig


# --- paired rewards -----------------------------------------------------------------------
def paired_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    """Per task x harness: mean reward difference of each arm to the reference (in-space)."""
    options = options or Options()
    ep = final_step(results.episodes)
    ep = ep[ep["setting"] == Setting.IN_SPACE]
    _need(ep, "no in-space episodes")
    parts = []
    for _, part in ep.groupby(list(GROUP), observed=True):
        methods = order_methods(part["method"].unique())
        ref = (options.reference if options.reference in methods
               else default_reference(methods))
        diffs = paired_differences(part, ref, methods, value="reward")
        if len(diffs):
            cell = diffs.groupby(["method", *CLUSTER, "harness"], observed=True)["diff"].mean()
            parts.append(cell.reset_index().assign(reference=ref))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def plot_paired(data: pd.DataFrame):
    data = _need(data, "fewer than two arms share tasks")
    methods = order_methods(data["method"])
    fig, (ax,) = figure(max(6.0, 0.75 * len(methods) + 2), 4.0)
    values = [data.loc[data["method"] == m, "diff"].to_numpy() * 100 for m in methods]
    ax.violinplot(values, showmeans=True, showextrema=False)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(1, len(methods) + 1), methods, rotation=30, ha="right")
    ax.set(ylabel="reward difference (pp)",
           title=f"Paired in-space reward vs {data['reference'].iloc[0]} (task x harness)")
    return fig


# --- component main effects ---------------------------------------------------------------
def effects_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    """Each arm's level effects (pp) with intervals over its training runs
    (hscale.analysis._component_tests), with the levels' and factors' names."""
    from hscale.analysis._component_tests import component_effects

    data, _ = component_effects(results.episodes, ["method"], interactions=False)
    names, titles = _level_names(results)
    data["level_name"] = [names.get(f, {}).get(int(lv), str(lv))
                          for f, lv in zip(data["factor"], data["level"], strict=True)]
    data["title"] = [titles.get(f, f) for f in data["factor"]]
    return data


def _level_names(results: Results) -> tuple[dict[str, dict[int, str]], dict[str, str]]:
    """Factor -> level index -> the level's name, and factor -> "S: system prompt", from the
    first run that records its space (the papers' components when it names none)."""
    from hscale.harness import COMPONENTS_OF_THE_PAPERS

    words = {c.name: c.description for c in COMPONENTS_OF_THE_PAPERS}
    papers = {c.factor: c.description for c in COMPONENTS_OF_THE_PAPERS}
    runs = results.runs
    for row in runs.itertuples() if "space" in runs else ():
        if isinstance(row.space, dict):
            components = getattr(row, "components", None)
            components = components if isinstance(components, dict) else {}
            names = {f: dict(enumerate(map(str, levels))) for f, levels in row.space.items()
                     if isinstance(levels, list | tuple)}
            titles = {f: f"{f}: " + (words.get(components[f], components[f].replace("_", " "))
                                     if f in components else papers.get(f, "")) for f in names}
            return names, {f: t.rstrip(": ") for f, t in titles.items()}
    return {}, {}


def plot_effects(data: pd.DataFrame):
    """A panel a component: each level's effect on Pass@1 (pp against the arm's in-space
    mean), one marker an arm spread across the level's width so none hides another, with
    its interval over training runs where the arm has two seeds; the legend beside the
    panels, never over the data."""
    data = _need(data, "no in-space harness configurations")
    factors = list(dict.fromkeys(data["factor"]))
    fig, axes = figure(2.3 * len(factors) + 1.6, 3.6, len(factors))
    methods = order_methods(data["method"])
    colors = _colors(methods)
    spread = np.linspace(-0.32, 0.32, len(methods)) if len(methods) > 1 else np.zeros(1)
    for ax, factor in zip(axes, factors, strict=True):
        part = data[data["factor"] == factor]
        for offset, method in zip(spread, methods, strict=True):
            line = part[part["method"] == method].sort_values("level")
            x = line["level"].to_numpy(dtype=float) + offset
            err = np.vstack([line["effect"] - line["lo"], line["hi"] - line["effect"]])
            ax.errorbar(x, line["effect"], yerr=np.nan_to_num(err), fmt="o", ms=3.5,
                        capsize=1.5, color=colors[method], label=method, lw=0.9)
        ax.axhline(0, color="grey", lw=0.7)
        ticks = part.drop_duplicates("level").sort_values("level")
        ax.set_title(ticks["title"].iloc[0] if "title" in part else factor, fontsize=9)
        ax.set_xticks(ticks["level"])
        if "level_name" in part:
            ax.set_xticklabels(ticks["level_name"], rotation=30, ha="right", fontsize=7)
        for edge in ticks["level"].to_numpy()[:-1]:
            ax.axvline(edge + 0.5, color="#eee", lw=0.8)
    axes[0].set_ylabel("effect on Pass@1 (pp)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="outside right upper")
    fig.suptitle("Component main effects, in-space (95% intervals over training runs)",
                 fontsize=10)
    return fig


# --- effective-group rate -----------------------------------------------------------------
def egr_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    train = results.train
    if "effective_group_rate" not in train.columns:
        raise NoData("train.parquet has no effective_group_rate column")
    per_seed = train.groupby(["method", "seed", "step"], observed=True)["effective_group_rate"]
    scores = (per_seed.mean() * 100).rename("score").reset_index().astype({"method": str})
    out = summarize(scores.dropna(), ["method", "step"]).sort_values(["method", "step"])
    return _smooth(out)


def plot_egr(data: pd.DataFrame):
    data = _need(data, "no effective-group rate")
    fig, (ax,) = figure(7.0, 3.8)
    colors = _colors(order_methods(data["method"]))
    for method in order_methods(data["method"]):
        line = data[data["method"] == method].sort_values("step")
        ax.plot(line["step"], line["smoothed"], color=colors[method], label=method, lw=1.2)
    window = int(data["window"].iloc[0])
    smooth = f", rolling mean of {window} steps" if window > 1 else ""
    ax.set(xlabel="training step", ylabel="effective-group rate (%)")
    ax.set_title(f"Groups holding both a success and a failure\n(mean over seeds{smooth})",
                 fontsize=10)
    ax.legend(fontsize=7)
    return fig


# --- distance to training -----------------------------------------------------------------
def distance_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    from hscale.analysis._effects import success_by_distance

    options = options or Options()
    return success_by_distance(results.episodes, results.train_sets(),
                               n_boot=options.n_boot, seed=options.seed)


def plot_distance(data: pd.DataFrame):
    data = _need(data, "no configuration harnesses with known training sets")
    fig, (ax,) = figure(6.5, 3.8)
    methods = order_methods(data["method"])
    colors = _colors(methods)
    for j, method in enumerate(methods):
        line = data[data["method"] == method].sort_values("distance")
        err = np.vstack([line["mean"] - line["lo"], line["hi"] - line["mean"]])
        ax.errorbar(line["distance"] + (j - (len(methods) - 1) / 2) * 0.03, line["mean"],
                    yerr=np.nan_to_num(err), marker="o", ms=3, capsize=2, lw=1,
                    color=colors[method], label=method)
    ax.set(xlabel="Hamming distance to the nearest training configuration",
           ylabel="Pass@1 (%)", title="Success against distance to training")
    ax.legend(fontsize=7)
    return fig


@dataclass(frozen=True)
class FigureSpec:
    name: str
    title: str
    data: Callable[[Results, Options], pd.DataFrame]
    draw: Callable[[pd.DataFrame], object]


# The report draws every registered figure, in order, under its registered name (the PNG's
# file stem): ``FIGURES.register("mine", FigureSpec(...))`` adds one.
FIGURES: Registry[FigureSpec] = Registry("figure")
for _spec in (
    FigureSpec("eval_curves", "Evaluation curves over steps", curve_data, plot_curves),
    FigureSpec("ablation", "Ablation bars with intervals", ablation_data, plot_ablation),
    FigureSpec("heatmap", "Success over the evaluated harnesses", heatmap_data, plot_heatmap),
    FigureSpec("paired_rewards", "Paired reward differences", paired_data, plot_paired),
    FigureSpec("main_effects", "Component main effects", effects_data, plot_effects),
    FigureSpec("effective_group_rate", "Effective-group rate over training", egr_data,
               plot_egr),
    FigureSpec("distance", "Success against distance to training", distance_data,
               plot_distance),
):
    FIGURES.register(_spec.name, _spec)
del _spec
FIGURES.register("scaling", "hscale.analysis._scaling:FIGURE")  # imported when drawn
FIGURES.register("pool_ranking", "hscale.analysis._pool_report:FIGURE")
FIGURES.register("cost", "hscale.analysis._efficiency:FIGURE")


def png_bytes(fig, dpi: int = 110) -> bytes:
    """The figure as PNG bytes (Agg canvas; no display needed)."""
    return _saved(fig, "png", dpi=dpi)


def pdf_bytes(fig) -> bytes:
    """The figure as one PDF page."""
    return _saved(fig, "pdf")


def _saved(fig, fmt: str, **options) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)  # savefig picks the format's own renderer
    buffer = io.BytesIO()
    fig.savefig(buffer, format=fmt, **options)
    return buffer.getvalue()
