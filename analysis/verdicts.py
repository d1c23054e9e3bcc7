"""One sentence per headline comparison, read off the same rows as comparisons.csv: what a
reader of a results section wants first, whether each of the papers' comparisons held.

A comparison is *resolved* when its Holm-adjusted p is below :data:`ALPHA` and its interval
leaves out 0. A resolved one with a reported difference of the same comparison is said to
``reproduce`` it (same sign) or to be ``opposite``; without one it is ``higher`` or
``lower``. An unresolved one says how large a difference this study could have seen (its
minimum detectable effect) when that is known, so "not resolved" is never read as "no
difference".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from hscale.analysis.naming import setting_label
from hscale.analysis.render import fmt_p

ALPHA = 0.05
KEYS = ("model", "algorithm", "setting", "method", "reference")


@dataclass(frozen=True)
class Verdict:
    """A comparison's numbers and the papers' differences (model, pp); its ``word``
    (reproduces, opposite, higher, lower, not resolved) and ``sentence`` follow from them."""

    method: str
    reference: str
    setting: str
    diff: float
    lo: float
    hi: float
    p_holm: float
    mde: float
    paper: tuple[tuple[str, float], ...]

    @property
    def word(self) -> str:
        return word_for(self.diff, self.lo, self.hi, self.p_holm, [d for _, d in self.paper])

    @property
    def sentence(self) -> str:
        where, word = setting_label(self.setting), self.word
        numbers = (f"{self.diff:+.1f} pp [{self.lo:+.1f}, {self.hi:+.1f}], "
                   f"Holm p = {fmt_p(self.p_holm)}")
        said = "; ".join(f"{model} {d:+.1f} pp" for model, d in self.paper)
        head = f"{self.method} vs {self.reference}, {where}: {numbers}"
        head += f" (the paper: {said})" if self.paper else ""
        if word == "not resolved":
            size = (f": differences under {self.mde:.1f} pp cannot be told apart at this size"
                    if math.isfinite(self.mde) else
                    f" at this size (its interval spans {self.hi - self.lo:.1f} pp)")
            return f"{head}; not resolved{size}."
        if word in ("reproduces", "opposite"):
            verb = ("reproduces the paper's direction" if word == "reproduces"
                    else "is opposite to the paper")
            return f"{head}; {verb}."
        return f"{self.method} is {word} than {self.reference}, {where}: {numbers}."


def resolved(lo: float, hi: float, p_holm: float) -> bool:
    return bool(p_holm < ALPHA and (lo > 0 or hi < 0))


def word_for(diff: float, lo: float, hi: float, p_holm: float,
             paper: Sequence[float] = ()) -> str:
    if not resolved(lo, hi, p_holm):
        return "not resolved"
    if not paper:
        return "higher" if diff > 0 else "lower"
    signs = {math.copysign(1, d) for d in paper if d != 0}
    if len(signs) != 1:  # the papers' own models disagree: nothing to reproduce
        return "higher" if diff > 0 else "lower"
    return "reproduces" if math.copysign(1, diff) in signs else "opposite"


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
            *(float(row[k]) for k in ("diff", "lo", "hi", "p_holm")),
            float(mde) if pd.notna(mde) else math.nan,
            paper_differences(reported, row["method"], row["reference"], row["setting"],
                              str(row.get("algorithm") or ""))))
    return out
