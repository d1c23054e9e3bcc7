"""Record tests/train/golden/demo_quick.json again from a ``--quick`` demo's runs, shaped as
tests/train/test_demo_quick.py reads it: per arm, the eval.parquet and train.parquet columns
the golden rows pin (those of the file as it is; wall-clock metrics and columns added to the
contract since are left out), as lists. Only when a change is meant to alter the rows
(issue 56: the sampler's draws), in a commit of its own.

    hscale run experiments/demo.yaml --quick --out /tmp/q --workers 2
    python benchmarks/golden_rows.py /tmp/q/demo-quick            # writes the golden file
    python benchmarks/golden_rows.py /tmp/q/demo-quick --check    # compares only
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

GOLDEN = Path(__file__).resolve().parents[1] / "tests" / "train" / "golden" / "demo_quick.json"


def rows(demo: Path, golden: dict) -> dict:
    out = {}
    for run_dir in sorted(demo.glob("*/0")):
        arm = run_dir.parent.name
        shape = golden.get(arm) or next(iter(golden.values()))
        evals = pd.read_parquet(run_dir / "eval.parquet")[list(shape["eval"])]
        train = pd.read_parquet(run_dir / "train.parquet")
        train = train[[c for c in shape["train"] if c in train.columns]]
        out[arm] = {"eval": evals.to_dict(orient="list"),
                    "train": train.to_dict(orient="list")}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("demo", type=Path, help="the demo-quick folder of a --quick run")
    parser.add_argument("--check", action="store_true", help="compare with the file only")
    args = parser.parse_args()
    golden = json.loads(GOLDEN.read_text())
    new = rows(args.demo, golden)
    # json round trip: numpy scalars as Python ones, as the file holds them
    text = json.dumps(new,
                      separators=(",", ":"), default=lambda v: v.item())
    if args.check:
        same = json.loads(text) == golden
        print("the rows are the recorded ones" if same else "the rows differ")
        return 0 if same else 1
    GOLDEN.write_text(text)
    print(f"wrote {GOLDEN} ({len(new)} arms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
