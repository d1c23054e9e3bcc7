"""Intervals and tests that respect how the numbers were produced.

Arms are compared as training runs are: hscale.analysis._components models a paired
difference with training seeds, tasks, harnesses and evaluation runs as sources of variance,
and :func:`compare` reads each comparison's interval, t test and minimum detectable effect off
that one model. A family of comparisons (every arm against the reference; every arm against
the base model) is judged together with simultaneous intervals, so a verdict and the interval
drawn beside it never disagree.

Descriptive intervals of one arm's success are hscale.analysis._bootstrap's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hscale.analysis._bootstrap import CLUSTER
from hscale.analysis._naming import default_reference, is_base_model, order_methods
from hscale.analysis._passk import final_step
from hscale.contracts import Setting

PAIR = ("benchmark", "setting", "harness", "task_id", "seed", "run")
GROUP = ("source", "experiment", "model", "algorithm")
# settings whose harnesses are a sample of a space (their interaction with the arm is an
# error term); the others name their harnesses (the base harness, out-of-space ones)
SAMPLED = (Setting.IN_SPACE,)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm step-down adjusted p-values (NaNs stay NaN and do not count as tests): sorted
    ascending, the i-th (from 0) times m - i, made monotone, capped at 1. Written out
    because statsmodels' ``multipletests(method="holm")`` runs ``gc.collect()`` on every
    call (a sixth of a second each with a report's objects alive)."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if len(ok):
        order = ok[np.argsort(p[ok], kind="stable")]
        scaled = p[order] * (len(ok) - np.arange(len(ok)))
        out[order] = np.minimum(1.0, np.maximum.accumulate(scaled))
    return out


def _factorize(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype(np.int64), pd.Index(column.cat.categories)
    codes, uniques = pd.factorize(column)
    return codes.astype(np.int64), pd.Index(uniques)


def paired_differences(episodes: pd.DataFrame, reference: str, others: Sequence[str],
                       value: str = "success") -> pd.DataFrame:
    """``other - reference`` on every task x harness x seed x run both arms evaluated.

    Integer codes and bincounts instead of a pivot: a million rows pair up in a blink.
    Repeated rows of one pair and arm are averaged first.
    """
    empty = pd.DataFrame(columns=[*PAIR, "method", "diff"])
    m_codes, m_names = _factorize(episodes["method"])
    m_names = [str(m) for m in m_names]
    if reference not in m_names:
        return empty
    parts = [_factorize(episodes[c]) for c in PAIR]
    dims = tuple(max(len(u), 1) for _, u in parts)
    pair_codes, pair_keys = pd.factorize(np.ravel_multi_index([c for c, _ in parts], dims))
    size = len(pair_keys) * len(m_names)
    flat = pair_codes * len(m_names) + m_codes
    values = episodes[value].to_numpy(dtype=np.float64)
    counts = np.bincount(flat, minlength=size).reshape(len(pair_keys), len(m_names))
    sums = np.bincount(flat, weights=values, minlength=size).reshape(counts.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    ref = means[:, m_names.index(reference)]
    keys = np.unravel_index(pair_keys, dims)
    out = []
    for name in others:
        if name == reference or name not in m_names:
            continue
        diff = means[:, m_names.index(name)] - ref
        ok = ~np.isnan(diff)
        cols = {c: _take(u, k[ok]) for c, (_, u), k in zip(PAIR, parts, keys, strict=True)}
        out.append(pd.DataFrame({**cols, "method": name, "diff": diff[ok]}))
    return pd.concat(out, ignore_index=True) if out else empty


def _take(uniques: pd.Index, codes: np.ndarray):
    if uniques.dtype == object or isinstance(uniques.dtype, pd.StringDtype):
        return pd.Categorical.from_codes(codes, uniques)
    return uniques.to_numpy()[codes]


Pick = Callable[[list[str]], tuple[str | None, list[str]]]


def against_arm(reference: str | None) -> Pick:
    """How a group's methods pair up in :func:`compare_arms`: every arm against
    ``reference`` when it is an arm of the group, else the default one; the base model (no
    RL) is not an arm. ``pick(methods)`` -> (reference, compared), (None, []) for none."""
    def pick(methods: list[str]) -> tuple[str | None, list[str]]:
        arms = [m for m in methods if not is_base_model(m)]
        if not arms:
            return None, []
        return (reference if reference in arms else default_reference(arms)), arms

    return pick


def against_base_model(methods: list[str]) -> tuple[str | None, list[str]]:
    """How a group's methods pair up in :func:`rl_gains`: every arm against the group's base
    model (no RL); (None, []) when it has none."""
    base = [m for m in methods if is_base_model(m)]
    return (base[0], methods) if base else (None, [])


def pairing(reference: str | None) -> Pick:
    """The pairing a comparison against ``reference`` uses: the base model's when it is
    one, else the arms'."""
    if reference is not None and is_base_model(reference):
        return against_base_model
    return against_arm(reference)



def comparison_blocks(episodes: pd.DataFrame, pick: Pick, settings: Sequence[str],
                      value: str = "success") -> Iterator[tuple[dict, pd.DataFrame]]:
    """(identity, paired differences) of every comparison ``pick`` makes, per experiment
    group and setting, at each run's final step."""
    episodes = final_step(episodes)
    episodes = episodes[episodes["setting"].isin(list(settings))]
    for key, part in episodes.groupby(list(GROUP), observed=True, sort=False):
        ref, methods = pick(order_methods(part["method"].unique()))
        if ref is None or len(methods) < 2:
            continue
        diffs = paired_differences(part, ref, methods, value)
        ident = {**dict(zip(GROUP, map(str, key), strict=True)), "reference": ref}
        for (setting, method), block in diffs.groupby(["setting", "method"], observed=True,
                                                      sort=False):
            yield {**ident, "setting": str(setting), "method": str(method)}, block


def paired_blocks(episodes: pd.DataFrame, settings: Sequence[str] = (Setting.IN_SPACE,),
                  reference: str | None = None) -> Iterator[tuple[dict, pd.DataFrame]]:
    """(identity, paired differences) of every arm against ``reference`` (the base model's
    pairing when it is the base model), per experiment group and setting."""
    yield from comparison_blocks(episodes, pairing(reference), settings)


COLUMNS = [*GROUP, "setting", "method", "reference", "seeds", "seeds_ref", "tasks", "pairs",
           "diff", "se", "df", "df_spread", "p", "m", "crit", "p_adj", "lo", "hi", "lo_each",
           "hi_each", "mde", "note"]
# the parts of each difference's variance (proportion scale): each arm's run variance (one
# training run's mean, its seeds' spread) and the crossed parts (the arms' interactions with
# tasks and harnesses over their effective numbers), for hscale power and comparisons.csv
VARIANCES = ["var_run", "var_run_ref", "var_task", "var_harness", "n_task", "n_harness"]


@dataclass
class _Arm:
    """One arm's runs in one setting: each seed's mean, their mean and variance (NaN with
    one seed); ``borrowed``: the variance is the other arms' pooled one."""

    seeds: pd.Series
    var: float
    df: float
    borrowed: bool = False

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def mean(self) -> float:
        return float(self.seeds.mean())


def _arms(part: pd.DataFrame, value: str) -> dict[tuple[str, str], _Arm]:
    """(setting, method) -> its runs: each training run (seed) is one replicate, its mean
    over every episode it played in the setting; every run counts, whatever its seed label.
    An arm of one seed borrows the pooled run variance of the setting's other arms."""
    means = part.groupby(["setting", "method", "seed"], observed=True)[value].mean()
    out: dict[tuple[str, str], _Arm] = {}
    for (setting, method), seeds in means.groupby(level=[0, 1], observed=True, sort=False):
        runs = seeds.droplevel([0, 1]).astype(np.float64)
        out[str(setting), str(method)] = _Arm(
            runs, float(runs.var(ddof=1)) if len(runs) > 1 else math.nan, len(runs) - 1.0)
    for setting in {s for s, _ in out}:
        mine = [a for (s, _), a in out.items() if s == setting and a.n > 1]
        dof = sum(a.df for a in mine)
        if not dof:
            continue
        pooled = sum(a.var * a.df for a in mine) / dof
        for key, arm in out.items():
            if key[0] == setting and arm.n == 1:
                out[key] = _Arm(arm.seeds, pooled, dof, borrowed=True)
    return out


def _correlations(arms: dict[tuple[str, str], _Arm]) -> dict[tuple[str, str], float]:
    """Between two settings: the correlation of a run's means in both (one trained model
    evaluated twice), pooled over every arm's runs (each arm centred on its own mean): one
    number a pair of settings, steadier than any arm's few seeds give."""
    settings = sorted({s for s, _ in arms})
    out = {}
    for a, b in ((a, b) for a in settings for b in settings if a < b):
        sxy = sxx = syy = 0.0
        for method in {m for s, m in arms if s == a}:
            if (b, method) not in arms:
                continue
            both = pd.concat([arms[a, method].seeds, arms[b, method].seeds], axis=1).dropna()
            if len(both) < 2:
                continue
            x, y = (both.iloc[:, i] - both.iloc[:, i].mean() for i in range(2))
            sxy, sxx, syy = sxy + float(x @ y), sxx + float(x @ x), syy + float(y @ y)
        rho = sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else 0.0
        out[a, b] = out[b, a] = float(np.clip(rho, -1.0, 1.0))
    return out


def _crossed(block: pd.DataFrame, setting: str) -> tuple[list[tuple[float, float]], dict,
                                                          list[str]]:
    """The parts of a difference its runs do not vary by, from the paired cells' moments
    (hscale.analysis._components): the arms' interaction with tasks, and with harnesses
    where the setting's harnesses are a sample of a space. ((variance, df) terms, the
    components and their effective counts, notes)."""
    from hscale.analysis._components import estimate

    crossed = ("task", "harness") if setting in SAMPLED else ("task",)
    if len(block) < 3:
        return [], {}, ["no shared cells: the arms' interaction with tasks is not estimated"]
    comp = estimate(block)
    found = {k: (comp.values[k], comp.counts.get(k, math.nan), comp.dfs.get(k, math.nan))
             for k in crossed if not math.isnan(comp.values[k])}
    terms = [(v / n, df) for v, n, df in found.values() if v > 0]
    notes = [n for n in comp.notes if "seed" not in n]
    return terms, {"comp": comp, "found": found}, notes


def compare(episodes: pd.DataFrame, pick: Pick, settings: Sequence[str],
            value: str = "success", level: float = 0.95, power: float = 0.8) -> pd.DataFrame:
    """One family of comparisons, training runs as the replicates.

    Each arm's Pass@1 is the mean of its runs' means (every run it has, whatever the seed
    labels); a difference's variance is each arm's own run variance over its runs (Welch:
    an arm whose seeds diverge is judged by its own spread, never pooled with steadier
    arms) plus what the runs share, the arms' interactions with the tasks and the sampled
    harnesses (hscale.analysis._components' moments of the paired cells); its degrees of
    freedom are Satterthwaite's. An arm of one seed borrows the pooled run variance of the
    others (said in ``note``); with one seed in every arm, training randomness is not
    covered and the interval says so.

    The family is every row: its simultaneous intervals use the max-t critical value
    ``crit`` of the rows' joint distribution (hscale.analysis._families: the shared
    reference and a run evaluated in several settings correlate them), so ``lo``/``hi``
    leave out 0 exactly when ``p_adj`` < 1 - level; ``lo_each``/``hi_each`` are each row's
    own interval, ``mde`` the difference the family's test detects with ``power``.
    """
    from hscale.analysis._components import combined_df, welch_df
    from hscale.analysis._families import max_t

    episodes = final_step(episodes)
    episodes = episodes[episodes["setting"].isin(list(settings))]
    rows, blocks = [], []
    for key, part in episodes.groupby(list(GROUP), observed=True, sort=False):
        ref, methods = pick(order_methods(part["method"].unique()))
        if ref is None or len(methods) < 2:
            continue
        ident = {**dict(zip(GROUP, map(str, key), strict=True)), "reference": ref}
        arms = _arms(part, value)
        rho = _correlations(arms)
        diffs = paired_differences(part, ref, methods, value)
        mine = []
        for setting in [s for s in settings if (s, ref) in arms]:
            base = arms[setting, ref]
            for method in methods:
                if method == ref or (setting, method) not in arms:
                    continue
                arm = arms[setting, method]
                block = diffs[(diffs["setting"] == setting) & (diffs["method"] == method)]
                crossed, found, notes = _crossed(block, setting)
                row = {**ident, "setting": setting, "method": method, "seeds": arm.n,
                       "seeds_ref": base.n, "pairs": len(block),
                       "tasks": int(block[list(CLUSTER)].drop_duplicates().shape[0]),
                       "diff": 100 * (arm.mean - base.mean)}
                if math.isnan(arm.var) or math.isnan(base.var):  # one seed in every arm
                    comp = found.get("comp")
                    within = [] if comp is None else [
                        (comp.values[k] / comp.counts[k], comp.dfs[k])
                        for k in ("seed_task", "run", "residual")
                        if comp.counts and comp.values[k] > 0]
                    terms, run_terms = [*within, *crossed], []
                    notes.append("one seed per arm: training randomness is not covered")
                    df = combined_df(terms)
                else:
                    run_terms = [(arm.var / arm.n, arm.df), (base.var / base.n, base.df)]
                    terms = [*run_terms, *crossed]
                    df = welch_df(terms)
                    notes += [f"{who} has one seed: its run variance is the other arms' "
                              "pooled one" for who, a in ((method, arm), (ref, base))
                              if a.borrowed]
                variance = sum(v for v, _ in terms)
                se = math.sqrt(variance) if variance > 0 else math.nan
                if variance == 0:
                    notes.append("the runs and paired cells do not vary: no interval can be "
                                 "estimated")
                values = {k: v for k, (v, _, _) in found.get("found", {}).items()}
                counts = {k: n for k, (_, n, _) in found.get("found", {}).items()}
                row.update(se=100 * se, df=df, df_spread=df, note="; ".join(
                    dict.fromkeys(notes)), var_run=arm.var, var_run_ref=base.var,
                    var_task=values.get("task", math.nan),
                    var_harness=values.get("harness", math.nan),
                    n_task=counts.get("task", math.nan),
                    n_harness=counts.get("harness", math.nan),
                    p=_t_p(row["diff"], 100 * se, df))
                row["_run"] = bool(run_terms)
                row["_arms"] = (method, ref, setting)
                mine.append(row)
        blocks.append(_covariance(mine, arms, rho))
        rows += mine
    out = pd.DataFrame(rows, columns=[*COLUMNS, *VARIANCES, "_run", "_arms"])
    cov = _block_diagonal(blocks)
    t_stat = (out["diff"] / out["se"]).to_numpy(dtype=np.float64)
    crit, p_adj = max_t(cov, out["df"].to_numpy(dtype=np.float64), t_stat, level)
    out["m"] = len(out)
    out["crit"], out["p_adj"] = crit, p_adj
    each = np.array([_crit_one(level, df) for df in out["df"]], dtype=np.float64)
    for suffix, c in (("", crit), ("_each", each)):
        half = c * out["se"].to_numpy(dtype=np.float64)
        # a difference of success rates lies in [-100, +100] pp: so does its interval
        out["lo" + suffix] = (out["diff"] - half).clip(lower=-100.0)
        out["hi" + suffix] = (out["diff"] + half).clip(upper=100.0)
    from hscale.analysis._power import mde

    out["mde"] = [mde(se, critical=c, power=power, df=df)
                  for se, c, df in zip(out["se"], crit, out["df"], strict=True)]
    return out[[*COLUMNS, *VARIANCES]]


def _covariance(rows: list[dict], arms: dict, rho: dict) -> np.ndarray:
    """The covariance (pp^2) of one group's differences: each arm's runs enter every
    difference of that arm (across settings, by the settings' run correlation) and the
    reference's runs enter every difference; the crossed parts are each difference's own."""
    n = len(rows)
    cov = np.zeros((n, n))
    for i, a in enumerate(rows):
        for k, b in enumerate(rows):
            if i == k:
                cov[i, k] = a["se"] ** 2
                continue
            if not (a["_run"] and b["_run"]):
                continue
            (ma, ref, sa), (mb, _, sb) = a["_arms"], b["_arms"]
            r = 1.0 if sa == sb else rho.get((sa, sb), 0.0)
            shared = [ref] + ([ma] if ma == mb else [])
            for who in shared:
                x, y = arms[sa, who], arms[sb, who]
                common = len(x.seeds.index.intersection(y.seeds.index))
                cov[i, k] += (1e4 * r * math.sqrt(x.var * y.var) * common / (x.n * y.n)
                              if common else 0.0)
    return cov


def _block_diagonal(blocks: list[np.ndarray]) -> np.ndarray:
    n = sum(len(b) for b in blocks)
    out, at = np.zeros((n, n)), 0
    for b in blocks:
        out[at:at + len(b), at:at + len(b)] = b
        at += len(b)
    return out


def _crit_one(level: float, df: float) -> float:
    from scipy.stats import norm, t

    if np.isnan(df):
        return math.nan
    q = 0.5 + level / 2
    return float(norm.ppf(q) if not np.isfinite(df) else t.ppf(q, df))


def _t_p(mean: float, se: float, df: float) -> float:
    """Two-sided p of t = mean / se with ``df`` degrees of freedom (normal when infinite)."""
    from scipy.stats import norm, t

    if not np.isfinite(se) or np.isnan(df):
        return float("nan")
    if se == 0:
        return 1.0 if mean == 0 else 0.0
    stat = abs(mean) / se
    return float(2 * (norm.sf(stat) if not np.isfinite(df) else t.sf(stat, df)))


def arm_intervals(episodes: pd.DataFrame, by: Sequence[str] = ("method", "setting"),
                  value: str = "success", level: float = 0.95) -> pd.DataFrame:
    """Per ``by`` group at the final step: mean of ``value`` (pp) with an interval over the
    arm's training runs (its own run variance, t with runs - 1 degrees of freedom; an arm of
    one seed borrows the others' pooled one) and the tasks and sampled harnesses it was
    evaluated on: not over tasks alone."""
    from hscale.analysis._components import estimate, welch_df

    episodes = final_step(episodes)
    rows = []
    has_setting = "setting" in by
    frame = episodes if has_setting else episodes.assign(setting="all")
    outer = [c for c in by if c not in ("method", "setting")]
    for _, part in (frame.groupby(outer, observed=True, sort=False) if outer
                    else [((), frame)]):
        arms = _arms(part, value)
        for (setting, method), arm in arms.items():
            own = part[(part["setting"] == setting) & (part["method"] == method)]
            cells = own.assign(diff=own[value].astype(np.float64))
            comp = estimate(cells) if len(cells) >= 3 else None
            crossed = ("task", "harness") if setting in SAMPLED else ("task",)
            terms = [] if comp is None else [
                (comp.values[k] / comp.counts[k], comp.dfs[k]) for k in crossed
                if comp.counts and comp.values[k] > 0]
            if not math.isnan(arm.var):
                terms.append((arm.var / arm.n, arm.df))
            half = _crit_one(level, welch_df(terms)) * math.sqrt(sum(v for v, _ in terms))
            ident = {c: str(own[c].iloc[0]) for c in by if c not in ("method", "setting")}
            row = {**ident, "method": method, "mean": 100 * arm.mean,
                   "lo": 100 * (arm.mean - half), "hi": 100 * (arm.mean + half),
                   "seeds": arm.n}
            if has_setting:
                row["setting"] = setting
            rows.append(row)
    return pd.DataFrame(rows, columns=[*by, "mean", "lo", "hi", "seeds"])


def compare_arms(episodes: pd.DataFrame, reference: str | None = None,
                 settings: Sequence[str] = (Setting.IN_SPACE,), value: str = "success",
                 level: float = 0.95, power: float = 0.8) -> pd.DataFrame:
    """Every arm against the reference, per experiment group and setting: one family
    (:func:`compare`). The base model (no RL) is not an arm: see :func:`rl_gains`."""
    return compare(episodes, against_arm(reference), settings, value, level, power)


def rl_gains(episodes: pd.DataFrame, settings: Sequence[str] = (Setting.BASE, Setting.IN_SPACE,
                                                                 Setting.OUT_OF_SPACE),
             value: str = "success", level: float = 0.95, power: float = 0.8
             ) -> pd.DataFrame:
    """What RL added: every arm against its group's base model (the starting model evaluated
    on the same episodes at step 0), per setting, as one family (:func:`compare`). Empty when
    no base-model run was evaluated."""
    return compare(episodes, against_base_model, settings, value, level, power)
