"""Reward scripts scored from a training worker: the time and CPU a script check costs when
the script is started through ``sh`` and ``prlimit`` (hscale's way, which Python starts by
vfork), against a ``preexec_fn`` (which makes Python fork: the worker's page tables copied on
every check). Both in one run, alternating, from a process that holds torch and a worker's
memory, as the embedded trainer's evaluation does (ClawGym and the examples' tasks score
every episode this way).

    python benchmarks/checkers.py [--checks 100] [--resident-mb 400]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import hscale.harness.tasks._sandbox as sandbox
from hscale.harness.tasks import run_checker


def cpu() -> float:
    """CPU seconds of this process and its reaped children."""
    own, kids = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def checks(folder: Path, n: int) -> tuple[float, float]:
    """(wall s, CPU s) a check, over ``n`` checks of a one-line reward script."""
    script = folder / "reward.py"
    script.write_text("print(1.0)\n")
    spec = {"kind": "script", "path": str(script)}
    wall, used = time.perf_counter(), cpu()
    for _ in range(n):
        assert run_checker(spec, folder, "") == 1.0
    return (time.perf_counter() - wall) / n, (cpu() - used) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checks", type=int, default=100)
    parser.add_argument("--resident-mb", type=int, default=400)
    args = parser.parse_args()
    import torch  # what a training worker holds

    held = torch.ones(args.resident_mb << 18)  # float32: 4 bytes each, resident
    wrappers = sandbox._wrappers
    if wrappers() is None:
        raise SystemExit("error: sh or prlimit is not installed; hscale uses preexec_fn here")
    print(f"containment: {sandbox.containment().kind}; resident {held.numel() >> 18} MB")
    results: dict[str, list[tuple[float, float]]] = {"prlimit": [], "preexec_fn": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(3):
            for way in results:
                sandbox._wrappers = wrappers if way == "prlimit" else (lambda: None)
                results[way].append(checks(Path(tmp), args.checks // 3))
    sandbox._wrappers = wrappers
    best = {way: (min(w for w, _ in r), min(c for _, c in r)) for way, r in results.items()}
    for way, (wall, used) in best.items():
        print(f"{way:11} {wall * 1e3:6.1f} ms a check   {used * 1e3:6.1f} ms of CPU")
    (w1, c1), (w2, c2) = best["prlimit"], best["preexec_fn"]
    print(f"prlimit against preexec_fn: {w2 / w1:.2f}x the checks a second, "
          f"{c2 / c1:.2f}x less CPU a check")


if __name__ == "__main__":
    main()
