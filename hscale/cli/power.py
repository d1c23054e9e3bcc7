"""``hscale power RESULTS_DIR | SPEC``: the smallest difference a design detects, and the
seeds x tasks x runs a chosen one needs (the model: hscale.analysis._power)."""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console(highlight=False, soft_wrap=True)
ALIASES = {"seed×task": "seed_task", "seed:task": "seed_task", "seed*task": "seed_task",
           "seedxtask": "seed_task", "seed-task": "seed_task", "resid": "residual"}
DEFAULT_TRAIN = 1024.0  # rollouts of one training run when the runs do not say (the demo's)
# the settings the report compares arms in: one family (hscale.analysis._tables.all_tables)
REPORTED_SETTINGS = ("in_space", "out_of_space")


def parse_components(text: str) -> dict[str, float]:
    """``seed=0.002,task=0.01,...`` or a YAML/JSON file of the same mapping (``hscale power
    --json`` output too: its ``components``). Variances of the paired difference, 0-1 scale."""
    from hscale.analysis import COMPONENTS
    from hscale.errors import HscaleError

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


def _train_rollouts(runs) -> float | None:
    totals = [b.get("steps", 0) * b.get("tasks_per_step", 0) * b.get("rollouts_per_task", 0)
              for b in runs.get("budget", []) if isinstance(b, dict)]
    totals = sorted(t for t in totals if t)
    return float(totals[len(totals) // 2]) if totals else None


def from_results(path: Path, reference: str | None, stated: dict | None) -> dict:
    """The pilot's comparisons exactly as its report makes them (the same family, so each
    comparison's MDE is the report's), components pooled over the in-space ones, its design."""
    from hscale.analysis import (
        COMPONENTS,
        Components,
        compare_arms,
        load_results,
        paired_blocks,
        pilot_design,
        pooled,
    )
    from hscale.errors import HscaleError, HscaleWarning

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
    if reference is not None and reference not in methods:
        raise HscaleError(f"reference arm {reference!r} is not among the results",
                          f"choose one of {', '.join(sorted(methods))}")
    blocks = list(paired_blocks(results.episodes, ("in_space",), reference))
    if not blocks:
        raise HscaleError(f"no paired in-space comparison under {path}: it needs two arms "
                          "evaluated on the same seeds, tasks, harnesses and runs",
                          "or plan from a spec: hscale power SPEC --components ...")
    family = compare_arms(results.episodes, reference, REPORTED_SETTINGS)
    in_space = family[family["setting"] == "in_space"]
    parts = [Components({k: float(row[f"var_{k}"]) for k in COMPONENTS})
             for _, row in in_space.iterrows()]
    pool = pooled(parts)
    notes = sorted({n for note in in_space["note"] for n in str(note).split("; ") if n})
    values = {**pool.values, **(stated or {})}
    train = _train_rollouts(results.runs)
    rows = [{"method": r.method, "setting": r.setting, "diff_pp": r.diff, "se_pp": r.se,
             "df": r.df, "df_spread": r.df_spread, "mde_pp": r.mde, "cells": r.pairs,
             **{k: getattr(r, f"var_{k}") for k in COMPONENTS}}
            for r in family.itertuples()]
    arms = int(in_space["method"].nunique()) + 1
    return {"kind": "results", "reference": blocks[0][0]["reference"],
            "arms": sorted(methods), "planned": len(family),
            "design": replace(pilot_design(blocks[0][1]), arms=arms),
            "components": values, "train_rollouts": train or DEFAULT_TRAIN,
            "settings": int(results.episodes["setting"].nunique()),
            "greedy": bool(len(results.greedy)),
            "notes": notes + ([] if train else [f"training cost unknown: {DEFAULT_TRAIN:g} "
                                                "rollouts a run assumed"]),
            "source": (f"pilot, mean of {len(parts)} in-space comparisons"
                       + (" (stated values override)" if stated else "")),
            "per_comparison": rows}


def from_spec(path: Path, reference: str | None, stated: dict | None) -> dict:
    from hscale.analysis import default_reference, design_from_spec
    from hscale.errors import HscaleError
    from hscale.train.spec import load_spec

    spec = load_spec(path)
    design, arms, train = design_from_spec(spec)
    if not stated:
        raise HscaleError(f"{path} states the design but not the variance components",
                          "add --components seed=..,task=..,residual=.. (or a file), or run "
                          "hscale power on pilot results")
    if not any(stated.values()):  # no noise: any difference is detected by one run
        raise HscaleError(f"components {', '.join(f'{k}={v:g}' for k, v in stated.items())}: "
                          "all zero, so no study size follows from them",
                          "give the variances measured on a pilot (hscale power RUNS "
                          "estimates them)")
    if "residual" not in stated:
        raise HscaleError("the components need residual= (the binary outcome's share)",
                          "about 2 p (1 - p) for Pass@1 p: 0.42 at 30%")
    if reference is not None and reference not in arms:
        raise HscaleError(f"reference arm {reference!r} is not an arm of {path}",
                          f"choose one of {', '.join(arms)}")
    ev = spec.evaluation
    settings = int(ev.base) + int(ev.in_space > 0) + int(bool(ev.out_of_space))
    compared = int(ev.in_space > 0) + int(bool(ev.out_of_space))  # the report's family
    return {"kind": "spec", "reference": reference or default_reference(arms), "arms": arms,
            "planned": max((len(arms) - 1) * max(compared, 1), 1),
            "design": replace(design, arms=max(len(arms), 2)), "components": dict(stated),
            "train_rollouts": train, "settings": max(settings, 1),
            "greedy": True,  # both backends add a greedy pass to every evaluation
            "notes": [], "source": "stated", "per_comparison": []}


def plan(source: Path, reference: str | None = None, effect: float = 4.0, power: float = 0.8,
         alpha: float = 0.05, comparisons: int | None = None, components: str | None = None
         ) -> dict:
    """Everything ``hscale power`` prints, as plain data."""
    from dataclasses import asdict

    from hscale.analysis import COMPONENTS, Costs, design_se, mde, options
    from hscale.errors import HscaleError

    if not effect > 0:
        raise HscaleError(f"--effect {effect} is not a difference to detect", "give pp > 0")
    if not 0 < power < 1 or not 0 < alpha < 1:
        raise HscaleError(f"--power {power} / --alpha {alpha} must lie in (0, 1)",
                          "e.g. --power 0.8 --alpha 0.05")
    if comparisons is not None and comparisons < 1:
        raise HscaleError(f"--comparisons {comparisons} must be at least 1", "the default "
                          "is one comparison per arm against the reference")
    stated = parse_components(components) if components else None
    if source.is_dir():
        out = from_results(source, reference, stated)
    elif source.suffix.lower() in (".yaml", ".yml"):
        out = from_spec(source, reference, stated)
    else:
        raise HscaleError(f"{source}: neither a runs folder nor an experiment YAML",
                          "pass runs/<experiment> or experiments/<name>.yaml")
    m = comparisons or out["planned"]
    values = {k: out["components"].get(k, 0.0) for k in COMPONENTS}
    unknown = [k for k, v in values.items() if math.isnan(v)]
    if not any(v for v in values.values() if not math.isnan(v)):  # one run detects anything
        raise HscaleError(f"components {', '.join(f'{k}={v:g}' for k, v in values.items())}: "
                          "all zero, so no study size follows from them",
                          "give the variances measured on a pilot (hscale power RUNS "
                          "estimates them)")
    if unknown:
        raise HscaleError(f"the pilot cannot estimate {', '.join(unknown)} (e.g. one seed per "
                          "arm)", f"state it: --components {unknown[0]}=VALUE")
    design = out["design"]
    se, df, spread = design_se(values, design)
    costs = Costs(out["train_rollouts"], out["settings"], out["greedy"])
    table = options(values, design, effect, m, alpha, power, costs)
    for row in out["per_comparison"]:  # the report's numbers at its defaults
        row["mde_pp"] = 100 * mde(row["se_pp"] / 100, m, alpha, power, row["df"],
                                  row["df_spread"])
    return {**out, "input": str(source), "design": asdict(design), "components": values,
            "comparisons": m, "alpha": alpha, "alpha_first": alpha / m, "power": power,
            "effect_pp": effect, "se_pp": 100 * se, "df": df, "df_spread": spread,
            "mde_pp": 100 * mde(se, m, alpha, power, df, spread),
            "options": table.to_dict("records")}


def _show(result: dict) -> None:
    from hscale.analysis import LABELS

    d = result["design"]
    per = d["episodes"] or d["tasks"] * d["harnesses"]
    console.print(f"{escape(result['input'])} ({result['kind']}): in-space, {d['seeds']} seeds "
                  f"x {d['tasks']} tasks x {d['harnesses']} harnesses x {d['runs']} runs "
                  f"({per} paired episodes a seed and run); reference "
                  f"{escape(result['reference'])}, {result['comparisons']} comparisons")
    total = sum(v / c for v, c in zip(result["components"].values(), _counts(d), strict=True))
    comp = Table(title=f"Variance of the paired difference ({result['source']})",
                 title_justify="left", show_edge=False, box=None, pad_edge=False)
    for col in ("component", "variance", "SD (pp)", "share of Var(Δ)"):
        comp.add_column(col, justify="left" if col == "component" else "right")
    for (name, value), count in zip(result["components"].items(), _counts(d), strict=True):
        share = value / count / total if total > 0 else 0.0
        comp.add_row(LABELS.get(name, name), f"{value:.5f}", f"{100 * math.sqrt(value):.2f}",
                     f"{100 * share:.0f}%")
    console.print(comp)
    for note in result["notes"]:
        console.print(f"note: {escape(note)}")
    console.print(f"SE of a difference {result['se_pp']:.2f} pp ({_num(result['df'], 0)} "
                  f"degrees of freedom); MDE {_num(result['mde_pp'])} pp at "
                  f"{result['power']:.0%} power, two-sided alpha = {result['alpha']:g}/"
                  f"{result['comparisons']} = {result['alpha_first']:.4g} (Bonferroni over the "
                  "family, as the report's simultaneous intervals)")
    if result["per_comparison"]:
        rows = Table(show_edge=False, box=None, pad_edge=False, title_justify="left",
                     title=f"Each comparison against {escape(result['reference'])} as the "
                           "report makes it (its SE, degrees of freedom and MDE)")
        for col in ("arm", "setting", "Δ (pp)", "SE (pp)", "df", "MDE (pp)"):
            rows.add_column(col, justify="left" if col in ("arm", "setting") else "right")
        for r in result["per_comparison"]:
            rows.add_row(escape(r["method"]), escape(r["setting"]), f"{r['diff_pp']:+.2f}",
                         _num(r["se_pp"]), _num(r["df"], 0), _num(r["mde_pp"]))
        console.print(rows)
    _show_options(result)


def _show_options(result: dict) -> None:
    opts = Table(show_edge=False, box=None, pad_edge=False, title_justify="left",
                 title=f"Designs for {result['effect_pp']:g} pp at {result['power']:.0%} power "
                       "(cost per arm: training rollouts + every evaluation episode)")
    for col in ("option", "seeds", "tasks", "runs", "episodes/arm", "cost", "SE (pp)",
                "MDE (pp)", "power"):
        opts.add_column(col, justify="left" if col == "option" else "right")
    for r in result["options"]:
        opts.add_row(r["change"], str(r["seeds"]), str(r["tasks"]), str(r["runs"]),
                     f"{r['episodes']:,}", f"{r['cost']:,.0f}", f"{r['se_pp']:.2f}",
                     f"{r['mde_pp']:.2f}", f"{r['power']:.0%}")
    console.print(opts)
    changes = {r["change"] for r in result["options"]}
    missing = [w for w in ("seeds", "tasks", "runs") if f"more {w}" not in changes]
    if missing:
        console.print(f"more {' / '.join(missing)} alone: not enough within 20 seeds, 6x the "
                      "tasks, 10 runs")
    if "cheapest" not in changes:
        from hscale.analysis import StudySize, floor_se

        d = StudySize(**result["design"])
        floor = 100 * floor_se(result["components"], StudySize(d.seeds, 6 * d.tasks, d.harnesses,
                                                            d.runs, d.episodes))
        console.print(f"no design in that range reaches it: with 6x the tasks, the task and "
                      f"harness parts alone leave SE >= {floor:.2f} pp however many seeds and "
                      f"runs ({d.harnesses} in-space harnesses)")


def _counts(design: dict) -> list[float]:
    from hscale.analysis import StudySize

    return list(StudySize(**design).counts().values())


def _num(value: float, digits: int = 2) -> str:
    if value is None or math.isnan(value):
        return "—"
    return "∞" if math.isinf(value) else f"{value:.{digits}f}"


def power_cmd(
    source: Annotated[Path, typer.Argument(metavar="RESULTS_DIR | SPEC", help="A pilot's "
                                           "runs/<experiment> folder, or an experiment YAML "
                                           "(then --components is needed).")],
    reference: Annotated[str | None, typer.Option(help="Arm the others are compared with "
                                                       "(default: the report's, structured-18 "
                                                       "when present).")] = None,
    effect: Annotated[float, typer.Option(help="Difference to detect, in percentage "
                                               "points.")] = 4.0,
    power: Annotated[float, typer.Option(help="Wanted power.")] = 0.8,
    alpha: Annotated[float, typer.Option(help="Two-sided level before Holm's "
                                              "adjustment.")] = 0.05,
    comparisons: Annotated[int | None, typer.Option(help="Planned comparisons m (default: "
                                                         "one per arm but the reference).")
                           ] = None,
    components: Annotated[str | None, typer.Option(help="Variances of the paired difference "
                                                        "(0-1 scale): seed=..,task=..,harness=.."
                                                        ",seed_task=..,run=..,residual=.. or "
                                                        "a YAML/JSON file.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of "
                                                         "tables.")] = False,
) -> None:
    """Variance components of a paired Pass@1 difference, the minimum detectable effect of
    the design, and the seeds x tasks x runs that detect --effect with --power."""
    result = plan(source, reference, effect, power, alpha, comparisons, components)
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
