"""The report's first screen: what was run, the headline comparisons as a forest plot of
differences with their intervals (the paper's difference marked beside each where it gives
one), and one sentence per comparison (hscale.analysis.verdicts), all from the rows of
comparisons.csv and rl_gain.csv. ``summary.png`` / ``summary.pdf`` put the same on one page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from hscale.analysis.load import Results
from hscale.analysis.naming import is_base_model, setting_label
from hscale.analysis.plots import NoData, figure
from hscale.analysis.verdicts import Verdict, verdicts

SETTINGS = ("in_space", "out_of_space", "base")
COLORS = {"reproduces": "#1a7f37", "opposite": "#c0392b", "higher": "#1f5fa8",
          "lower": "#1f5fa8", "not resolved": "#7a7a7a"}


@dataclass(frozen=True)
class RunSummary:
    """What was run, in the words of the first line of a results section."""

    arms: list[str]
    seeds: list[int]
    tasks: int
    harnesses: int
    models: list[str]
    backends: list[str]
    seconds: float
    episodes: int
    folder: str = ""

    def lines(self) -> list[tuple[str, str]]:
        took = (f"{self.seconds / 60:.1f} min of runs" if self.seconds >= 60
                else f"{self.seconds:.0f} s of runs") if math.isfinite(self.seconds) else "—"
        return [("arms", ", ".join(self.arms)), ("seeds", ", ".join(map(str, self.seeds))),
                ("evaluation", f"{self.tasks} tasks x {self.harnesses} harnesses, "
                               f"{self.episodes:,} episodes"),
                ("model", ", ".join(self.models)), ("backend", ", ".join(self.backends)),
                ("time", took), *((("runs", self.folder),) if self.folder else ())]


def run_summary(results: Results) -> RunSummary:
    """What was run; a pool evaluated alone is summarised by its pool episodes."""
    ep, runs = results.episodes, results.runs
    if ep.empty and not results.pool.empty:
        ep = results.pool
    measured = ep[ep["source"] == "measured"] if "source" in ep.columns else ep
    arms = [str(m) for m in dict.fromkeys(measured["method"].astype(str))]
    seconds = runs["seconds"].sum(min_count=1) if "seconds" in runs.columns else math.nan
    return RunSummary(
        arms=arms, seeds=sorted({int(s) for s in measured["seed"]}) if len(measured) else [],
        tasks=int(measured["task_id"].nunique()), harnesses=int(measured["harness"].nunique()),
        models=sorted({str(m) for m in runs.get("model", pd.Series(dtype=str))}) or ["—"],
        backends=sorted({str(b) for b in runs.get("backend", pd.Series(dtype=str)) if b})
        or ["—"], seconds=float(seconds) if pd.notna(seconds) else math.nan,
        episodes=len(measured), folder=str(results.root or ""))


def headline(comparisons: pd.DataFrame, gains: pd.DataFrame | None,
             reported: pd.DataFrame | None) -> list[Verdict]:
    """The headline comparisons' verdicts: every arm against the reference arm, then the
    reference arm against the base model (what RL added)."""
    found = verdicts(comparisons, reported)
    if gains is not None and len(gains):
        refs = set(comparisons["reference"]) if len(comparisons) else set()
        own = gains[gains["method"].isin(refs)] if refs else gains
        found += verdicts(own, reported)
    return found


def forest_frame(found: list[Verdict]) -> pd.DataFrame:
    rows = [{"label": f"{v.method} − {'base model' if is_base_model(v.reference) else v.reference}",
             "setting": v.setting, "diff": v.diff, "lo": v.lo, "hi": v.hi,
             "paper": (sum(d for _, d in v.paper) / len(v.paper)) if v.paper else math.nan,
             "word": v.word} for v in found]
    return pd.DataFrame(rows, columns=["label", "setting", "diff", "lo", "hi", "paper", "word"])


def plot_forest(frame: pd.DataFrame, fig=None):
    """Differences (pp) with their intervals, a panel a setting, a row a comparison; the
    paper's difference a hollow diamond on the row where it gives one; colour says the
    verdict (green reproduces, red opposite, blue resolved without a paper number, grey not
    resolved)."""
    if frame.empty:
        raise NoData("no paired comparison (one arm, or no shared tasks)")
    settings = [s for s in SETTINGS if s in set(frame["setting"])] + sorted(
        set(frame["setting"]) - set(SETTINGS))
    labels = list(dict.fromkeys(frame["label"]))
    height = max(2.4, 0.3 * len(labels) + 1.3)
    if fig is None:
        fig, axes = figure(3.2 + 2.6 * len(settings), height, ncols=len(settings))
    else:
        axes = list(fig.subplots(1, len(settings), squeeze=False)[0])
    y = {label: len(labels) - 1 - i for i, label in enumerate(labels)}
    for ax, setting in zip(axes, settings, strict=True):
        for row in frame[frame["setting"] == setting].itertuples():
            color = COLORS.get(row.word, "#333")
            ax.plot([row.lo, row.hi], [y[row.label]] * 2, color=color, lw=2.2)
            ax.plot(row.diff, y[row.label], "o", color=color, ms=6)
            if math.isfinite(row.paper):
                ax.plot(row.paper, y[row.label], "D", mfc="none", mec="black", ms=6)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_ylim(-0.7, len(labels) - 0.3)
        ax.set_yticks(list(y.values()), list(y) if ax is axes[0] else [], fontsize=8)
        ax.set_title(setting_label(setting), fontsize=10)
        ax.set_xlabel("difference in Pass@1 (pp)", fontsize=8)
        ax.grid(axis="y", color="#eee")
    fig.suptitle("Headline comparisons: measured difference, 95% interval "
                 "(◇ the paper's difference)", fontsize=10)
    return fig


def summary_page(summary: RunSummary, frame: pd.DataFrame, found: list[Verdict]):
    """One page: what was run, the forest plot, the sentences (slides, a paper draft)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11.69, 8.27), layout="constrained")  # A4 landscape: a slide
    top, plot, words = fig.subfigures(3, 1, height_ratios=[0.09, 0.56, 0.35])
    text = "   ".join(f"{k}: {v}" for k, v in summary.lines())
    top.text(0.02, 0.9, "hscale: headline results", fontsize=14, weight="bold", va="top")
    top.text(0.02, 0.45, _wrap(text, 170), fontsize=8, va="top")
    if frame.empty:
        plot.text(0.02, 0.5, "No paired comparison was possible.", fontsize=10)
    else:
        plot_forest(frame, plot)
    said = "\n".join(_wrap("• " + v.sentence, 190) for v in found[:16]) or "—"
    if len(found) > 16:
        said += f"\n… {len(found) - 16} more in report.html"
    words.text(0.02, 0.98, said, fontsize=6.8, va="top")
    return fig


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text
