"""The report's first screen: what was run, the answer in a few sentences made from the
numbers, the headline comparisons as a forest plot of differences with the simultaneous
intervals their verdicts read (the papers' differences marked inside or outside them), and
one sentence per comparison (hscale.analysis._verdicts), all from the rows of comparisons.csv
and rl_gain.csv. ``summary.png`` / ``summary.pdf`` put the same on one page.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass

import pandas as pd

from hscale.analysis._load import Results
from hscale.analysis._naming import is_base_model, setting_label
from hscale.analysis._plots import NoData, figure
from hscale.analysis._render import fmt_interval
from hscale.analysis._verdicts import Verdict, verdicts
from hscale.contracts import HEADLINE_SETTINGS, Finding, PaperFit

SETTINGS = HEADLINE_SETTINGS
COLORS = {Finding.REPRODUCES: "#1a7f37", Finding.OPPOSITE: "#c0392b",
          Finding.HIGHER: "#1f5fa8", Finding.LOWER: "#1f5fa8", Finding.NOT_RESOLVED: "#7a7a7a"}


@dataclass(frozen=True)
class RunSummary:
    """What was run, in the words of the first line of a results section."""

    arms: list[str]
    seeds: list[int]
    tasks: int
    harnesses: int
    models: list[str]
    backends: list[str]
    seconds: float  # summed over runs
    episodes: int
    folder: str = ""
    wall: float = math.nan  # while any run was running

    def lines(self) -> list[tuple[str, str]]:
        return [("arms", ", ".join(self.arms)), ("seeds", ", ".join(map(str, self.seeds))),
                ("evaluation", f"{self.tasks} tasks x {self.harnesses} harnesses, "
                               f"{self.episodes:,} episodes"),
                ("model", ", ".join(self.models)), ("backend", ", ".join(self.backends)),
                ("time", self.took()), *((("runs", self.folder),) if self.folder else ())]

    def took(self) -> str:
        if not math.isfinite(self.seconds):
            return "—"
        summed = f"{_duration(self.seconds)} summed over runs"
        if not math.isfinite(self.wall):
            return summed
        return f"{_duration(self.wall)} wall ({summed})"


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def wall_seconds(runs: pd.DataFrame) -> float:
    """Seconds during which at least one run was running (the union of the runs' spans: a
    pause between a crash and its resume is not counted)."""
    if not {"started", "ended"} <= set(runs.columns):
        return math.nan
    spans = sorted((a, b) for a, b in zip(runs["started"], runs["ended"], strict=True)
                   if a is not None and b is not None and pd.notna(a) and pd.notna(b))
    total, end = 0.0, None
    for began, ended in spans:
        if end is None or began > end:
            total += (ended - began).total_seconds()
            end = ended
        elif ended > end:
            total += (ended - end).total_seconds()
            end = ended
    return total if spans else math.nan


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
        episodes=len(measured), folder=str(results.root or ""), wall=wall_seconds(runs))


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


# -- the answer ----------------------------------------------------------------------------

def answer(found: list[Verdict], paper_note: str = "") -> list[str]:
    """Two to four sentences made from the verdicts: what is resolved and what is not (with
    the differences the data are compatible with, never "no difference"), what RL added,
    and the papers' numbers where the setup is theirs (else ``paper_note``: why not)."""
    if not found:
        return ["No paired comparison was possible (one arm, or no shared tasks)."]
    seeds = [v.seeds for v in found if v.seeds] + [v.seeds_ref for v in found if v.seeds_ref]
    out = [_arms_sentence([v for v in found if not is_base_model(v.reference)], seeds),
           _gain_sentence([v for v in found if is_base_model(v.reference)]),
           _paper_sentence(found) or paper_note]
    if seeds and max(seeds) == 1:
        out.append("One seed per arm: these intervals cover tasks and evaluation noise, not "
                   "training randomness (a second training seed changes them most; hscale "
                   "power says how many a difference needs).")
    return [s for s in out if s]


def _where(v: Verdict) -> str:
    return setting_label(v.setting)


def _numbers(v: Verdict) -> str:
    return f"{v.diff:+.1f} pp {fmt_interval(v.lo, v.hi, 1)}"


def _per(seeds: list[int]) -> str:
    """'with 3 seeds an arm', 'with 2 to 8 seeds an arm'."""
    if not seeds:
        return "at this size"
    low, high = min(seeds), max(seeds)
    count = f"{low}" if low == high else f"{low} to {high}"
    return f"with {count} seed{'s' if high != 1 else ''} an arm"


def _arms_sentence(arms: list[Verdict], seeds: list[int]) -> str:
    if not arms:
        return ""
    ref, m = arms[0].reference, arms[0].m
    per = _per(seeds)
    open_ = [v for v in arms if v.word == Finding.NOT_RESOLVED
             and math.isfinite(v.lo) and math.isfinite(v.hi)]
    span = (f"compatible with differences from {min(v.lo for v in open_):+.0f} to "
            f"{max(v.hi for v in open_):+.0f} pp" if open_ else "")
    done = [v for v in arms if v.word != Finding.NOT_RESOLVED]
    if not done:
        which = ("its 95% interval holds 0" if len(arms) == 1 else
                 f"each of the {len(arms)} simultaneous 95% intervals holds 0")
        return (f"Against {ref}, no comparison is resolved ({which}; {per}): the data are "
                f"{span or 'too few to bound the differences'}, so they neither show a "
                "difference nor rule one out.")
    said = "; ".join(f"{v.method} is {'higher' if v.diff > 0 else 'lower'} {_where(v)} "
                     f"({_numbers(v)})" for v in done[:3])
    more = f"; {len(done) - 3} more in the list below" if len(done) > 3 else ""
    rest = len(arms) - len(done)
    others = "the other one is" if rest == 1 else f"the other {rest} are"
    tail = f"; {others} not resolved ({span})" if rest and span else \
        f"; {others} not resolved" if rest else ""
    return (f"Against {ref}, {len(done)} of {len(arms)} comparisons are resolved at "
            f"95% simultaneous confidence (max-t over {m}; {per}): {said}{more}{tail}.")


def _gain_sentence(gains: list[Verdict]) -> str:
    if not gains:
        return ""
    arm = gains[0].method
    parts = [f"{_where(v)} {_numbers(v)}"
             + ("" if v.word == Finding.NOT_RESOLVED else " (resolved)") for v in gains]
    resolved = sum(v.word != Finding.NOT_RESOLVED for v in gains)
    verdict = ("none of them resolved" if not resolved else
               "all resolved" if resolved == len(gains) else f"{resolved} resolved")
    return (f"RL over the base model, {arm}: " + "; ".join(parts)
            + f" ({verdict}; simultaneous over the {gains[0].m} RL gains, max-t).")


def _paper_sentence(found: list[Verdict]) -> str:
    with_paper = [v for v in found if v.paper_word]
    if not with_paper:
        return ""
    inside = [v for v in with_paper if v.paper_word == PaperFit.CONSISTENT]
    outside = [v for v in with_paper if v.paper_word != PaperFit.CONSISTENT]
    text = (f"Where the papers measured this setup, their differences lie inside our "
            f"intervals for {len(inside)} of {len(with_paper)} comparisons")
    if outside:
        named = "; ".join(
            f"{v.method} vs {v.reference} {_where(v)}: the paper's "
            f"{sum(d for _, d in v.paper) / len(v.paper):+.1f} pp lies "
            f"{'outside' if v.paper_word == PaperFit.MIXED else v.paper_word} [{v.lo:+.1f}, "
            f"{v.hi:+.1f}]" for v in outside[:2])
        more = f", and {len(outside) - 2} more" if len(outside) > 2 else ""
        text += f"; not for {len(outside)} ({named}{more})"
    return text + "."


# -- the forest plot -----------------------------------------------------------------------

def forest_frame(found: list[Verdict]) -> pd.DataFrame:
    rows = [{"label": f"{v.method} − {'base model' if is_base_model(v.reference) else v.reference}",
             "setting": v.setting, "diff": v.diff, "lo": v.lo, "hi": v.hi,
             "paper": (sum(d for _, d in v.paper) / len(v.paper)) if v.paper else math.nan,
             "paper_word": v.paper_word, "word": v.word, "m": v.m,
             "family": "RL gains" if is_base_model(v.reference) else "arm comparisons"}
            for v in found]
    return pd.DataFrame(rows, columns=["label", "setting", "diff", "lo", "hi", "paper",
                                       "paper_word", "word", "m", "family"])


def adjustment(frame: pd.DataFrame) -> str:
    """The adjustment the intervals carry, in words for the plot's title."""
    families = frame.drop_duplicates("family")
    parts = [f"{int(r.m)} {r.family}" for r in families.itertuples() if r.m > 1]
    return ("max-t within each family: " + ", ".join(parts)) if parts else "one comparison"


def plot_forest(frame: pd.DataFrame, fig=None):
    """Differences (pp) with their simultaneous 95% intervals, a panel a setting, a row a
    comparison; the paper's difference a diamond on the row where it gives one, hollow when
    inside the interval, filled when outside; colour says the verdict (green reproduces, red
    opposite, blue resolved without a paper number, grey not resolved)."""
    if frame.empty:
        raise NoData("no paired comparison (one arm, or no shared tasks)")
    settings = [s for s in SETTINGS if s in set(frame["setting"])] + sorted(
        set(frame["setting"]) - set(SETTINGS))
    labels = list(dict.fromkeys(frame["label"]))
    height = max(2.6, 0.3 * len(labels) + 1.5)
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
                inside = row.paper_word == PaperFit.CONSISTENT
                ax.plot(row.paper, y[row.label], "D", ms=6, mec="black",
                        mfc="none" if inside else "black")
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_ylim(-0.7, len(labels) - 0.3)
        ax.set_yticks(list(y.values()), list(y) if ax is axes[0] else [], fontsize=8)
        ax.set_title(setting_label(setting), fontsize=10)
        ax.set_xlabel("difference in Pass@1 (pp)", fontsize=8)
        ax.grid(axis="y", color="#eee")
    papers = ("\n◇ the paper's difference inside the interval, ◆ outside it"
              if frame["paper"].notna().any() else "")
    fig.suptitle("Headline comparisons: difference and simultaneous 95% interval "
                 f"({adjustment(frame)}){papers}", fontsize=9)
    return fig


# -- one page ------------------------------------------------------------------------------

def summary_page(summary: RunSummary, frame: pd.DataFrame, found: list[Verdict],
                 said: list[str] | None = None):
    """One page: what was run, the answer, the forest plot, every comparison as a row of a
    compact table (slides, a paper draft); the page grows with the comparisons, so nothing
    is cut."""
    from matplotlib.figure import Figure

    said = said if said is not None else answer(found)
    rows = len(found)
    table_in = 0.17 * (rows + 1) + 0.3
    head_in = 0.75 + 0.17 * sum(len(_wrap(s, 165).splitlines()) for s in said)
    plot_in = max(3.2, 0.22 * len(dict.fromkeys(frame["label"])) + 1.6) if len(frame) else 0.6
    fig = Figure(figsize=(11.69, max(8.27, head_in + plot_in + table_in)), layout="constrained")
    top, plot, words = fig.subfigures(3, 1, height_ratios=[head_in, plot_in, table_in])
    text = "   ".join(f"{k}: {v}" for k, v in summary.lines())
    top.text(0.01, 0.98, "hscale: headline results", fontsize=13, weight="bold", va="top")
    top.text(0.01, 0.98 - 0.3 / head_in, _wrap(text, 190), fontsize=7, va="top",
             color="#444")
    top.text(0.01, 0.98 - 0.62 / head_in, "\n".join(_wrap(s, 165) for s in said),
             fontsize=8, va="top", linespacing=1.35)
    if frame.empty:
        plot.text(0.02, 0.5, "No paired comparison was possible.", fontsize=10)
    else:
        plot_forest(frame, plot)
    _comparison_table(words, found)
    return fig


def _comparison_table(sub, found: list[Verdict]) -> None:
    """Every comparison, one row: what, where, the difference and interval drawn, the
    verdict, the papers' number and whether it fits."""
    ax = sub.subplots()
    ax.axis("off")
    if not found:
        return
    cells = [[f"{v.method} − {'base model' if is_base_model(v.reference) else v.reference}",
              setting_label(v.setting), f"{v.diff:+.1f}",
              fmt_interval(v.lo, v.hi, 1) if math.isfinite(v.lo) else "—",
              v.interval, v.word,
              (f"{sum(d for _, d in v.paper) / len(v.paper):+.1f} ({v.paper_word})"
               if v.paper else "—")] for v in found]
    table = ax.table(cellText=cells, colLabels=["comparison", "setting", "Δ pp", "interval",
                                                "interval kind", "verdict", "paper pp"],
                     loc="upper left", cellLoc="left", colLoc="left",
                     colWidths=[0.25, 0.1, 0.06, 0.14, 0.17, 0.1, 0.18])
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    for cell in table.get_celld().values():
        cell.set_edgecolor("#ddd")
        cell.set_height(1.0 / (len(found) + 1))


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width)) or text
