"""Analysis at scale: 1,000,000 evaluated episodes (9 arms x 3 seeds x 3 runs x 3 benchmarks x
21 harnesses x 196 tasks) written as run folders, loaded, and turned into every table of the
report (Tables 1, 2, 4, the ablation with its paired comparisons, Harness-S).
Target: files to all tables in under 5 s. Also times the extra report tables (component effects and
tests, distance) and, for scale, a bare pandas group-by of the same Pass@1 means.

    python benchmarks/analysis.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from hscale.analysis._effect_tables import distance_table, effects_table, tests_table  # noqa: E402
from hscale.analysis._load import load_results  # noqa: E402
from hscale.analysis._synthetic import synthetic_episodes, write_runs  # noqa: E402
from hscale.analysis._tables import all_tables  # noqa: E402

ARMS = ("single-harness", "first-order-3", "structured-18", "random-18", "full-243", "k1", "k4",
        "repeat-2", "random-assignment")
TARGET_S = 5.0


def timed(label: str, fn):
    start = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - start
    print(f"{label:50} {seconds:6.2f} s")
    return value, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    per_task = len(ARMS) * 3 * 3 * 3 * 21
    tasks = max(1, round(args.rows / per_task))
    probs = {arm: 0.30 + 0.02 * i for i, arm in enumerate(ARMS)}
    episodes, _ = timed("synthesise episodes", lambda: synthetic_episodes(
        probs, arms=ARMS, benchmarks=("A", "B", "C"), tasks=tasks))
    with tempfile.TemporaryDirectory() as root:
        timed(f"write {len(ARMS) * 3} run folders", lambda: write_runs(root, episodes))
        results, load_s = timed(f"load {len(episodes):,} rows", lambda: load_results(
            Path(root) / "synthetic"))
    import statsmodels.api  # noqa: F401  -- one-off import cost, not the tables'

    (tables, cells, _), tables_s = timed("all tables (Tables 1, 2, 4, ablation, Harness-S)",
                                         lambda: all_tables(results))
    _, extra_s = timed("effects, component tests, distance tables", lambda: (
        effects_table(results), tests_table(results), distance_table(results)))
    ep = results.episodes
    _, bare_s = timed("bare pandas: Pass@1 means only", lambda: ep.groupby(
        ["method", "benchmark", "setting", "seed", "run"], observed=True)["success"].mean()
        .groupby(["method", "benchmark", "setting"], observed=True).agg(["mean", "std"]))
    total = load_s + tables_s
    verdict = "PASS" if total < TARGET_S else "MISS"
    print(f"{len(ep):,} rows: files -> {len(tables)} tables in {total:.2f} s (load {load_s:.2f} "
          f"+ tables {tables_s:.2f}): {TARGET_S / total:.1f}x under the {TARGET_S:.0f} s target "
          f"({verdict}); extra tables {extra_s:.2f} s; the tables take {tables_s / bare_s:.0f}x "
          "a bare group-by that computes the Pass@1 means alone")
    return 0


if __name__ == "__main__":
    sys.exit(main())
