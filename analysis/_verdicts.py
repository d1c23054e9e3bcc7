"""One sentence per headline comparison, read off the same rows as comparisons.csv: what a
reader of a results section wants first, whether each of the papers' comparisons held.

A comparison is *resolved* when its simultaneous interval (the family's, hscale.analysis._stats)
leaves out 0, which is exactly when its adjusted p is below :data:`ALPHA`: the interval drawn
is the one the word reads. A resolved one with a reported difference of the same comparison
is said to ``reproduce`` it (same sign) or to be ``opposite``; without one it is ``higher``
or ``lower``. An unresolved one says how large a difference this study could have seen (its
minimum detectable effect), so "not resolved" is never read as "no difference".

The papers' number is also a hypothesis of its own: it is *consistent* with this study when
it lies inside the interval, else it lies *above* or *below* it. Sign and size are separate
questions: a study can reproduce a paper's direction and still measure a smaller gain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from hscale.analysis._naming import BASE_MODEL, is_base_model, setting_label
from hscale.analysis._render import fmt_p

ALPHA = 0.05
KEYS = ("model", "algorithm", "setting", "method", "reference")
PAPER_WORDS = ("consistent", "above", "below", "mixed")


@dataclass(frozen=True)
class Verdict:
    """A comparison's numbers and the papers' differences (model, pp); its ``word``
    (reproduces, opposite, higher, lower, not resolved), ``paper_word`` (consistent, above,
    below, mixed, or "" without a paper number) and ``sentence`` follow from them."""

    method: str
    reference: str
    setting: str
    diff: float
    lo: float
    hi: float
    p_adj: float
    mde: float
    paper: tuple[tuple[str, float], ...]
    m: int = 1
    seeds: int = 0

    @property
    def word(self) -> str:
        return word_for(self.diff, self.lo, self.hi, [d for _, d in self.paper])

    @property
    def paper_word(self) -> str:
        return paper_word(self.lo, self.hi, [d for _, d in self.paper])

    @property
    def interval(self) -> str:
        """How the interval was made, in a few words."""
        level = f"{1 - ALPHA:.0%}"
        return (f"simultaneous {level} over {self.m}" if self.m > 1 else level)

    @property
    def sentence(self) -> str:
        where, word = setting_label(self.setting), self.word
        ref = BASE_MODEL if is_base_model(self.reference) else self.reference
        p = fmt_p(self.p_adj)
        numbers = (f"{self.diff:+.1f} pp [{self.lo:+.1f}, {self.hi:+.1f}] ({self.interval}), "
                   f"adjusted p {p if p.startswith('<') else '= ' + p}")
        if word == "not resolved":
            seeds = (f" with {self.seeds} seed{'s' if self.seeds != 1 else ''}"
                     if self.seeds else " at this size")
            if not (math.isfinite(self.lo) and math.isfinite(self.hi)):
                numbers = f"{self.diff:+.1f} pp"
                size = ": no interval can be estimated (the paired cells do not vary)"
            elif math.isfinite(self.mde) and self.mde < 100:
                size = f": differences under {self.mde:.1f} pp cannot be told apart{seeds}"
            else:
                size = f": no difference could be told apart{seeds} and these few cells"
            text = f"{self.method} vs {ref}, {where}: {numbers}; not resolved{size}"
        elif word in ("reproduces", "opposite"):
            verb = ("reproduces the paper's direction" if word == "reproduces"
                    else "is opposite to the paper")
            text = f"{self.method} vs {ref}, {where}: {numbers}; {verb}"
        else:
            text = f"{self.method} is {word} than {ref}, {where}: {numbers}"
        return f"{text}{self.paper_clause}."

    @property
    def paper_clause(self) -> str:
        """'; the paper's -4.5 pp (Qwen3-4B) lies below this interval', or ''."""
        if not self.paper:
            return ""
        said = ", ".join(f"{d:+.1f} pp ({model})" for model, d in self.paper)
        which = "paper's" if len(self.paper) == 1 else "papers'"
        found = self.paper_word
        if not found:  # no interval to hold it against
            return f"; the {which} {said} cannot be checked without an interval"
        if found == "consistent":
            return f"; the {which} {said} {'is' if len(self.paper) == 1 else 'are'} inside it"
        if found == "mixed":
            return f"; of the {which} {said}, some lie inside it and some outside"
        verb = "lies" if len(self.paper) == 1 else "lie"
        return f"; the {which} {said} {verb} {found} this interval"


def resolved(lo: float, hi: float) -> bool:
    """The interval leaves out 0."""
    return bool(lo > 0 or hi < 0)


def word_for(diff: float, lo: float, hi: float, paper: Sequence[float] = ()) -> str:
    if not resolved(lo, hi):
        return "not resolved"
    if not paper:
        return "higher" if diff > 0 else "lower"
    signs = {math.copysign(1, d) for d in paper if d != 0}
    if len(signs) != 1:  # the papers' own models disagree: nothing to reproduce
        return "higher" if diff > 0 else "lower"
    return "reproduces" if math.copysign(1, diff) in signs else "opposite"


def paper_word(lo: float, hi: float, paper: Sequence[float]) -> str:
    """Where the papers' differences lie against the interval: consistent (all inside),
    above or below (all on that side), mixed; "" without a paper number or an interval."""
    if not paper or not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    places = {"consistent" if lo <= d <= hi else "above" if d > hi else "below"
              for d in paper}
    return places.pop() if len(places) == 1 else "mixed"


def paper_differences(reported: pd.DataFrame | None, method: str, reference: str,
                      setting: str, algorithm: str = "") -> tuple[tuple[str, float], ...]:
    """The reported ``method - reference`` (pp, Pass@1) in ``setting``, one a model the
    papers give it for: their own reported gain where they print one, else the mean over
    benchmarks of the two arms' numbers (their benchmark average where both have it)."""
    if reported is None or reported.empty:
        return ()
    rows = reported.fillna({"harness": "", "baseline": "", "algorithm": ""})
    rows = rows[(rows["setting"] == setting) & (rows["metric"] == "pass@1")]
    if algorithm:
        rows = rows[rows["algorithm"].isin([algorithm, ""])]
    out = []
    for model, part in rows.groupby("model", sort=False):
        found = _reported_gain(part, method, reference)
        if found is not None:
            out.append((str(model), found))
    return tuple(out)


def _reported_gain(part: pd.DataFrame, method: str, reference: str) -> float | None:
    for a, b, sign in ((method, reference, 1.0), (reference, method, -1.0)):
        gain = part[(part["method"] == a) & (part["baseline"] == b)]
        if len(gain):
            return sign * float(gain["mean"].mean())
    own = part[part["baseline"] == ""]
    for harness in dict.fromkeys(["", *own["harness"]]):  # the setting's own numbers first
        cells = own[own["harness"] == harness].pivot_table(index="benchmark", columns="method",
                                                           values="mean", aggfunc="mean")
        if method not in cells or reference not in cells:
            continue
        both = (cells[method] - cells[reference]).dropna()
        if len(both):
            return float(both["average"] if "average" in both else both.mean())
    return None


def verdicts(comparisons: pd.DataFrame, reported: pd.DataFrame | None = None
             ) -> list[Verdict]:
    """A verdict per measured comparison row, in the rows' order."""
    out = []
    for row in comparisons.to_dict("records"):
        if row.get("source", "measured") != "measured":
            continue
        mde = row.get("mde")
        out.append(Verdict(
            row["method"], row["reference"], row["setting"],
            *(float(row[k]) for k in ("diff", "lo", "hi", "p_adj")),
            float(mde) if pd.notna(mde) else math.nan,
            paper_differences(reported, row["method"], row["reference"], row["setting"],
                              str(row.get("algorithm") or "")),
            int(row.get("m") or 1), int(row.get("seeds") or 0)))
    return out


def with_verdicts(comparisons: pd.DataFrame, reported: pd.DataFrame | None) -> pd.DataFrame:
    """comparisons.csv's rows with each verdict's word and the papers' check beside them:
    ``verdict``, ``paper_pp`` (their mean), ``paper`` (model: pp, ...), ``paper_check``."""
    out = comparisons.copy()
    measured = (out["source"] == "measured") if "source" in out.columns else \
        pd.Series(True, index=out.index)
    found = iter(verdicts(out, reported))
    words, means, said, checks = [], [], [], []
    for is_measured in measured:
        v = next(found) if is_measured else None
        words.append(v.word if v else "")
        means.append(sum(d for _, d in v.paper) / len(v.paper) if v and v.paper else math.nan)
        said.append("; ".join(f"{model}: {d:+.2f}" for model, d in v.paper) if v else "")
        checks.append(v.paper_word if v else "")
    return out.assign(verdict=words, paper_pp=means, paper=said, paper_check=checks)
