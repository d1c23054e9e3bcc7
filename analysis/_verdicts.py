"""One sentence per headline comparison, read off the same rows as comparisons.csv.

A comparison is *resolved* when its simultaneous interval (the family's max-t interval,
hscale.analysis._stats) leaves out 0, which is exactly when its adjusted p is below
:data:`ALPHA`: the interval drawn is the one the word reads. A resolved one with a reported
difference of the same comparison is said to ``reproduce`` it (same sign) or to be
``opposite``; without one it is ``higher`` or ``lower``. An unresolved one is said to be
compatible with every difference its interval holds: never "no difference", never a
minimum detectable effect read off the same noisy data.

The papers' numbers are only checked where the study's setup is theirs (the same model and
task set: :func:`comparable`); there the paper's difference is a stated hypothesis with its
own test (``paper_p``: is this study's difference the paper's?) and the power that test has.
Elsewhere they are not compared, and the report says why. Sign and size are separate
questions: a study can reproduce a paper's direction and still measure a smaller gain.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from hscale.analysis._naming import BASE_MODEL, is_base_model, setting_label
from hscale.analysis._render import fmt_p
from hscale.contracts import Finding, PaperFit

ALPHA = 0.05


@dataclass(frozen=True)
class Verdict:
    """A comparison's numbers and the papers' differences (model, pp) where comparable; its
    ``word`` (reproduces, opposite, higher, lower, not resolved), ``paper_word``
    (consistent, above, below, mixed, or "" without a paper number) and ``sentence`` follow
    from them."""

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
    seeds_ref: int = 0
    se: float = math.nan
    df: float = math.nan

    @property
    def word(self) -> Finding:
        return word_for(self.diff, self.lo, self.hi, [d for _, d in self.paper])

    @property
    def paper_word(self) -> PaperFit:
        return paper_word(self.lo, self.hi, [d for _, d in self.paper])

    @property
    def interval(self) -> str:
        """How the interval was made, in a few words."""
        level = f"{1 - ALPHA:.0%}"
        return (f"simultaneous {level} over {self.m}" if self.m > 1 else level)

    @property
    def runs(self) -> str:
        """'3 seeds a side', '5 and 3 seeds'."""
        if not self.seeds:
            return ""
        if self.seeds == self.seeds_ref or not self.seeds_ref:
            return f"{self.seeds} seed{'s' if self.seeds != 1 else ''} a side"
        return f"{self.seeds} and {self.seeds_ref} seeds"

    @property
    def sentence(self) -> str:
        where, word = setting_label(self.setting), self.word
        ref = BASE_MODEL if is_base_model(self.reference) else self.reference
        p = fmt_p(self.p_adj)
        numbers = (f"{self.diff:+.1f} pp [{self.lo:+.1f}, {self.hi:+.1f}] ({self.interval}), "
                   f"adjusted p {p if p.startswith('<') else '= ' + p}")
        if word == Finding.NOT_RESOLVED:
            runs = f" ({self.runs})" if self.runs else ""
            if not (math.isfinite(self.lo) and math.isfinite(self.hi)):
                text = (f"{self.method} vs {ref}, {where}: {self.diff:+.1f} pp; not resolved: "
                        "no interval can be estimated (the runs and cells do not vary)")
            else:
                text = (f"{self.method} vs {ref}, {where}: {numbers}; not resolved{runs}: "
                        f"compatible with any difference from {self.lo:+.1f} to "
                        f"{self.hi:+.1f} pp")
        elif word in (Finding.REPRODUCES, Finding.OPPOSITE):
            verb = ("reproduces the paper's direction" if word == Finding.REPRODUCES
                    else "is opposite to the paper")
            text = f"{self.method} vs {ref}, {where}: {numbers}; {verb}"
        else:
            text = f"{self.method} is {word} than {ref}, {where}: {numbers}"
        return f"{text}{self.paper_clause}."

    @property
    def paper_p(self) -> float:
        """Two-sided p of the hypothesis that this difference is the papers' (their mean)."""
        if not self.paper or not (self.se > 0) or math.isnan(self.df):
            return math.nan
        from scipy.stats import norm, t

        stat = abs(self.diff - sum(d for _, d in self.paper) / len(self.paper)) / self.se
        return float(2 * (t.sf(stat, self.df) if math.isfinite(self.df) else norm.sf(stat)))

    @property
    def paper_clause(self) -> str:
        """'; the paper's -4.5 pp (Qwen3-4B) lies below this interval (...)', or ''."""
        if not self.paper:
            return ""
        said = ", ".join(f"{d:+.1f} pp ({model})" for model, d in self.paper)
        which = "paper's" if len(self.paper) == 1 else "papers'"
        found = self.paper_word
        if not found:  # no interval to hold it against
            return f"; the {which} {said} cannot be checked without an interval"
        test = ""
        if math.isfinite(self.paper_p):
            from hscale.analysis._power import mde

            power = mde(self.se, df=self.df, power=0.8)
            test = (f" (the test that this difference is the paper's: p = "
                    f"{fmt_p(self.paper_p)}; at this study's variance it detects a deviation "
                    f"of {power:.1f} pp from it with 80% power)")
        if found == PaperFit.CONSISTENT:
            verb = "is" if len(self.paper) == 1 else "are"
            return f"; the {which} {said} {verb} inside it{test}"
        if found == PaperFit.MIXED:
            return f"; of the {which} {said}, some lie inside it and some outside{test}"
        verb = "lies" if len(self.paper) == 1 else "lie"
        return f"; the {which} {said} {verb} {found} this interval{test}"


def resolved(lo: float, hi: float) -> bool:
    """The interval leaves out 0."""
    return bool(lo > 0 or hi < 0)


def word_for(diff: float, lo: float, hi: float, paper: Sequence[float] = ()) -> Finding:
    if not resolved(lo, hi):
        return Finding.NOT_RESOLVED
    if not paper:
        return Finding.HIGHER if diff > 0 else Finding.LOWER
    signs = {math.copysign(1, d) for d in paper if d != 0}
    if len(signs) != 1:  # the papers' own models disagree: nothing to reproduce
        return Finding.HIGHER if diff > 0 else Finding.LOWER
    return Finding.REPRODUCES if math.copysign(1, diff) in signs else Finding.OPPOSITE


def paper_word(lo: float, hi: float, paper: Sequence[float]) -> PaperFit:
    """Where the papers' differences lie against the interval: consistent (all inside),
    above or below (all on that side), mixed; "" without a paper number or an interval."""
    if not paper or not (math.isfinite(lo) and math.isfinite(hi)):
        return PaperFit.NONE
    places = {PaperFit.CONSISTENT if lo <= d <= hi else PaperFit.ABOVE if d > hi
              else PaperFit.BELOW for d in paper}
    return places.pop() if len(places) == 1 else PaperFit.MIXED


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
    """A verdict per measured comparison row, in the rows' order (``reported``: the papers'
    rows this study is comparable with, :func:`comparable`)."""
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
            int(row.get("m") or 1), int(row.get("seeds") or 0),
            int(row.get("seeds_ref") or 0) if pd.notna(row.get("seeds_ref")) else 0,
            float(row.get("se", math.nan)), float(row.get("df", math.nan))))
    return out


def _name(text: object) -> str:
    return re.sub(r"[^a-z0-9]", "", str(text).lower())


def comparable(reported: pd.DataFrame | None, models: list[str], benchmarks: list[str]
               ) -> tuple[pd.DataFrame | None, str]:
    """The papers' rows whose setup is this study's (the model, and a benchmark of the
    study's task sets: a name of one in the other's), and, when none is, one sentence that
    says why they are not compared."""
    if reported is None or reported.empty:
        return reported, ""
    ours = [_name(m) for m in models if str(m)]
    tasks = [_name(b) for b in benchmarks if str(b) and str(b) != "average"]

    def same_tasks(bench: str) -> bool:
        return any(t and (t in bench or bench in t) for t in tasks)

    def same_model(model: str) -> bool:
        return bool(model) and any(model in m or m in model for m in ours)

    theirs = reported["model"].map(_name) if len(reported) else pd.Series(dtype=str)
    benches = reported["benchmark"].map(_name) if len(reported) else pd.Series(dtype=str)
    # a paper's average is comparable where the study shares one of that model's benchmarks
    shared = {m for m, b in zip(theirs, benches, strict=True) if b != "average"
              and same_model(m) and same_tasks(b)}
    fits = [same_model(m) and (m in shared if b == "average" else same_tasks(b))
            for m, b in zip(theirs, benches, strict=True)]
    keep = reported[fits] if len(reported) else reported
    if len(keep):
        return keep, ""
    named = sorted({str(m) for m in reported.get("model", []) if pd.notna(m) and str(m)})
    their_tasks = sorted({str(b) for b in reported.get("benchmark", [])
                          if pd.notna(b) and str(b)} - {"average"})
    return keep, (f"The papers' numbers ({', '.join(named[:4])} on "
                  f"{', '.join(their_tasks[:4])}) are not compared: this study trains "
                  f"{', '.join(models) or 'another model'} on "
                  f"{', '.join(b for b in benchmarks if b != 'average') or 'other tasks'}, a "
                  "setup they did not measure.")


def with_verdicts(comparisons: pd.DataFrame, reported: pd.DataFrame | None) -> pd.DataFrame:
    """comparisons.csv's rows with each verdict's word and the papers' check beside them:
    ``verdict``, ``paper_pp`` (their mean), ``paper`` (model: pp, ...), ``paper_check``."""
    out = comparisons.copy()
    measured = (out["source"] == "measured") if "source" in out.columns else \
        pd.Series(True, index=out.index)
    found = iter(verdicts(out, reported))
    words, means, said, checks, tests = [], [], [], [], []
    for is_measured in measured:
        v = next(found) if is_measured else None
        words.append(v.word if v else "")
        means.append(sum(d for _, d in v.paper) / len(v.paper) if v and v.paper else math.nan)
        said.append("; ".join(f"{model}: {d:+.2f}" for model, d in v.paper) if v else "")
        checks.append(v.paper_word if v else "")
        tests.append(v.paper_p if v else math.nan)
    return out.assign(verdict=words, paper_pp=means, paper=said, paper_check=checks,
                      paper_p=tests)
