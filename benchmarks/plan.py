"""Planning at paper scale: every arm x 3 seeds of each paper experiment (13,500 tasks,
300 steps), written to a temporary folder. Target: under 5 s per experiment.

    python benchmarks/plan.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from hscale.train.planning._plan import plan  # noqa: E402

ROOT = Path(__file__).resolve().parents[1] / "experiments" / "paper"


def main() -> int:
    worst = 0.0
    with tempfile.TemporaryDirectory() as out:
        for spec in sorted(ROOT.glob("*.yaml")):
            start = time.perf_counter()
            runs = plan(spec, out)
            seconds = time.perf_counter() - start
            worst = max(worst, seconds)
            print(f"{spec.stem:28} {len(runs):3} runs planned in {seconds:5.2f} s")
    verdict = "PASS" if worst < 5 else "MISS"
    print(f"slowest experiment {worst:.2f} s (target < 5 s): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
