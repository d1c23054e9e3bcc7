"""Pass@1, Pass@k and Avg@k with the papers' definitions, in percent.

Pass@1 (Harness Scaling): per evaluation run, the mean success over the tasks x harnesses of
a setting; then the mean and sample standard deviation over runs. A run is one (seed, run)
pair: each training seed's checkpoint evaluated ``runs`` times. The benchmark "average" gives
each benchmark equal weight within a run; "overall" averages every benchmark x setting cell of
the papers' settings (``OVERALL``), so a setting of one's own adds a column and moves no other.

Pass@k / Avg@k (Harness-S): per (seed, task, harness), n evaluations with c successes give the
unbiased Pass@k = 1 - C(n-c, k) / C(n, k) (Chen et al., 2021) and Avg@k = c / n; both are
averaged over tasks x harnesses, then over seeds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.special import gammaln

from hscale.analysis._load import RUN_GROUP
from hscale.contracts import Setting

RUN_KEYS = ("seed", "run")
CELL = (*RUN_GROUP, "benchmark", "setting")

# the settings the papers' "overall" averages
OVERALL = (Setting.BASE, Setting.IN_SPACE, Setting.OUT_OF_SPACE)


def pass_at_k(n: np.ndarray | int, c: np.ndarray | int, k: int) -> np.ndarray:
    """Unbiased Pass@k for n samples with c successes; NaN where n < k."""
    n = np.asarray(n, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    fails = n - c
    with np.errstate(invalid="ignore"):
        log_ratio = (gammaln(fails + 1) - gammaln(fails - k + 1)
                     - gammaln(n + 1) + gammaln(n - k + 1))
        out = np.where(fails < k, 1.0, 1.0 - np.exp(log_ratio))
    return np.where(n < k, np.nan, out)


def final_step(episodes: pd.DataFrame) -> pd.DataFrame:
    """Only each run's last evaluated checkpoint: tables report the trained policy."""
    if episodes["step"].nunique() <= 1:
        return episodes
    last = episodes.groupby([*RUN_GROUP, "seed"], observed=True)["step"].transform("max")
    return episodes[episodes["step"].to_numpy() == last.to_numpy()]


def run_scores(episodes: pd.DataFrame, by: Sequence[str] = CELL,
               runs: Sequence[str] = RUN_KEYS, value: str = "success") -> pd.DataFrame:
    """Per run: mean ``value`` (x100) over the rows of each ``by`` group; string keys."""
    keys = [*by, *runs]
    scores = (episodes.groupby(keys, observed=True, sort=False)[value].mean()
              .mul(100.0).rename("score").reset_index())
    for col in by:
        if isinstance(scores[col].dtype, pd.CategoricalDtype):
            scores[col] = scores[col].astype(str)
    return scores


def summarize(scores: pd.DataFrame, by: Sequence[str], col: str = "score") -> pd.DataFrame:
    """Mean, sample standard deviation and number of runs of each group."""
    out = scores.groupby(list(by), sort=False)[col].agg(["mean", "std", "count"])
    return out.rename(columns={"count": "n"}).reset_index()


def pass1(episodes: pd.DataFrame, by: Sequence[str] = RUN_GROUP,
          runs: Sequence[str] = RUN_KEYS, harness: bool = False) -> pd.DataFrame:
    """Pass@1 cells: per benchmark x setting, the benchmark average and the overall mean.

    Returns one row per group with ``benchmark``, ``setting`` (and ``harness`` when asked),
    ``mean``, ``std`` and ``n`` (runs). With ``harness``, cells are per evaluated harness.
    """
    episodes = final_step(episodes)
    inner = [*by, "benchmark", "setting", *(["harness"] if harness else [])]
    scores = run_scores(episodes, inner, runs)
    parts = [summarize(scores, inner)]
    rest = [c for c in inner if c != "benchmark"]
    averaged = scores.groupby([*rest, *runs], sort=False)["score"].mean().reset_index()
    parts.append(summarize(averaged, rest).assign(benchmark="average"))
    if not harness:
        papers = scores[scores["setting"].isin(OVERALL)]
        overall = papers.groupby([*by, *runs], sort=False)["score"].mean().reset_index()
        parts.append(summarize(overall, by).assign(benchmark="average", setting="overall"))
    return pd.concat(parts, ignore_index=True)[[*inner, "mean", "std", "n"]]


def passk(episodes: pd.DataFrame, k: int | None = None, by: Sequence[str] = RUN_GROUP,
          runs: str = "run", seeds: str = "seed") -> tuple[pd.DataFrame, int]:
    """Pass@k and Avg@k per benchmark x setting (and averaged), mean/std over seeds.

    ``k`` defaults to the smallest number of evaluations any (seed, task, harness) has.
    Returns the long table (``metric`` is ``pass@k`` or ``avg@k``) and the k used.
    """
    episodes = final_step(episodes)
    cell = [*by, "benchmark", "setting", seeds, "harness", "task_id"]
    counts = episodes.groupby(cell, observed=True, sort=False)["success"].agg(["count", "sum"])
    k = int(counts["count"].min()) if k is None else int(k)
    counts["pass"] = pass_at_k(counts["count"].to_numpy(), counts["sum"].to_numpy(), k) * 100
    counts["avg"] = counts["sum"] / counts["count"] * 100
    inner = [*by, "benchmark", "setting"]
    per_seed = counts.groupby([*inner, seeds], observed=True, sort=False)[["pass", "avg"]].mean()
    per_seed = per_seed.reset_index()
    for col in inner:
        per_seed[col] = per_seed[col].astype(str)
    rest = [*by, "setting"]
    averaged = per_seed.groupby([*rest, seeds], sort=False)[["pass", "avg"]].mean().reset_index()
    out = []
    for metric, col in ((f"pass@{k}", "pass"), (f"avg@{k}", "avg")):
        out.append(summarize(per_seed, inner, col).assign(metric=metric))
        out.append(summarize(averaged, rest, col).assign(metric=metric, benchmark="average"))
    return pd.concat(out, ignore_index=True)[[*inner, "metric", "mean", "std", "n"]], k
