"""The command line's start-up: how long a user waits for commands that do little, for this
checkout or beside another one (issue 54: the way packages import must not slow them).

Each command runs as a user runs it (a new ``python -m hscale.cli`` process, from a scratch
folder so that neither checkout shadows the other), the two checkouts alternating, and the
best of ``--repeat`` counts (the least disturbed by the rest of the machine).

    python benchmarks/cli_startup.py                  # this checkout
    python benchmarks/cli_startup.py --vs ../old      # beside another checkout, as ratios
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "experiments" / "demo.yaml"
COMMANDS = {
    "hscale --help": ["--help"],
    "hscale run --help": ["run", "--help"],
    "hscale design oa harness --runs 18": ["design", "oa", "harness", "--runs", "18"],
    "hscale harness render S0-T1-O2-C0-W1": ["harness", "render", "S0-T1-O2-C0-W1"],
    "hscale model info hscale-tiny": ["model", "info", "hscale-tiny"],
    "hscale validate experiments/demo.yaml": ["validate", str(DEMO)],
}


def seconds(source: Path, args: list[str], cwd: Path) -> float:
    """Wall time of one ``hscale ARGS`` with ``source`` (a checkout) first on the path."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "hscale.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True)
    took = time.perf_counter() - began
    if done.returncode != 0:
        sys.exit(f"error: hscale {' '.join(args)} failed under {source}:\n"
                 f"{done.stderr[-1500:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vs", type=Path, help="another hscale checkout, timed beside")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each (best counts)")
    args = parser.parse_args()
    sources = {"this": ROOT} | ({"other": args.vs.resolve()} if args.vs else {})
    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for label, command in COMMANDS.items():
            for _ in range(args.repeat):
                for name, source in sources.items():
                    took = seconds(source, command, Path(scratch))
                    key = (label, name)
                    best[key] = min(best.get(key, took), took)
    width = max(map(len, COMMANDS))
    header = f"{'command':{width}}  {'this':>7}"
    print(header + (f"  {'other':>7}  {'ratio':>6}" if args.vs else ""))
    for label in COMMANDS:
        line = f"{label:{width}}  {best[label, 'this']:6.2f}s"
        if args.vs:
            other = best[label, "other"]
            line += f"  {other:6.2f}s  {other / best[label, 'this']:5.2f}x"
        print(line)
    if args.vs:
        print("ratio: the other checkout's time over this one's (above 1: this is faster)")


if __name__ == "__main__":
    main()
