"""``hscale power RESULTS_DIR | SPEC``: how many training runs each arm needs for its
comparisons (or the study's confirmatory hypotheses) to detect a difference, at the least
total number of runs, and how sure a pilot can be of that (the model:
hscale.analysis._planning, the report's own)."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hscale.contracts import Setting
from hscale.errors import HscaleError, HscaleWarning

console = Console(highlight=False, soft_wrap=True)
ALIASES = {"seed×task": "seed_task", "seed:task": "seed_task", "seed*task": "seed_task",
           "seedxtask": "seed_task", "seed-task": "seed_task", "resid": "residual"}
# the settings the report compares arms in: one family (hscale.analysis._tables.all_tables)
REPORTED_SETTINGS = (Setting.IN_SPACE, Setting.OUT_OF_SPACE)


def parse_components(text: str) -> dict[str, float]:
    """``seed=0.002,task=0.01,...`` or a YAML/JSON file of the same mapping (``hscale power
    --json`` output too: its ``components``). Variances of the paired difference, 0-1 scale."""
    from hscale.analysis import COMPONENTS

    path = Path(text)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.is_file():
        from hscale.yamlio import read_yaml

        data, _ = read_yaml(path, "components file")
        data = data.get("components", data) if isinstance(data, dict) else data
        if not isinstance(data, dict):
            raise HscaleError(f"{path}: components are a mapping name: variance",
                              "e.g. {seed: 0.002, task: 0.01, residual: 0.42}")
        pairs = list(data.items())
    else:
        pairs = [part.partition("=")[::2] for part in text.split(",") if part.strip()]
    out: dict[str, float] = {}
    for name, value in pairs:
        key = ALIASES.get(str(name).strip().lower(), str(name).strip().lower())
        if key not in COMPONENTS:
            raise HscaleError(f"unknown variance component {str(name).strip()!r}",
                              f"use {', '.join(COMPONENTS)} (name=variance, comma-separated)")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise HscaleError(f"component {key}={value!r} is not a number",
                              "give variances of the paired difference, e.g. seed=0.002") from None
        if not math.isfinite(number) or number < 0:
            raise HscaleError(f"component {key}={value} is not a variance (finite, >= 0)",
                              "give variances of the paired difference on the 0-1 scale")
        out[key] = number
    if not out:
        raise HscaleError("no components given", "e.g. --components seed=0.002,residual=0.42")
    return out


# -- the questions ---------------------------------------------------------------------------

def _hypothesis_questions(study, rows, alpha: float) -> list:
    """The study's confirmatory hypotheses as questions, their variances from ``rows``
    (comparisons of each hypothesis' arms, by (method, reference, setting))."""
    from hscale.analysis import Question

    out = []
    for i, h in enumerate(study.hypotheses):
        row = rows.get((h.arm, h.than, h.setting))
        if row is None:
            continue
        out.append(Question(h.arm, h.than, row["var_run"], row["var_run_ref"],
                            _crossed(row), sides=1 if h.direction != "differs" else 2,
                            alpha=study.alpha, family=None,
                            label=f"H{i + 1} {h.arm} vs {h.than} {_setting(h.setting)}"))
    return out


def _crossed(row) -> float:
    """The crossed part of a comparison's variance (proportion scale)."""
    total = 0.0
    for part in ("task", "harness"):
        v, n = row.get(f"var_{part}", math.nan), row.get(f"n_{part}", math.nan)
        if v is not None and n and math.isfinite(v) and math.isfinite(n) and v > 0:
            total += v / n
    return total


def _setting(setting: str) -> str:
    return Setting(setting).label if setting in set(Setting) else setting


def from_results(path: Path, reference: str | None, alpha: float,
                 run_sd: float | None = None) -> dict:
    """A pilot: each comparison exactly as its report makes it (its runs' variances, its
    crossed part), and the study's hypotheses where study.json declares them."""
    from hscale.analysis import Question, compare, compare_arms, load_results, studies_of

    results = load_results(path, reported=False)
    for problem in results.problems:  # what the pilot lacks is said, as the report says it
        warnings.warn(f"{problem} (left out of the pilot)", HscaleWarning, stacklevel=2)
    methods = set(results.episodes["method"].astype(str))
    unmeasured = sorted(set(results.runs["method"].astype(str)) - methods) \
        if len(results.runs) else []
    if unmeasured:
        warnings.warn(f"{', '.join(unmeasured)}: planned, but no evaluated episode was read "
                      "(see the problems above); left out of the pilot", HscaleWarning,
                      stacklevel=2)
    studies = studies_of(results)
    if reference is None:
        named = {s.reference for s in studies.values() if s.reference}
        reference = next(iter(named)) if len(named) == 1 and named <= methods else None
    if reference is not None and reference not in methods:
        raise HscaleError(f"reference arm {reference!r} is not among the results",
                          f"choose one of {', '.join(sorted(methods))}")
    family = compare_arms(results.episodes, reference, REPORTED_SETTINGS, level=1 - alpha)
    family = family[family["source"] == "measured"]
    if family.empty:
        raise HscaleError(f"no comparison of two arms under {path}: it needs two arms "
                          "evaluated on the same settings",
                          "or plan from a spec: hscale power SPEC --components ...")
    def stated(frame):  # where the pilot has one seed an arm, the run variance stated
        if run_sd is None:
            return frame
        var = (run_sd / 100) ** 2
        return frame.assign(var_run=frame["var_run"].fillna(var),
                            var_run_ref=frame["var_run_ref"].fillna(var))

    family = stated(family)
    if family["var_run"].isna().all():
        raise HscaleError(f"{path}: one seed an arm, so the pilot cannot estimate how much "
                          "training runs vary",
                          "state it: --run-sd 8 (pp: a trained run's Pass@1 around its "
                          "arm's; the demo's runs vary by about 8), or run a second seed "
                          "of two arms")
    ref = str(family["reference"].iloc[0])
    rows = {(r["method"], r["reference"], r["setting"]): r for r in family.to_dict("records")}
    questions, hypotheses = [], []
    for study in studies.values():
        for h in study.hypotheses:
            if (h.arm, h.than, h.setting) not in rows:  # another pair than the report's
                pick = (lambda than, arm: lambda ms: (than, [than, arm])
                        if than in ms and arm in ms else (None, []))(h.than, h.arm)
                extra = stated(compare(results.episodes, pick, (h.setting,)))
                rows.update({(r["method"], r["reference"], r["setting"]): r
                             for r in extra.to_dict("records")})
        hypotheses += [q for q in _hypothesis_questions(study, rows, study.alpha)
                       if math.isfinite(q.var_arm) and math.isfinite(q.var_ref)]
    for r in family.to_dict("records"):
        if math.isfinite(r["var_run"]) and math.isfinite(r["var_run_ref"]):
            questions.append(Question(r["method"], ref, r["var_run"], r["var_run_ref"],
                                      _crossed(r), alpha=alpha,
                                      label=f"{r['method']} vs {ref} {_setting(r['setting'])}"))
    from hscale.analysis import BASE_MODEL

    seeds = results.episodes.groupby("method", observed=True)["seed"].nunique()
    seeds = seeds[seeds.index.astype(str) != BASE_MODEL]  # evaluated, not trained
    return {"kind": "results", "reference": ref, "questions": hypotheses or questions,
            "confirmatory": bool(hypotheses), "seeds": {str(k): int(v) for k, v in
                                                       seeds.items()},
            "pilot": family, "source": "pilot"}


def from_spec(path: Path, reference: str | None, stated: dict | None, alpha: float) -> dict:
    """A spec and stated components: every arm's run variance the same, from the parts a
    paired difference has (its half: one arm's), and the crossed parts over the spec's
    evaluation."""
    from hscale.analysis import Question, default_reference, design_from_spec
    from hscale.train.spec import load_spec

    spec = load_spec(path)
    design, arms, _ = design_from_spec(spec)
    if not stated:
        raise HscaleError(f"{path} states the design but not the variance components",
                          "add --components seed=..,task=..,residual=.. (or a file), or run "
                          "hscale power on pilot results")
    if not any(stated.values()):
        raise HscaleError(f"components {', '.join(f'{k}={v:g}' for k, v in stated.items())}: "
                          "all zero, so no study size follows from them",
                          "give the variances measured on a pilot (hscale power RUNS "
                          "estimates them)")
    if "residual" not in stated:
        raise HscaleError("the components need residual= (the binary outcome's share)",
                          "about 2 p (1 - p) for Pass@1 p: 0.42 at 30%")
    ref = reference or spec.reference or default_reference(arms)
    if ref not in arms:
        raise HscaleError(f"reference arm {ref!r} is not an arm of {path}",
                          f"choose one of {', '.join(arms)}")
    c = {k: float(stated.get(k, 0.0)) for k in ("seed", "task", "harness", "seed_task",
                                                "run", "residual")}
    per_run = design.per_run()
    runs = design.runs
    one_run = (c["seed"] + c["seed_task"] / max(min(design.tasks, runs * per_run), 1)
               + c["run"] / runs + c["residual"] / (runs * per_run)) / 2
    crossed = {Setting.IN_SPACE: c["task"] / design.tasks + c["harness"] / design.harnesses,
               Setting.OUT_OF_SPACE: c["task"] / design.tasks,
               Setting.BASE: c["task"] / design.tasks}
    found = spec.hypotheses
    if found:
        questions = [Question(h.arm, h.than, one_run, one_run, crossed[h.setting],
                              design.tasks - 1.0, sides=1 if h.direction != "differs" else 2,
                              alpha=found.alpha, family=None,
                              label=f"H{i + 1} {h.arm} vs {h.than} {_setting(h.setting)}")
                     for i, h in enumerate(found.tests)]
    else:
        questions = [Question(a, ref, one_run, one_run, crossed[Setting.IN_SPACE],
                              design.tasks - 1.0, alpha=alpha, label=f"{a} vs {ref} in-space")
                     for a in arms if a != ref]
    seeds = {name: len(spec.arm_seeds(arm)) for name, arm in spec.resolved_arms().items()}
    return {"kind": "spec", "reference": ref, "questions": questions,
            "confirmatory": bool(found), "seeds": seeds, "pilot": None,
            "source": "stated components", "components": c}


def plan(source: Path, reference: str | None = None, effect: float = 10.0,
         power: float = 0.8, alpha: float = 0.05, components: str | None = None,
         stages: int = 3, run_sd: float | None = None) -> dict:
    """Everything ``hscale power`` prints, as plain data."""
    from hscale.analysis import (
        equal_plan,
        plan_power,
        plan_seeds,
        scaled_questions,
        staged_design,
        variance_interval,
    )

    if not effect > 0:
        raise HscaleError(f"--effect {effect} is not a difference to detect", "give pp > 0")
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise HscaleError(f"--power {power} / --alpha {alpha} must lie in (0, 1)",
                          "e.g. --power 0.8 --alpha 0.05")
    stated = parse_components(components) if components else None
    if source.is_dir():
        if stated:
            raise HscaleError("--components states the parts a spec lacks; a pilot's runs "
                              "estimate them", "drop --components, or give a spec")
        out = from_results(source, reference, alpha, run_sd)
    elif source.suffix.lower() in (".yaml", ".yml"):
        out = from_spec(source, reference, stated, alpha)
    else:
        raise HscaleError(f"{source}: neither a runs folder nor an experiment YAML",
                          "pass runs/<experiment> or experiments/<name>.yaml")
    questions, seeds = out["questions"], out["seeds"]
    if not questions:
        raise HscaleError("nothing to plan: no comparison with a run variance on both sides",
                          "run at least two seeds of two arms")
    size = effect / 100
    now = plan_power(questions, seeds, size)
    best = plan_seeds(questions, size, power, seeds)
    equal = equal_plan(questions, size, power, seeds)
    ranges = {}
    named = {n for q in questions for n in (q.arm, q.reference)}
    if out["pilot"] is not None and min(seeds.get(n, 0) for n in named) >= 2:
        # the pilot's uncertainty: every arm's variance at each end of its interval
        ends = {}
        for q in questions:
            for name, var in ((q.arm, q.var_arm), (q.reference, q.var_ref)):
                df = max(seeds.get(name, 2) - 1, 1)
                low, high = variance_interval(var, df)
                ends[name] = (low / var if var > 0 else 1.0, high / var if var > 0 else 1.0)
        for end, i in (("low", 0), ("high", 1)):
            factors = {k: v[i] for k, v in ends.items()}
            found = plan_seeds(scaled_questions(questions, factors), size, power, seeds)
            ranges[end] = found
    looks = _stages(best, stages) if out["confirmatory"] else {}
    staging = {}
    if looks:
        from hscale.analysis import question_se

        for q in questions:
            se, df = question_se(q, best.seeds)
            at_effect = staged_design(se, df, looks[q.arm], size, q.alpha, q.sides)
            at_null = staged_design(se, df, looks[q.arm], 0.0, q.alpha, q.sides)
            staging[q.key] = {"stages": looks[q.arm], "power": at_effect[0],
                              "expected_seeds": at_effect[1], "expected_seeds_null":
                              at_null[1], "false_rate": at_null[0]}
    return {**{k: v for k, v in out.items() if k not in ("questions", "pilot")},
            "input": str(source), "effect_pp": effect, "power": power, "alpha": alpha,
            "questions": [_question(q, now, best, equal) for q in questions],
            "plan": best.seeds, "plan_total": best.total, "plan_reachable": best.reachable,
            "equal": equal.seeds, "equal_total": equal.total,
            "range": {k: {"seeds": v.seeds, "total": v.total} for k, v in ranges.items()},
            "staged": staging}


def _stages(best, count: int) -> dict[str, list[int]]:
    """Seeds an arm has by each of ``count`` looks of a staged version of the plan."""
    if count < 2:
        return {}
    out = {}
    for name, total in best.seeds.items():
        marks = sorted({max(2, math.ceil(total * (i + 1) / count)) for i in range(count)})
        out[name] = marks if len(marks) >= 2 else [2, max(3, total)]
    return out


def _question(q, now, best, equal) -> dict:
    return {"question": q.key, "arm": q.arm, "reference": q.reference,
            "sides": q.sides, "run_sd_pp": 100 * math.sqrt(q.var_arm),
            "ref_run_sd_pp": 100 * math.sqrt(q.var_ref), "crossed_sd_pp":
            100 * math.sqrt(q.crossed), "se_pp": 100 * now.se[q.key],
            "power_now": now.power[q.key], "power_planned": best.power[q.key],
            "power_equal": equal.power[q.key]}


def _show(result: dict) -> None:
    what = ("the study's confirmatory hypotheses (study.json)" if result["confirmatory"]
            else f"every arm against {result['reference']}, one max-t family")
    console.print(f"{escape(result['input'])} ({result['source']}): planning {what}, to "
                  f"detect {result['effect_pp']:g} pp with {result['power']:.0%} power at "
                  f"alpha = {result['alpha']:g}")
    now = Table(show_edge=False, box=None, pad_edge=False, title_justify="left",
                title="Each comparison now (one run's sd on each side: its training runs' "
                      "spread; the crossed part: tasks and harnesses; no power yet where "
                      "an arm has one seed: no degrees of freedom)")
    for col in ("comparison", "run sd (pp)", "reference's", "crossed (pp)", "SE (pp)",
                "power now"):
        now.add_column(col, justify="left" if col == "comparison" else "right")
    for q in result["questions"]:
        now.add_row(escape(q["question"]), f"{q['run_sd_pp']:.1f}",
                    f"{q['ref_run_sd_pp']:.1f}", f"{q['crossed_sd_pp']:.1f}",
                    f"{q['se_pp']:.2f}", f"{q['power_now']:.0%}"
                    if math.isfinite(q["power_now"]) else "none yet")
    console.print(now)
    seeds = Table(show_edge=False, box=None, pad_edge=False, title_justify="left",
                  title=f"Seeds an arm: now, the plan (fewest runs in all: "
                        f"{result['plan_total']}), equal allocation ({result['equal_total']})"
                        + (", and the plan if the pilot's variances lie at the low or high "
                           "end of their 80% intervals" if result["range"] else ""))
    cols = ["arm", "now", "plan", "equal", *(["if low", "if high"] if result["range"] else [])]
    for col in cols:
        seeds.add_column(col, justify="left" if col == "arm" else "right")
    for arm, n in result["plan"].items():
        extra = [str(result["range"][e]["seeds"].get(arm, "")) for e in ("low", "high")] \
            if result["range"] else []
        seeds.add_row(escape(arm), str(result["seeds"].get(arm, "")), str(n),
                      str(result["equal"].get(arm, "")), *extra)
    console.print(seeds)
    if not result["plan_reachable"]:
        weak = [q["question"] for q in result["questions"]
                if q["power_planned"] < result["power"]]
        bound = [q["question"] for q in result["questions"] if q["crossed_sd_pp"] >=
                 result["effect_pp"] / 3]
        console.print(f"note: no allocation within 40 seeds an arm gives {', '.join(weak)} "
                      f"{result['power']:.0%} power"
                      + (f"; for {', '.join(bound)} the crossed part (tasks, harnesses), "
                         "which seeds do not shrink, is too large: evaluate on more tasks"
                         if bound else ""))
    if result["range"] and result["plan_reachable"]:
        named = {n for q in result["questions"] for n in (q["arm"], q["reference"])}
        seeds = [result["seeds"][n] for n in named if n in result["seeds"]]
        lo, hi = result["range"]["low"]["total"], result["range"]["high"]["total"]
        span = f"{min(seeds)}" if min(seeds) == max(seeds) else \
            f"{min(seeds)} to {max(seeds)}"
        console.print(f"The pilot's run variances are estimates from {span} "
                      f"seeds an arm: the plan's {result['plan_total']} runs "
                      f"could as well be {lo} to {hi}. Grow the study in stages "
                      "(hypotheses.stages) rather than commit to one number.")
    if not result["confirmatory"]:
        console.print("Every comparison is judged in one max-t family, which costs seeds: "
                      "declare the study's primary questions (hypotheses: in the spec) to "
                      "plan them alone, and as a staged study.")
    arms = {q["question"]: q["arm"] for q in result["questions"]}
    for key, s in result["staged"].items():
        looks = ", ".join(map(str, s["stages"]))
        console.print(f"staged ({escape(key)}): looks at {looks} seeds of "
                      f"{escape(arms[key])} (the reference in step): power "
                      f"{s['power']:.0%}, expected {s['expected_seeds']:.1f} seeds at "
                      f"{result['effect_pp']:g} pp and {s['expected_seeds_null']:.1f} with no "
                      f"difference (false resolution {s['false_rate']:.1%})")


def power_cmd(
    source: Annotated[Path, typer.Argument(metavar="RESULTS_DIR | SPEC", help="A pilot's "
                                           "runs/<experiment> folder, or an experiment YAML "
                                           "(then --components is needed).")],
    reference: Annotated[str | None, typer.Option(help="Arm the others are compared with "
                                                       "(default: the spec's, else the "
                                                       "report's).")] = None,
    effect: Annotated[float, typer.Option(help="Difference to detect, in percentage "
                                               "points.")] = 10.0,
    power: Annotated[float, typer.Option(help="Wanted power.")] = 0.8,
    alpha: Annotated[float, typer.Option(help="Family-wise level of the comparisons (the "
                                              "max-t family, or a hypothesis' own).")] = 0.05,
    components: Annotated[str | None, typer.Option(help="A spec's variances of the paired "
                                                        "difference (0-1 scale): seed=..,"
                                                        "task=..,harness=..,seed_task=..,"
                                                        "run=..,residual=.. or a YAML/JSON "
                                                        "file.")] = None,
    stages: Annotated[int, typer.Option(min=0, max=6, help="Looks of the staged version "
                                                           "of the plan (0: none).")] = 3,
    run_sd: Annotated[float | None, typer.Option(
        "--run-sd", min=0.0, max=100.0, help="A trained run's Pass@1 sd (pp) around its "
                                             "arm's, where a pilot of one seed an arm cannot "
                                             "estimate it.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of "
                                                         "tables.")] = False,
) -> None:
    """Seeds an arm needs to resolve a study's comparisons, from a pilot or stated parts.

    Seeds an arm needs for its comparisons (the study's confirmatory hypotheses, where
    it declares them) to detect --effect with --power: the fewest runs in all, beside equal
    allocation, with the range a pilot's uncertainty leaves and a staged alternative."""
    result = plan(source, reference, effect, power, alpha, components, stages, run_sd)
    if as_json:
        print(json.dumps(_finite(result), indent=2, default=_plain))
    else:
        _show(result)


def _finite(value):
    """NaN as null: JSON has no NaN."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _plain(value):
    if hasattr(value, "item"):
        return value.item()
    return re.sub(r"\s+", " ", str(value))
