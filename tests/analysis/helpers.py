"""Small results whose every number is known by hand (see the comments for the arithmetic)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from hscale.analysis import write_runs

H1, H2 = "S0-T0-O1-C0-W0", "S1-T2-O0-C1-W2"

# successes per (arm, seed, benchmark), ordered (H1,t0) (H1,t1) (H2,t0) (H2,t1)
HAND = {
    ("single-harness", 0, "b1"): [1, 0, 0, 0],  # 25 %
    ("single-harness", 1, "b1"): [1, 1, 0, 0],  # 50 %  -> mean 37.5, sd 17.68
    ("single-harness", 0, "b2"): [1, 1, 1, 1],  # 100 %
    ("single-harness", 1, "b2"): [1, 1, 1, 0],  # 75 %  -> mean 87.5, sd 17.68
    ("structured-18", 0, "b1"): [1, 1, 1, 0],  # 75 %
    ("structured-18", 1, "b1"): [0, 0, 0, 0],  # 0 %   -> mean 37.5, sd 53.03
    ("structured-18", 0, "b2"): [0, 0, 1, 1],  # 50 %
    ("structured-18", 1, "b2"): [1, 0, 1, 1],  # 75 %  -> mean 62.5, sd 17.68
}
# benchmark average per run: single 62.5, 62.5 -> 62.5 +- 0; structured 62.5, 37.5 -> 50 +- 17.68


def hand_episodes() -> pd.DataFrame:
    rows = []
    for (arm, seed, bench), successes in HAND.items():
        cells = [(h, t) for h in (H1, H2) for t in ("t0", "t1")]
        for (harness, task), success in zip(cells, successes, strict=True):
            rows.append({"experiment": "hand", "arm": arm, "seed": seed, "run": 0, "step": 5,
                         "benchmark": bench, "setting": "in_space", "harness": harness,
                         "task_id": task, "reward": float(success), "success": bool(success),
                         "turns": 3})
    return pd.DataFrame(rows)


def write_hand_runs(root: Path) -> Path:
    write_runs(root, hand_episodes(), model="m", steps=6)
    return root / "hand"
