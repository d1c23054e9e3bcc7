"""Parsers on hostile model output against the same parsers on plain prose of the same length.

    pip install -e ".[test]" && python benchmarks/parsers.py

Model output is untrusted, and the compact context re-parses old turns at every model call,
so a parser whose regular expressions backtrack turns one bad turn into minutes (before this
benchmark, "<" followed by 100,000 spaces cost 50-100 s a parse). For every tool interface,
and the compact context's summary of a turn, each hostile shape of 100,000 characters
(tests/harness/helpers.py: unclosed tags, deep nesting, runs of spaces and newlines, ...) is
timed against a 100,000-character final answer of plain prose. Target: the slowest hostile
turn costs under 20x the prose turn of its parser, and under 50 ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.harness.helpers

from hscale.harness._types import Message  # noqa: E402
from hscale.harness.components import available, get  # noqa: E402
from hscale.harness.components._context import summarize  # noqa: E402
from tests.harness.helpers import hostile_turns  # noqa: E402

RATIO_TARGET = 20.0
SECONDS_TARGET = 0.05


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The least disturbed of ``repeat`` calls (other load only ever adds time)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    shapes = hostile_turns(args.chars)
    prose = ("the answer is plum . " * (args.chars // 21 + 1))[:args.chars]
    ok = True
    print(f"{'parser':<44} {'prose':>9} {'worst hostile':>14} {'ratio':>7}  shape")
    for name in available("tool_interface"):
        parse = get(name).parse
        for label, fn in ((name, parse),
                          (f"summary/{name}", lambda t, p=parse: summarize(
                              [Message("assistant", t)], p))):
            base = best_seconds(lambda fn=fn: fn(prose), args.repeat)
            worst, shape = max((best_seconds(lambda fn=fn, t=t: fn(t), args.repeat), s)
                               for s, t in shapes.items())
            ratio = worst / max(base, 1e-6)
            ok &= ratio < RATIO_TARGET and worst < SECONDS_TARGET
            print(f"{label:<44} {base * 1e3:7.2f}ms {worst * 1e3:12.2f}ms {ratio:6.1f}x  {shape}")
    print(f"target: worst < {RATIO_TARGET:.0f}x prose and < {SECONDS_TARGET * 1e3:.0f} ms: "
          f"{'PASS' if ok else 'MISS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
