"""The statistics measured on planted studies whose truth is known (hscale.analysis._planted):

1. null studies of every kind (alike, unequal stability, unequal seeds, per-run harness
   effects, arm x harness interaction, heavy-tailed runs, two settings of the same runs):
   the family's false resolutions (target at most 5%) and the simultaneous intervals'
   coverage (target at least 95%), each with its 95% binomial interval, and the intervals'
   width beside Welch's on run means (target within 10%);
2. power observed against `hscale power`'s prediction at two planted effects;
3. component tests under a per-run null (each run its own harness effects, none on
   average): the share of main-effect tests rejecting at 5%;
4. a staged design (looks at 4 and 8 seeds) against the fixed one (8 seeds): false
   confirmations under the null, power and the runs spent at a true difference.

    python benchmarks/calibration.py [--studies 1000]

Measured on 2 cores: about 20 minutes at 1,000 studies a kind.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from hscale.analysis import component_effects, judge_hypotheses
from hscale.analysis._planted import (
    Arm,
    Study,
    binomial_interval,
    check,
    effect_for_power,
    plant,
    run_variance,
    scenarios,
)
from hscale.contracts import HypothesisRecord, StudyRecord


def _rate(hits: float, n: int) -> str:
    lo, hi = binomial_interval(hits, n)
    return f"{100 * hits:5.1f}% [{100 * lo:4.1f}, {100 * hi:4.1f}]"


def nulls(n: int) -> None:
    print(f"1. Null studies ({n} a kind): false resolutions of a family (target <= 5%), "
          "coverage of its simultaneous intervals (target >= 95%), width / Welch's")
    print(f"{'kind':26} {'false (family)':>22} {'coverage (family)':>22} {'width':>6}")
    for kind, study in scenarios().items():
        began = time.perf_counter()
        found = check(study, n=n, seed=2026)
        print(f"{kind:26} {_rate(found['false_any'], n):>22} "
              f"{_rate(found['cover_all'], n):>22} {found['width_ratio']:6.2f}   "
              f"({time.perf_counter() - began:.0f} s)", flush=True)


def power(n: int) -> None:
    print(f"\n2. Power observed ({n} studies an effect) against hscale power's prediction")
    base = Study((Arm("ref", seeds=6, run_sd=6.0), Arm("other", seeds=6, run_sd=6.0)),
                 task_sd=10.0)
    v = run_variance(base)
    seeds = {"ref": 6, "other": 6}
    for target in (0.5, 0.8):
        effect = effect_for_power(v, seeds, target)
        study = replace(base, arms=(base.arms[0], replace(base.arms[1], effect=100 * effect)))
        found = check(study, n=n, seed=int(100 * target))
        print(f"planted {100 * effect:5.1f} pp: predicted {target:.0%}, observed "
              f"{_rate(found['power'], n)}", flush=True)


def components(n: int) -> None:
    from hscale.analysis._synthetic import default_eval_sets

    print(f"\n3. Component tests under a per-run null ({n} studies; each run its own harness "
          "effects, sd 8 pp, none on average): main-effect tests rejecting at 5% "
          "(target <= 5%)")
    labels = tuple(default_eval_sets()["in_space"])
    # harness_sd=0: harnesses that differ in difficulty alike for every run differ through
    # their components (the space is the components), so that would be a true effect
    study = Study(tuple(Arm(f"a{j}", run_harness_sd=8.0) for j in range(3)), labels=labels,
                  harness_sd=0.0)
    rejected = total = 0
    negative = 0
    for i in range(n):
        _, tests = component_effects(plant(study, [7, i]))
        main = tests[tests["kind"] == "main"].dropna(subset=["p"])
        rejected += int((main["p"] < 0.05).sum())
        total += len(main)
        negative += int((tests["F"].dropna() < 0).sum())
    print(f"rejected {_rate(rejected / max(total, 1), total)} of {total} tests; "
          f"negative statistics: {negative}", flush=True)


def staged(n: int) -> None:
    print(f"\n4. Staged (looks at 4 and 8 seeds) against fixed (8 seeds), {n} studies each")
    h = HypothesisRecord(arm="better", than="ref", setting="in_space")
    fixed = StudyRecord(hypotheses=[h], seeds={"ref": list(range(8)),
                                               "better": list(range(8))})
    looks = fixed.model_copy(update={"stages": [4, 8]})
    for effect in (0.0, 12.0):
        study = Study((Arm("ref", seeds=8, run_sd=6.0), Arm("better", effect=effect, seeds=8,
                                                          run_sd=6.0)), task_sd=10.0)
        hits = {"fixed": 0, "staged": 0}
        runs = {"fixed": 0.0, "staged": 0.0}
        for i in range(n):
            episodes = plant(study, [11, i])
            for name, record in (("fixed", fixed), ("staged", looks)):
                found = judge_hypotheses(episodes, record)[0]
                hits[name] += found.verdict == "confirmed"
                stop = found.look if found.verdict == "confirmed" and found.look else 2
                runs[name] += 16 if name == "fixed" else 2 * (4 if stop == 1 else 8)
        what = "false confirmations" if effect == 0 else "power"
        print(f"{effect:4.0f} pp: {what}: fixed {_rate(hits['fixed'] / n, n)}, staged "
              f"{_rate(hits['staged'] / n, n)}; runs: fixed {runs['fixed'] / n:.1f}, staged "
              f"{runs['staged'] / n:.1f} ({100 * (1 - runs['staged'] / runs['fixed']):.0f}% "
              "fewer)", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=1000)
    args = parser.parse_args(argv)
    n = args.studies
    nulls(n)
    power(max(n // 2, 50))
    components(max(n // 5, 50))
    staged(max(n // 2, 50))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
