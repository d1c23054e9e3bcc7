"""A study's confirmatory hypotheses (study.json, declared in the spec), tested with the
family-wise error kept: what the report answers first.

Each hypothesis is one comparison (an arm against another, or against the base model, in one
setting) by the report's own model (hscale.analysis._stats.compare: training runs as the
replicates, each arm's own run variance), tested one-sided for a direction (``higher``,
``lower``) and two-sided for ``differs``. The family is kept at ``alpha`` by a fixed
sequence (each at the full alpha, in the declared order, until one is not confirmed) or by
Holm's step-down. Everything else in the report is exploratory.

A staged study (``stages``: seeds an arm of a hypothesis has by each look) looks at the data
after each stage: look l uses the first ``stages[l]`` seeds of each such arm, and rejects
where the one-sided p falls below the nominal level of an O'Brien-Fleming-type alpha-spending
boundary (Lan and DeMets) at information fraction stages[l] / stages[-1]. Each hypothesis
has its own boundary at the full alpha and is tested only once every hypothesis before it
is confirmed (group-sequential gatekeeping, which keeps the family-wise error: Glimm, Maurer
and Bretz 2010). A hypothesis confirmed at a look stays confirmed; its arms gain no more
seeds. The looks are recomputed from the run folders, so the report and ``hscale run``
always agree on what was decided when.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from hscale.analysis._naming import BASE_MODEL, is_base_model
from hscale.contracts import HypothesisRecord, StudyRecord


@dataclass(frozen=True)
class Outcome:
    """One hypothesis's answer: its numbers at the look that decided it (or the last), the
    nominal level it was tested at, and the word."""

    hypothesis: HypothesisRecord
    index: int  # its place in the declared order, from 1
    diff: float = math.nan  # pp
    se: float = math.nan
    df: float = math.nan
    p: float = math.nan  # one-sided for a direction, two-sided for differs
    level: float = math.nan  # the nominal level it was held to (alpha, a boundary's, Holm's)
    bound: float = math.nan  # the one-sided confidence bound at that level (pp)
    lo: float = math.nan  # differs: the two-sided interval at that level
    hi: float = math.nan
    seeds: int = 0
    seeds_than: int = 0
    look: int = 0  # the look (from 1) it was decided at; 0 without stages
    looks: int = 0
    verdict: str = "not tested"  # confirmed, not confirmed, open, not tested
    why: str = ""

    @property
    def sentence(self) -> str:
        h = self.hypothesis
        head = f"H{self.index} ({h.claim()})"
        if not math.isfinite(self.diff):
            return f"{head}: {self.why or 'no data to test it'}."
        than = BASE_MODEL if is_base_model(h.than) else h.than
        seeds = (f"{self.seeds} and {self.seeds_than} seeds" if self.seeds != self.seeds_than
                 else f"{self.seeds} seeds a side")
        if h.direction == "differs":
            interval = f"[{self.lo:+.1f}, {self.hi:+.1f}]"
        else:
            side = ">=" if h.direction == "higher" else "<="
            interval = f"(one-sided bound {side} {self.bound:+.1f})"
        at = (f", look {self.look} of {self.looks}" if self.looks else "")
        numbers = (f"{h.arm} - {than} = {self.diff:+.1f} pp {interval}, p {_p(self.p)} "
                   f"against a level of {self.level:.3g} ({seeds}{at})")
        return f"{head}: {numbers}: {self.verdict}{('; ' + self.why) if self.why else ''}."


def _p(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


# -- boundaries ------------------------------------------------------------------------------

@lru_cache(maxsize=64)
def spending_levels(fractions: tuple[float, ...], alpha: float, two_sided: bool = False,
                    draws: int = 400_000) -> tuple[float, ...]:
    """Nominal levels of an O'Brien-Fleming-type alpha-spending design at the looks'
    information ``fractions`` (increasing, the last 1): reject at look l when the test's p
    (one- or two-sided) is below the l-th. The cumulative error spent by information t is
    alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) (alpha(1) = alpha; a probability of the
    one-sided statistic, or of |Z| for a two-sided test); boundaries by Monte Carlo of the
    look statistics' joint normal law (a fixed seed: reproducible)."""
    from scipy.stats import norm

    t = np.asarray(fractions, dtype=np.float64)
    spent = 2 - 2 * norm.cdf(norm.ppf(1 - alpha / 2) / np.sqrt(t))
    gen = np.random.default_rng(20101)
    steps = np.diff(np.concatenate([[0.0], t]))
    paths = np.cumsum(gen.standard_normal((draws, len(t))) * np.sqrt(steps), axis=1)
    z = paths / np.sqrt(t)
    z = np.abs(z) if two_sided else z
    alive = np.ones(draws, dtype=bool)
    levels, before = [], 0.0
    for look in range(len(t)):
        want = spent[look] - before  # the share of draws to cross first at this look
        stats = z[alive, look]
        k = int(round(want * draws))
        if k <= 0:
            bound = np.inf
        elif k >= len(stats):
            bound = -np.inf
        else:
            bound = float(np.partition(stats, len(stats) - k)[len(stats) - k])
        crossed = np.zeros(draws, dtype=bool)
        crossed[np.flatnonzero(alive)[stats >= bound]] = True
        alive &= ~crossed
        before += crossed.sum() / draws
        tail = norm.sf(bound) if math.isfinite(bound) else (1.0 if bound < 0 else 0.0)
        levels.append(float(2 * tail if two_sided else tail))
    return tuple(levels)


# -- testing ---------------------------------------------------------------------------------

def _test_one(episodes: pd.DataFrame, h: HypothesisRecord, level: float) -> dict:
    """The hypothesis's comparison at ``level``: diff, se, df, p (one-sided for a direction),
    the confidence bound(s), the seeds on each side."""
    from scipy.stats import norm
    from scipy.stats import t as student

    from hscale.analysis._stats import compare

    def pick(methods: list[str]) -> tuple[str | None, list[str]]:
        than = next((m for m in methods if m == h.than or (is_base_model(m)
                                                            and is_base_model(h.than))), None)
        return (than, [than, h.arm]) if than and h.arm in methods else (None, [])

    rows = compare(episodes, pick, (h.setting,))
    if rows.empty:
        return {"why": f"no evaluated runs of both {h.arm} and {h.than} in {h.setting}"}
    row = rows.iloc[0]
    diff, se, df = float(row["diff"]), float(row["se"]), float(row["df"])
    out = {"diff": diff, "se": se, "df": df, "seeds": int(row["seeds"]),
           "seeds_than": int(row["seeds_ref"])}
    if not (se > 0 and not math.isnan(df)):
        return {**out, "why": "no variance to test against (the runs and cells do not vary)"}
    dist = student(df) if math.isfinite(df) else norm
    sf, ppf = dist.sf, dist.ppf
    stat = diff / se
    if h.direction == "higher":
        out.update(p=float(sf(stat)), bound=diff - float(ppf(1 - level)) * se)
    elif h.direction == "lower":
        out.update(p=float(sf(-stat)), bound=diff + float(ppf(1 - level)) * se)
    else:
        half = float(ppf(1 - level / 2)) * se
        out.update(p=float(2 * sf(abs(stat))), lo=diff - half, hi=diff + half)
    return out


def _at_look(episodes: pd.DataFrame, study: StudyRecord, look: int,
             staged: list[str]) -> pd.DataFrame:
    """The episodes a look sees: each staged arm's first ``stages[look]`` seeds; the base
    model's seeds those of the arms it is compared with at that look."""
    if not study.stages:
        return episodes
    keep = {arm: set(study.seeds.get(arm, [])[:study.stages[look]]) for arm in staged}
    arm = episodes["arm"].astype(str)
    seed = episodes["seed"].astype(int)
    mask = np.ones(len(episodes), dtype=bool)
    for name, seeds in keep.items():
        mask &= ~((arm == name) & ~seed.isin(seeds)).to_numpy()
    everyone = set().union(*keep.values()) if keep else set()
    base = arm.map(is_base_model).to_numpy(dtype=bool)
    if everyone:
        mask &= ~(base & ~seed.isin(everyone).to_numpy())
    return episodes[mask]


def staged_arms(study: StudyRecord) -> list[str]:
    """The arms a staged study grows: those its hypotheses name (the base model aside)."""
    names = [n for h in study.hypotheses for n in (h.arm, h.than)]
    return [n for n in dict.fromkeys(names) if n in study.seeds]


def _has(episodes: pd.DataFrame, study: StudyRecord, arms: list[str], stage: int) -> bool:
    """Whether every arm of ``arms`` has its first ``stage`` seeds evaluated."""
    present = episodes.groupby(episodes["arm"].astype(str))["seed"].unique()
    return all(set(study.seeds.get(a, [])[:stage]) <= {int(s) for s in present.get(a, [])}
               for a in arms)


def judge_hypotheses(episodes: pd.DataFrame, study: StudyRecord) -> list[Outcome]:
    """Every hypothesis of ``study`` answered on ``episodes`` (the report's, one experiment
    group), the family kept at ``study.alpha``."""
    hyps = study.hypotheses
    if not hyps:
        return []
    if study.stages:
        return _sequential(episodes, study)
    tested = [_test_one(episodes, h, study.alpha) for h in hyps]
    p = [t.get("p", math.nan) for t in tested]
    out = []
    if study.procedure == "holm":
        from hscale.analysis._families import holm_rejects

        rejected = holm_rejects(p, study.alpha)
        order = sorted(range(len(p)), key=lambda i: (not math.isfinite(p[i]), p[i]))
        levels = {i: study.alpha / (len(p) - rank) for rank, i in enumerate(order)}
        for i, (h, found) in enumerate(zip(hyps, tested, strict=True)):
            again = _test_one(episodes, h, levels[i]) if "p" in found else found
            out.append(_outcome(h, i, again, levels[i],
                                "confirmed" if rejected[i] else "not confirmed"))
        return out
    going = True
    for i, (h, found) in enumerate(zip(hyps, tested, strict=True)):
        if not going:
            out.append(_outcome(h, i, found, study.alpha, "not tested",
                                "an earlier hypothesis of the fixed sequence was not "
                                "confirmed"))
            continue
        confirmed = math.isfinite(found.get("p", math.nan)) and found["p"] < study.alpha
        out.append(_outcome(h, i, found, study.alpha,
                            "confirmed" if confirmed else "not confirmed"))
        going = confirmed
    return out


def _sequential(episodes: pd.DataFrame, study: StudyRecord) -> list[Outcome]:
    """The staged study's looks, in order, each hypothesis at its own spending boundary and
    only once those before it are confirmed. A look counts once every arm of a hypothesis
    still open has that stage's seeds evaluated (a settled arm stops growing)."""
    hyps, stages = study.hypotheses, study.stages or []
    fractions = tuple(s / stages[-1] for s in stages)
    staged = staged_arms(study)
    decided: dict[int, Outcome] = {}
    last: dict[int, dict] = {}
    looks = 0
    for look in range(len(stages)):
        needed = [a for i, h in enumerate(hyps) if i not in decided
                  for a in (h.arm, h.than) if a in staged]
        if not _has(episodes, study, needed, stages[look]):
            break
        looks = look + 1
        data = _at_look(episodes, study, look, staged)
        for i, h in enumerate(hyps):
            if i in decided:
                continue
            level = spending_levels(fractions, study.alpha, h.direction == "differs")[look]
            found = _test_one(data, h, level)
            last[i] = {**found, "level": level, "look": look + 1}
            earlier = all(j in decided and decided[j].verdict == "confirmed" for j in range(i))
            if earlier and math.isfinite(found.get("p", math.nan)) and found["p"] < level:
                decided[i] = _outcome(h, i, found, level, "confirmed", look=look + 1,
                                      looks=len(stages))
        if len(decided) == len(hyps):
            break
    out = []
    for i, h in enumerate(hyps):
        if i in decided:
            out.append(decided[i])
            continue
        found = last.get(i, {"why": "the first stage's runs are not all evaluated yet"})
        final = looks == len(stages)
        verdict = "not confirmed" if final else "open"
        why = "" if final else (f"after look {looks} of {len(stages)} the next stage adds "
                                "seeds" if looks else "")
        if final and any(j not in decided for j in range(i)):
            verdict, why = "not tested", ("an earlier hypothesis of the fixed sequence was "
                                          "not confirmed")
        out.append(_outcome(h, i, found, found.get("level", math.nan), verdict, why,
                            found.get("look", looks), len(stages)))
    return out


def _outcome(h: HypothesisRecord, i: int, found: dict, level: float, verdict: str,
             why: str = "", look: int = 0, looks: int = 0) -> Outcome:
    keys = ("diff", "se", "df", "p", "bound", "lo", "hi", "seeds", "seeds_than")
    return Outcome(h, i + 1, level=level, verdict=verdict, why=why or found.get("why", ""),
                   look=look, looks=looks, **{k: found[k] for k in keys if k in found})


def open_arms(outcomes: list[Outcome]) -> list[str]:
    """The arms a staged study still grows: those of hypotheses not yet confirmed."""
    names = [n for o in outcomes if o.verdict in ("open", "not tested") and o.looks
             for n in (o.hypothesis.arm, o.hypothesis.than)]
    return [n for n in dict.fromkeys(names) if not is_base_model(n)]


def studies_of(results) -> dict[str, StudyRecord]:
    """experiment -> its study.json, for every experiment folder the results came from."""
    from hscale.contracts import read_study

    out = {}
    runs = results.runs
    for experiment, paths in (runs.groupby("experiment")["path"] if len(runs) else []):
        folder = Path(str(paths.iloc[0])).parent.parent
        found = read_study(folder)
        if found is not None:
            out[str(experiment)] = found
    return out


def answer_hypotheses(results, studies: dict[str, StudyRecord]
                      ) -> tuple[list[str], list[Outcome]]:
    """The first screen's confirmatory sentences and every outcome, experiment by
    experiment; a study whose hypotheses were declared after its first run began says so."""
    lines, found = [], []
    episodes = results.episodes
    for experiment, study in studies.items():
        if not study.hypotheses:
            continue
        mine = episodes[(episodes["experiment"].astype(str) == experiment)
                        & (episodes["source"].astype(str) == "measured")]
        outcomes = judge_hypotheses(mine, study)
        found += outcomes
        how = ("a fixed sequence" if study.procedure == "fixed-sequence" else "Holm's "
               "step-down") + f", family-wise alpha = {study.alpha:g}"
        if study.stages:
            how += (f", staged at {', '.join(map(str, study.stages))} seeds an arm with "
                    "O'Brien-Fleming-type boundaries")
        late = _declared_late(results, experiment, study)
        lines.append(f"Confirmatory ({experiment}: {len(outcomes)} hypotheses declared in the "
                     f"spec, {how}{late}): " + " ".join(o.sentence for o in outcomes))
    return lines, found


def _declared_late(results, experiment: str, study: StudyRecord) -> str:
    runs = results.runs
    if not study.declared or "started" not in runs.columns:
        return ""
    began = [s for s in runs.loc[runs["experiment"] == experiment, "started"]
             if s is not None and pd.notna(s)]
    try:
        declared = pd.Timestamp(study.declared)
        first = min(pd.Timestamp(s) for s in began) if began else None
    except (TypeError, ValueError):
        return ""
    if first is not None and declared > first:
        return ("; declared after the study's first run began, so not a preregistration: "
                "read them as exploratory")
    return ""


def outcomes_frame(outcomes: list[Outcome]) -> pd.DataFrame:
    """hypotheses.csv: one row a hypothesis."""
    return pd.DataFrame([{
        "hypothesis": f"H{o.index}", "claim": o.hypothesis.claim(), "arm": o.hypothesis.arm,
        "than": o.hypothesis.than, "setting": o.hypothesis.setting,
        "direction": o.hypothesis.direction, "diff": o.diff, "se": o.se, "df": o.df,
        "p": o.p, "level": o.level, "bound": o.bound, "lo": o.lo, "hi": o.hi,
        "seeds": o.seeds, "seeds_than": o.seeds_than, "look": o.look, "looks": o.looks,
        "verdict": o.verdict, "why": o.why} for o in outcomes])
