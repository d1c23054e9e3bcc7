"""README's main job (``hscale run experiments/demo.yaml``), timed as a user runs it, against
an older checkout of hscale side by side (the one a user would have instead), pair by pair:
wall time, CPU time of everything it started (workers, the fork server), and whether the two
wrote the same rows (every column of eval, train, transcripts and kept rollouts but the
timings).

    python benchmarks/demo.py --quick                        # the smoke-test scale, 3 pairs
    python benchmarks/demo.py --baseline ../hscale-0.8       # ... against an older checkout
    python benchmarks/demo.py                                 # the whole demo, once

CPU time is the machine's busy time while the command runs (/proc/stat), so run it on an
idle machine: a fork server's workers are not the runner's children, and their time is
lost to ``getrusage``. Targets on 2 idle cores: the demo in at most 180 s of wall time and
360 s of CPU, ``--quick`` in at most 15 s of CPU.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "demo.yaml"
TARGETS = {False: (180.0, 360.0), True: (None, 15.0)}  # quick -> (wall s, CPU s)
TIMINGS = {"rollout_s", "update_s", "tokens_per_s", "seconds"}
TABLES = ("eval.parquet", "train.parquet", "transcripts.parquet", "rollouts.parquet")


def busy() -> float:
    """Seconds of CPU the machine has spent busy since boot (all cores)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def run(source: Path | None, out: Path, quick: bool) -> tuple[float, float]:
    """(wall s, CPU s) of one ``hscale run`` of the demo into ``out``, with ``source`` (an
    hscale checkout) first on the path, or this one."""
    env = {**os.environ, "PYTHONPATH": str((source or ROOT).resolve())}
    command = [sys.executable, "-m", "hscale.cli", "run", str(SPEC), "--out", str(out)]
    cpu, wall = busy(), time.perf_counter()
    # run from the output's folder: ``python -m`` puts the working folder first on the
    # path, which would shadow ``source`` from inside a checkout
    done = subprocess.run(command + (["--quick"] if quick else []), env=env, cwd=out.parent,
                          capture_output=True, text=True)
    wall, cpu = time.perf_counter() - wall, busy() - cpu
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return wall, cpu


def differences(a: Path, b: Path) -> list[str]:
    """The run tables whose rows differ between two runs folders (timings aside)."""
    found = []
    for path in sorted(a.rglob("eval.parquet")):
        run = path.parent.relative_to(a)
        for name in TABLES:
            if not (a / run / name).exists() and not (b / run / name).exists():
                continue
            if not (b / run / name).exists():
                found.append(f"{run}/{name} (missing)")
                continue
            x, y = pd.read_parquet(a / run / name), pd.read_parquet(b / run / name)
            columns = [c for c in x.columns if c not in TIMINGS]
            if list(x.columns) != list(y.columns) or not x[columns].equals(y[columns]):
                found.append(f"{run}/{name}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the demo at smoke-test scale")
    parser.add_argument("--baseline", type=Path, help="an older hscale checkout to compare")
    parser.add_argument("--pairs", type=int, help="runs of each (default 3 quick, 1 full)")
    args = parser.parse_args()
    pairs = args.pairs or (3 if args.quick else 1)
    wall_target, cpu_target = TARGETS[args.quick]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(pairs):  # alternate which goes first: a warm cache favours neither
            order = [("this", None), ("baseline", args.baseline)] if args.baseline else [
                ("this", None)]
            for name, source in order if i % 2 == 0 else order[::-1]:
                out = Path(tmp) / f"{name}-{i}"
                wall, cpu = run(source, out, args.quick)
                rows.append({"pair": i, "code": name, "wall_s": wall, "cpu_s": cpu})
                print(f"pair {i}: {name:8} {wall:7.1f} s wall {cpu:7.1f} s CPU", flush=True)
            if args.baseline:
                diff = differences(Path(tmp) / f"this-{i}", Path(tmp) / f"baseline-{i}")
                same = "identical" if not diff else "DIFFER: " + ", ".join(diff[:5])
                print(f"pair {i}: rows {same}")
    frame = pd.DataFrame(rows).groupby("code")[["wall_s", "cpu_s"]].median()
    this = frame.loc["this"]
    print(f"\nthis checkout (median of {pairs}): {this.wall_s:.1f} s wall, "
          f"{this.cpu_s:.1f} s CPU")
    if args.baseline:
        base = frame.loc["baseline"]
        print(f"baseline: {base.wall_s:.1f} s wall, {base.cpu_s:.1f} s CPU; speed-up "
              f"{base.wall_s / this.wall_s:.2f}x wall, {base.cpu_s / this.cpu_s:.2f}x CPU")
        # each pair ran back to back, so its ratio cancels the machine's slower drift
        ratios = pd.DataFrame(rows).pivot(index="pair", columns="code", values="cpu_s")
        ratios = ratios.baseline / ratios.this
        print(f"CPU ratio pair by pair: {', '.join(f'{r:.2f}x' for r in ratios)} "
              f"(median {ratios.median():.2f}x)")
    met = this.cpu_s <= cpu_target and (wall_target is None or this.wall_s <= wall_target)
    wall = f"wall <= {wall_target:.0f} s, " if wall_target else ""
    print(f"target ({wall}CPU <= {cpu_target:.0f} s): {'PASS' if met else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
