"""The report's Harness-S pool tables and figure, from a rescue arm's pool evaluations
(``evaluation.pool: true``: its base harness and every sibling on the router's validation
tasks at every checkpoint, eval.parquet setting ``pool``): locality and complementarity at
the first checkpoint (before training when it is step 0), non-stationarity between
checkpoints, and each sibling's success over the checkpoints.
"""

from __future__ import annotations

import pandas as pd

from hscale.analysis._load import Results
from hscale.analysis._plots import FigureSpec, NoData, Options, figure
from hscale.analysis._pool_properties import complementarity, locality, nonstationarity
from hscale.analysis._render import Table, fmt
from hscale.contracts import Setting

WHY_NOT = ("no pool evaluations in these runs (a rescue arm evaluates its pool with "
           "evaluation.pool: true)")
KEYS = ["experiment", "method", "seed"]


def _runs(results: Results):
    """(experiment, method, seed, the base harness, its pool rows), one per rescue run."""
    pool = results.pool
    if pool.empty:
        return
    runs = results.runs.set_index(["experiment", "method", "seed"]) if len(results.runs) \
        else None
    for key, rows in pool.groupby(KEYS, observed=True, sort=True):
        sampled = rows[rows.get("decoding", "sampled").astype(str) != "greedy"] \
            if "decoding" in rows.columns else rows
        rows = sampled if len(sampled) else rows
        base = None
        if runs is not None and key in runs.index:
            train = runs.loc[key, "train_harnesses"]
            base = train[0] if isinstance(train, list | tuple) and train else None
        yield (*key, base or str(rows["harness"].iloc[0]), rows)


def pool_tables(results: Results) -> list[Table]:
    """Locality, complementarity and non-stationarity tables; none when no run evaluated
    its pool."""
    if results.pool.empty:
        return []
    local, comp, moving = [], [], []
    for experiment, method, seed, base, rows in _runs(results):
        first = rows[rows["step"] == rows["step"].min()]
        step = int(first["step"].iloc[0])
        keys = {"experiment": experiment, "method": method, "seed": seed, "step": step}
        local.append(locality(first, base).assign(**keys))
        comp.append(complementarity(first, base).assign(**keys))
        moving.append(nonstationarity(rows, base).assign(
            experiment=experiment, method=method, seed=seed))
    return [_locality_table(local), _complementarity_table(comp), _moving_table(moving)]


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _locality_table(parts: list[pd.DataFrame]) -> Table:
    data = _concat(parts)
    title = "Pool locality: what each sibling repairs and breaks against the base harness"
    if data.empty:
        return Table("pool_locality", title, pd.DataFrame(), data, [WHY_NOT])
    shown = data[["method", "seed", "step", "harness", "tasks", "base_failures", "repaired",
                  "regressed", "net"]].rename(columns={
                      "harness": "sibling", "base_failures": "base fails", "net": "net"})
    return Table("pool_locality", title, shown, data, [
        "Validation tasks (training split) at the first evaluated checkpoint; a task's outcome "
        "is its majority over the runs. Repaired: the base harness fails it, the sibling "
        "solves it; regressed: the other way round. The repaired tasks are in the CSV."])


def _complementarity_table(parts: list[pd.DataFrame]) -> Table:
    data = _concat(parts)
    title = "Pool complementarity: the siblings' oracle union against each one and the base"
    if data.empty:
        return Table("pool_complementarity", title, pd.DataFrame(), data, [WHY_NOT])
    shown = data.assign(coverage=[fmt(v, digits=1) for v in data["coverage"]])[
        ["method", "seed", "step", "what", "coverage", "tasks", "note"]].rename(
        columns={"coverage": "coverage (%)"})
    return Table("pool_complementarity", title, shown, data, [
        "Coverage: the share of validation tasks solved. The base harness's pass@k (k the "
        "pool's size) is the unbiased estimate from its own runs; with fewer runs than "
        "siblings it is pass@runs, a lower bound."])


def _moving_table(parts: list[pd.DataFrame]) -> Table:
    data = _concat(parts)
    title = "Pool non-stationarity: does the siblings' ranking change between checkpoints?"
    if data.empty:
        return Table("pool_nonstationarity", title, pd.DataFrame(), data,
                     [WHY_NOT + "; or one checkpoint only (set evaluation.every)"])
    shown = data.assign(kendall_tau=[fmt(v) for v in data["kendall_tau"]])[
        ["method", "seed", "from_step", "to_step", "siblings", "kendall_tau", "swapped_pairs",
         "best_before", "best_after"]]
    return Table("pool_nonstationarity", title, shown, data, [
        "Kendall's tau between the siblings' success rates at consecutive checkpoints (1: the "
        "same order; empty when every sibling scored alike); swapped pairs: sibling pairs "
        "whose order reversed."])


def ranking_data(results: Results, options: Options) -> pd.DataFrame:
    """Success rate per (method, step, harness), the first seed of each rescue arm."""
    frames = []
    for _, method, seed, base, rows in _runs(results):
        if frames and frames[-1]["method"].iloc[0] == method:
            continue
        rate = rows.groupby(["step", "harness"], observed=True)["success"].mean().reset_index()
        frames.append(rate.assign(method=method, seed=seed, base=rate["harness"] == base))
    if not frames:
        raise NoData(WHY_NOT)
    data = pd.concat(frames, ignore_index=True)
    if data["step"].nunique() < 2:
        raise NoData("the pool was evaluated at one checkpoint only (set evaluation.every)")
    return data


def plot_ranking(data: pd.DataFrame):
    methods = list(dict.fromkeys(data["method"]))
    fig, axes = figure(max(5.0, 4.6 * len(methods)), 3.6, len(methods))
    for ax, method in zip(axes, methods, strict=False):
        mine = data[data["method"] == method]
        for _, rows in mine.groupby("harness", observed=True):
            base = bool(rows["base"].iloc[0])
            ax.plot(rows["step"], 100 * rows["success"], marker="o", lw=2.2 if base else 1.0,
                    ls="--" if base else "-", color="black" if base else None,
                    alpha=1.0 if base else 0.7, label="base harness" if base else None)
        ax.set_title(f"{method} (seed {int(mine['seed'].iloc[0])})")
        ax.set_xlabel("step")
        ax.set_ylabel("success on validation tasks (%)")
        ax.legend(loc="best", fontsize=8)
    return fig


FIGURE = FigureSpec("pool_ranking", "Each sibling's success over the checkpoints",
                    ranking_data, plot_ranking)  # registered by name in hscale.analysis._plots


def routing_table(results: Results) -> list[Table]:
    """Rank-1 routing: Pass@1 with each held-out task under the sibling the profiles router
    put first, against the base harness on the same tasks (its in-space 'base' rows), at the
    final checkpoint; none when no run routed."""
    routed = results.routed
    if routed.empty:
        return []
    routed = routed[routed["decoding"].astype(str) != "greedy"] \
        if "decoding" in routed.columns and (routed["decoding"].astype(str) != "greedy").any() \
        else routed
    base = results.episodes[results.episodes["setting"].astype(str) == Setting.BASE]
    rows = []
    for (experiment, method), mine in routed.groupby(["experiment", "method"], observed=True):
        mine = mine[mine["step"] == mine["step"].max()]
        step = int(mine["step"].iloc[0])
        ref = base[(base["experiment"] == experiment) & (base["method"] == method)
                   & (base["step"] == step)]
        per_task = mine.groupby("task_id", observed=True)["success"].mean()
        ref_task = ref.groupby("task_id", observed=True)["success"].mean()
        shared = per_task.index.intersection(ref_task.index)
        picks = mine.drop_duplicates(["seed", "task_id"])["harness"].value_counts()
        rows.append({"experiment": experiment, "method": method, "step": step,
                     "tasks": int(per_task.size), "routed": 100 * per_task.mean(),
                     "paired_tasks": int(shared.size),
                     "routed_paired": 100 * per_task[shared].mean() if len(shared) else None,
                     "base_harness_paired": 100 * ref_task[shared].mean() if len(shared)
                     else None,
                     "picks": ", ".join(f"{h} x{n}" for h, n in picks.head(3).items())})
    data = pd.DataFrame(rows)
    shown = pd.DataFrame({
        "method": data["method"], "step": data["step"], "tasks": data["tasks"],
        "Pass@1 routed": [fmt(v) for v in data["routed"]],
        "same tasks: routed": [fmt(v) for v in data["routed_paired"]],
        "same tasks: base harness": [fmt(v) for v in data["base_harness_paired"]],
        "most picked": data["picks"]})
    return [Table("rank1_routing", "Rank-1 routing: each task under the sibling the judges "
                  "put first", shown, data, [
                      "Held-out tasks at the final checkpoint, sampled runs (%); the base "
                      "harness's Pass@1 on the tasks its 'base' rows share with the routed "
                      "ones. The judges' profiles are in each run's router_profiles.jsonl."])]
