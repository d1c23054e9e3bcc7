"""Harness-S's three properties of a sibling pool, measured from evaluations of the pool
before (and during) training: why rescuing a zero-signal group under a sibling can work.

- Locality: an edit repairs a set of the base harness's failures and breaks a set of its
  successes; per sibling, the tasks it repairs and the tasks it regresses (a task's outcome
  is its majority over the runs evaluated).
- Complementarity: the oracle union of the siblings (a task counts when some sibling solves
  it) covers more tasks than any one sibling, and more than the base harness given as many
  attempts (its pass@k, k the pool's size, from its own repeated runs).
- Non-stationarity: the siblings' ranking by success changes between checkpoints (Kendall's
  tau between consecutive evaluated steps, and the best sibling at each).

Inputs are eval.parquet-shaped rows (``harness``, ``task_id``, ``success``, and ``step`` and
``run`` where there are several).
"""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd


def _outcomes(episodes: pd.DataFrame) -> pd.DataFrame:
    """harness x task: solved on most of its runs (ties count as solved: at least half)."""
    rate = episodes.groupby(["harness", "task_id"], observed=True)["success"].mean()
    return (rate >= 0.5).unstack("task_id")


def locality(episodes: pd.DataFrame, base: str) -> pd.DataFrame:
    """Per sibling: tasks both were evaluated on, the base harness's failures it repairs, its
    successes it regresses, and the repaired tasks by name."""
    solved = _outcomes(episodes)
    if base not in solved.index:
        raise ValueError(f"the base harness {base} was not evaluated")
    rows = []
    for harness in solved.index.drop(base):
        both = solved.loc[[base, harness]].dropna(axis=1)
        ref, mine = both.loc[base].astype(bool), both.loc[harness].astype(bool)
        repaired = sorted(both.columns[~ref & mine])
        rows.append({"harness": harness, "tasks": both.shape[1],
                     "base_failures": int((~ref).sum()), "repaired": len(repaired),
                     "regressed": int((ref & ~mine).sum()),
                     "net": len(repaired) - int((ref & ~mine).sum()),
                     "repaired_tasks": " ".join(map(str, repaired))})
    return pd.DataFrame(rows, columns=["harness", "tasks", "base_failures", "repaired",
                                       "regressed", "net", "repaired_tasks"])


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of a task solved ``c`` times in ``n`` attempts."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def complementarity(episodes: pd.DataFrame, base: str) -> pd.DataFrame:
    """Coverage (share of the tasks every harness was evaluated on, %) of each sibling, of the
    oracle union of the siblings, and of the base harness given as many attempts as there
    are siblings (``base_attempts`` says how many runs that estimate rests on; fewer runs
    than siblings make it pass@runs, a lower bound)."""
    solved = _outcomes(episodes).dropna(axis=1)
    siblings = solved.index.drop(base, errors="ignore")
    if solved.empty or not len(siblings):
        return pd.DataFrame(columns=["what", "coverage", "tasks", "note"])
    tasks = solved.columns
    rows = [{"what": h, "coverage": 100 * solved.loc[h].astype(bool).mean(),
             "tasks": len(tasks), "note": "sibling"} for h in siblings]
    union = solved.loc[siblings].astype(bool).any(axis=0)
    rows.append({"what": "oracle union of the siblings", "coverage": 100 * union.mean(),
                 "tasks": len(tasks), "note": f"{len(siblings)} siblings"})
    if base in solved.index:
        own = episodes[(episodes["harness"] == base) & episodes["task_id"].isin(tasks)]
        counts = own.groupby("task_id", observed=True)["success"].agg(["size", "sum"])
        n = int(counts["size"].min()) if len(counts) else 0
        k = min(len(siblings), n)
        value = np.mean([pass_at_k(int(r.size), int(r.sum), k) for r in counts.itertuples()])
        rows.append({"what": f"base harness, pass@{k}", "coverage": 100 * value,
                     "tasks": len(tasks),
                     "note": f"{n} runs a task" + ("" if k == len(siblings)
                                                   else f": fewer than {len(siblings)}")})
    return pd.DataFrame(rows)


def nonstationarity(episodes: pd.DataFrame, base: str | None = None) -> pd.DataFrame:
    """Per pair of consecutive evaluated steps: Kendall's tau between the siblings' success
    rates, how many sibling pairs swap order, and the best sibling before and after."""
    from scipy.stats import kendalltau

    siblings = episodes if base is None else episodes[episodes["harness"] != base]
    rates = siblings.groupby(["step", "harness"], observed=True)["success"].mean().unstack()
    rates = rates.dropna(axis=1)
    rows = []
    steps = list(rates.index)
    for before, after in zip(steps, steps[1:], strict=False):
        a, b = rates.loc[before], rates.loc[after]
        tau = kendalltau(a, b).statistic if a.nunique() > 1 and b.nunique() > 1 else np.nan
        names = list(rates.columns)
        swaps = sum(1 for i in range(len(names)) for j in range(i + 1, len(names))
                    if (a.iloc[i] - a.iloc[j]) * (b.iloc[i] - b.iloc[j]) < 0)
        rows.append({"from_step": int(before), "to_step": int(after), "siblings": len(names),
                     "kendall_tau": float(tau), "swapped_pairs": swaps,
                     "best_before": str(a.idxmax()), "best_after": str(b.idxmax())})
    return pd.DataFrame(rows, columns=["from_step", "to_step", "siblings", "kendall_tau",
                                       "swapped_pairs", "best_before", "best_after"])
