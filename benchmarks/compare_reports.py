"""Two reports of the same study side by side (issue 56: the demo before and after a change
that re-records its rows): every comparison's estimate and simultaneous interval, whether
the new estimate lies inside the old interval, and the verdicts, as markdown.

    python benchmarks/compare_reports.py OLD/demo/report NEW/demo/report
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

KEY = ["setting", "method", "reference"]


def _pp(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:+.1f}"


def table(old: pd.DataFrame, new: pd.DataFrame, title: str) -> tuple[list[str], int, int]:
    both = old.merge(new, on=KEY, suffixes=("_old", "_new"), how="outer")
    lines = [f"### {title}", "",
             "| setting | arm | vs | old (pp) [simultaneous 95%] | new (pp) [simultaneous 95%]"
             " | new inside old | verdict old -> new |", "|---|---|---|---|---|---|---|"]
    inside = changed = 0
    for _, r in both.iterrows():
        ok = (not math.isnan(r.lo_old)) and r.lo_old <= r.diff_new <= r.hi_old
        if math.isnan(r.lo_old):  # no interval (a cell that does not vary): equal estimates
            ok = r.diff_new == r.diff_old
        inside += ok
        changed += r.verdict_old != r.verdict_new
        lines.append(f"| {r.setting} | {r.method} | {r.reference} | {_pp(r.diff_old)} "
                     f"[{_pp(r.lo_old)}, {_pp(r.hi_old)}] | {_pp(r.diff_new)} "
                     f"[{_pp(r.lo_new)}, {_pp(r.hi_new)}] | {'yes' if ok else 'NO'} | "
                     f"{r.verdict_old} -> {r.verdict_new} |")
    lines.append("")
    lines.append(f"{inside} of {len(both)} new estimates inside the old simultaneous interval; "
                 f"{changed} verdicts changed.")
    return lines + [""], inside, len(both)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    out = []
    for name, title in [("comparisons.csv", "Every arm against the reference"),
                        ("rl_gain.csv", "RL gain over the base model")]:
        cols = KEY + ["diff", "lo", "hi", "verdict"]
        old = pd.read_csv(args.old / name)[cols]
        new = pd.read_csv(args.new / name)[cols]
        out += table(old, new, title)[0]
    old, new = pd.read_csv(args.old / "hypotheses.csv"), pd.read_csv(args.new / "hypotheses.csv")
    out += ["### Confirmatory hypotheses", "",
            "| hypothesis | old: diff (pp), one-sided bound, p, verdict |"
            " new: diff (pp), one-sided bound, p, verdict |", "|---|---|---|"]
    for (_, o), (_, n) in zip(old.iterrows(), new.iterrows(), strict=True):
        out.append(f"| {o.hypothesis} {o.claim} | {o['diff']:+.1f}, {o.bound:+.1f}, "
                   f"{o.p:.3g}, {o.verdict} | {n['diff']:+.1f}, {n.bound:+.1f}, {n.p:.3g}, "
                   f"{n.verdict} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
