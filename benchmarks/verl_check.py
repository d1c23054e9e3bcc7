"""veRL's check of a paper experiment's runs (what ``hscale run SPEC --backend verl --dry-run``
does before it writes anything), side by side: every run's overrides composed and checked
against veRL's Hydra config (as it was) and the check now, which composes each distinct
verdict once (runs differ mostly in their names). Target: 5x. Needs the train extra (veRL).

    python benchmarks/verl_check.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from hscale.train.backends.verl import VerlBackend, build_overrides, validate_overrides
from hscale.train.planning._plan import plan

SPEC = Path(__file__).resolve().parents[1] / "experiments/paper/harness-scaling-4b-grpo.yaml"


def main() -> int:
    with tempfile.TemporaryDirectory() as out:
        manifests = [run.manifest for run in plan(SPEC, out)]
    validate_overrides(build_overrides(Path("."), manifests[0]))  # imports, warm caches
    start = time.perf_counter()
    for manifest in manifests:
        validate_overrides(build_overrides(Path("."), manifest))
    each = time.perf_counter() - start
    start = time.perf_counter()
    VerlBackend().check(manifests)
    once = time.perf_counter() - start
    ratio = each / once
    print(f"{SPEC.stem}: {len(manifests)} runs checked in {each:5.2f} s one by one, "
          f"{once:5.2f} s now: {ratio:.1f}x (target 5x): {'PASS' if ratio >= 5 else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
