"""``hscale design ...``: build, verify and bound orthogonal arrays; explore factor spaces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hscale.cli.design_show import array_table, fmt_gwlp, print_balance
from hscale.errors import HscaleError

app = typer.Typer(help="Design harness factor spaces: orthogonal arrays, bounds, neighbourhoods.",
                  no_args_is_help=True, add_completion=False)
console = Console(highlight=False, soft_wrap=True)

# Above these sizes the CLI skips pairwise criteria (run pairs x factors) and wide tables
# instead of stalling, and refuses long listings.
_CRITERIA_WORK = 200_000_000
_COLUMN_LIMIT = 40
_SPACE_ROWS_LIMIT = 10_000
_NEIGHBOURS_LIMIT = 100_000

LevelsArg = Annotated[str, typer.Argument(help="Level counts, e.g. 3^5 or 2^1,3^7 (oa: or "
                                                "harness, the papers' space with its factors' "
                                                "names).")]
StrengthOpt = Annotated[int, typer.Option("--strength", "-t", help="Strength t.")]


@app.command("oa")
def oa_cmd(
    levels: LevelsArg,
    strength: StrengthOpt = 2,
    runs: Annotated[int | None, typer.Option("--runs", "-n", help="Number of runs N.")] = None,
    lam: Annotated[int | None, typer.Option("--lam", help="Index: N = lam * L^t.")] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the array as CSV.")] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="Shuffle rows and levels "
                                                        "reproducibly.")] = None,
    names: Annotated[str | None, typer.Option(help="Factor names, comma-separated.")] = None,
) -> None:
    """Build an orthogonal array, verify it and print it with its checks: the best-ranked
    class by GWLP where every class can be enumerated (design candidates lists them), else
    the one a construction gives; the output says which."""
    from hscale.design import (
        FactorSpace,
        best_orthogonal_array,
        check_array_target,
        distance_range,
        format_levels,
        gwlp,
        write_array,
    )

    space = None
    if out is not None:
        check_array_target(out)  # before the work: nothing of the user's is replaced
    if levels.strip() == "harness":  # the papers' space: its factors' names (S, T, O, C, W)
        from hscale.harness import factor_space

        papers = factor_space()
        levels = format_levels(papers.levels)
        names = names or ",".join(papers.names)
    if names is not None:
        space = FactorSpace.from_levels(levels, [n.strip() for n in names.split(",")])
    design = best_orthogonal_array(levels, strength, runs=runs, lam=lam, seed=seed,
                                   space=space)
    cols = list(design.space.names)
    checks = [f"verified: strength {design.strength} holds for every {design.strength}-tuple "
              "of columns"]
    if design.runs**2 * len(cols) <= _CRITERIA_WORK:  # both compare every pair of runs
        lo, hi = distance_range(design.array)
        try:
            pattern = fmt_gwlp(gwlp(design.array, design.levels))
        except OverflowError:
            pattern = "(too large to show)"
        checks.append(f"GWLP A1..Ak: {pattern}; pairwise Hamming distance {lo}..{hi}")
    else:
        checks.append("GWLP and pairwise distances skipped: too many runs x factors")
    if out is not None:  # written last: an error above leaves no file behind
        write_array(out, design.array, cols)
    console.print(f"[bold]OA({design.runs}; {format_levels(design.levels)}; strength "
                  f"{design.strength})[/bold] via {design.method}")
    console.print(array_table(design.array, cols[:_COLUMN_LIMIT]) if len(cols) <= _COLUMN_LIMIT
                  else f"({len(cols)} columns: too wide to show; use --out)")
    for line in checks:
        console.print(line)
    if out is not None:
        console.print(f"wrote {escape(str(out))}")


@app.command("verify")
def verify_cmd(
    file: Annotated[Path, typer.Argument(help="CSV array: a header of factor names, then runs.")],
    strength: StrengthOpt = 2,
    levels: Annotated[str | None, typer.Option(help="Level counts (default: max level + 1).")
                      ] = None,
    table: Annotated[bool, typer.Option("--table", help="Print the full balance table.")] = False,
) -> None:
    """Check that FILE is an orthogonal array. Exit 0: it is; 1: it is not; 2: bad input.

    A non-array's report counts its unbalanced column tuples, names the worst
    and lists the first ten; tuples are checked in blocks, in bounded memory.
    """
    from hscale.design import balance_table, check_strength, parse_levels, read_array

    array, names = read_array(file)
    lv = parse_levels(levels) if levels else None
    if lv is not None and len(lv) != len(names):
        raise HscaleError(f"--levels gives {len(lv)} factors, {file} has {len(names)} columns",
                          "give one level count per column")
    report = check_strength(array, strength, lv)
    if table:
        print_balance(console, balance_table(array, report.levels), names, report.levels)
    dup = len(array) - len(np.unique(array, axis=0))
    extra = f" ({dup} duplicate rows)" if dup else ""
    # the count and the worst tuple on one line, then the first few tuples, one a line
    console.print(f"{escape(str(file))}: {report.summary(limit=0)}{extra}")
    for failure in report.failures:
        console.print(f"  {escape(failure.describe())}")
    if report.failed > len(report.failures):
        console.print(f"  ... and {report.failed - len(report.failures)} more")
    raise typer.Exit(0 if report.ok else 1)


@app.command("bounds")
def bounds_cmd(
    levels: LevelsArg,
    strength: StrengthOpt = 2,
    runs: Annotated[int | None, typer.Option("--runs", "-n", help="Check this N (exit 1 if a "
                                                                   "bound excludes it).")] = None,
) -> None:
    """Rao, divisibility, Bush and Bose-Bush bounds; the smallest feasible and buildable N."""
    from hscale.design import (
        bose_bush_bound,
        bush_bound,
        divisor,
        feasibility,
        format_levels,
        orthogonal_array,
        parse_levels,
        rao_bound,
        smallest_runs,
    )

    lv = parse_levels(levels)
    if runs is not None and runs < 1:
        raise HscaleError(f"--runs must be positive, got {runs}", "give the number of runs N")
    rao, div = rao_bound(lv, strength), divisor(lv, strength)
    smallest = smallest_runs(lv, strength)
    table = Table(title=f"bounds for OA(N; {format_levels(lv)}; strength {strength})",
                  show_edge=False)
    table.add_column("bound")
    table.add_column("says")
    table.add_row("Rao", f"N >= {rao}")
    table.add_row("divisibility", f"N is a multiple of {div}")
    pure = len(set(lv)) == 1
    if pure and strength >= 2:
        s = lv[0]
        table.add_row("Bush (index 1)", f"at N = {s ** strength}: at most "
                      f"{bush_bound(s, strength)} factors")
        if strength == 2:
            at = runs if runs is not None else smallest
            lam = max(1, at // (s * s))
            bb = bose_bush_bound(s, lam) if at % (s * s) == 0 else None
            table.add_row("Bose-Bush", f"at N = {lam * s * s}: at most {bb} factors"
                          if bb is not None else "adds nothing here")
    table.add_row("smallest N passing all", str(smallest))
    try:
        built = orthogonal_array(lv, strength)
        table.add_row("smallest N hscale builds", f"{built.runs} via {built.method}")
    except HscaleError as exc:  # none built, or too large to try
        table.add_row("smallest N hscale builds", f"none found ({exc.message})")
    console.print(table)
    if runs is not None:
        verdict = feasibility(lv, strength, runs)
        if verdict.ok:
            console.print(f"N = {runs}: no bound excludes it")
        else:
            for reason in verdict.reasons:
                console.print(f"N = {runs}: impossible: {reason}")
            raise typer.Exit(1)


def _space(levels: str | None):
    from hscale.design import FactorSpace
    from hscale.harness import factor_space

    return factor_space() if levels in (None, "harness") else FactorSpace.from_levels(levels)


@app.command("space")
def space_cmd(
    levels: Annotated[str | None, typer.Argument(help="Level counts, or 'harness' (default): "
                                                      "the papers' S,T,O,C,W space.")] = None,
    limit: Annotated[int, typer.Option(help="Print at most this many configurations.")] = 30,
    start: Annotated[int, typer.Option(help="First index to print.")] = 0,
) -> None:
    """List a space's factors and its configurations with index and label."""
    space = _space(levels)
    space.strides  # noqa: B018 -- refuses spaces too large to index, before any output
    if limit > _SPACE_ROWS_LIMIT:
        raise HscaleError(f"--limit {limit} is more rows than a terminal shows",
                          f"use --limit {_SPACE_ROWS_LIMIT} or less, with --start to page")
    if start < 0 or start >= space.size:
        raise HscaleError(f"--start must be 0..{space.size - 1}, got {start}",
                          "give an index inside the space")
    console.print(f"[bold]{space}[/bold]: {space.size} configurations")
    for f in space.factors:
        desc = f" ({f.description})" if f.description else ""
        console.print(f"  {f.name}{desc}: " + ", ".join(f"{i}={n}" for i, n in
                                                       enumerate(f.levels)))
    stop = min(space.size, start + max(limit, 0))  # <= 10,000 rows of <= 63 factors
    table = Table(show_edge=False)
    table.add_column("index", justify="right")
    table.add_column("label")
    table.add_column("realizations")
    configs = space.from_index(np.arange(start, stop, dtype=np.int64))
    for idx, cfg in zip(range(start, stop), configs, strict=True):
        table.add_row(str(idx), space.label(cfg),
                      " ".join(space.level_name(j, int(v)) for j, v in enumerate(cfg)))
    console.print(table)
    if stop < space.size:
        console.print(f"... {space.size - stop} more (use --start / --limit)")


@app.command("neighbours")
def neighbours_cmd(
    label: Annotated[str, typer.Argument(help="A configuration label such as S0-T1-O2-C0-W1.")],
    radius: Annotated[float, typer.Option("--radius", "-r", help="Hamming distance (with "
                                                                 "--weights, any number).")
                      ] = 1,
    levels: Annotated[str | None, typer.Option(help="Space levels (default: harness).")] = None,
    within: Annotated[bool, typer.Option("--within", help="Include everything up to the "
                                                          "radius.")] = False,
    weights: Annotated[str | None, typer.Option(
        help="Component weights, e.g. C=2,S=0.5 (factor or harness component names; missing "
             "ones 1; normalised to mean 1), or a YAML file with a weights: mapping such as "
             "hscale report's weights.yaml.")] = None,
) -> None:
    """Configurations at Hamming distance R from LABEL, by index arithmetic; with --weights,
    at weighted distance R (the sum of the differing components' weights)."""
    from hscale.design import elementary_symmetric, neighbours

    space = _space(levels)
    cfg = space.parse_label(label)
    word = "within" if within else "at"
    w = _weights(space, weights)
    if w is not None:
        _weighted_neighbours(space, cfg, label, radius, within, w)
        return
    if not float(radius).is_integer() or not 0 <= radius <= space.n_factors:
        raise HscaleError(f"radius must be 0..{space.n_factors}, got {radius:g}",
                          "a Hamming radius is a whole number; a fractional one needs "
                          "--weights")
    radius = int(radius)
    per_radius = elementary_symmetric([s - 1 for s in space.levels], radius)
    count = sum(per_radius) if within else per_radius[radius]
    if count > _NEIGHBOURS_LIMIT:
        raise HscaleError(f"{count} configurations lie {word} "
                          f"distance {radius}: too many to list", "use a smaller --radius")
    idx = neighbours(space, cfg, radius, exact=not within)
    labels = space.labels(space.from_index(idx))
    console.print(f"{len(labels)} configurations {word} distance {radius} of {label}:")
    for lab in labels:
        console.print(f"  {lab}")


def _weights(space, text: str | None):
    """--weights as a normalised vector; None when not given or all equal."""
    if text is None:
        return None
    from hscale.design import parse_weights, resolve_weights
    from hscale.harness import component_aliases

    return resolve_weights(space, parse_weights(text), component_aliases(space))


def _weighted_neighbours(space, cfg, label: str, radius: float, within: bool, weights
                         ) -> None:
    from hscale.design import distance_matrix, neighbours, tie_key

    idx = neighbours(space, cfg, radius, exact=not within, weights=weights)
    word = "within" if within else "at"
    if len(idx) > _NEIGHBOURS_LIMIT:
        raise HscaleError(f"{len(idx)} configurations lie {word} weighted distance "
                          f"{radius:g}: too many to list", "use a smaller --radius")
    configs = space.from_index(idx)
    dist = distance_matrix(cfg[None, :], configs, weights)[0]
    shown = ", ".join(f"{n} {w:.3g}" for n, w in zip(space.names, weights, strict=True))
    console.print(f"{len(idx)} configurations {word} weighted distance {radius:g} of {label} "
                  f"(weights {shown}):")
    for i in np.lexsort((idx, tie_key(dist))):
        console.print(f"  {space.label(configs[i])}  {dist[i]:.3g}")
    if not len(idx) and not within:
        console.print("  (none at exactly that distance: --within lists everything up to it)")


@app.command("candidates")
def candidates_cmd(
    levels: LevelsArg,
    runs: Annotated[int, typer.Option("--runs", "-n", help="Number of runs N.")],
    strength: StrengthOpt = 2,
    criterion: Annotated[str, typer.Option(help="Rank by gwlp, min_distance or "
                                                "covering_radius.")] = "gwlp",
    out: Annotated[Path | None, typer.Option(help="Write the best candidate as CSV.")] = None,
) -> None:
    """List every non-isomorphic OA(N; LEVELS) with its criteria, best first.

    Exit 0: the classes are listed.
    Exit 1: no such array exists; one line says why (the bound that excludes N,
    or the complete enumeration finding none).
    Exit 2: bad input, or beyond the enumerator (design oa builds one array).
    """
    from rich.progress import Progress

    from hscale.design import (
        FactorSpace,
        candidates,
        check_array_target,
        feasibility,
        format_levels,
        parse_levels,
        shown,
        write_array,
    )

    lv = parse_levels(levels)
    if out is not None:
        check_array_target(out)
    verdict = feasibility(lv, strength, runs)  # refuses bad levels, strength or N (exit 2)
    name = f"OA({shown(runs)}; {format_levels(lv)}) of strength {strength}"
    if not verdict.ok:  # a negative answer, however large the request
        why = "; and ".join(_such(reason, name) for reason in verdict.reasons)
        console.print(escape(f"no {name} exists: {why}"))
        raise typer.Exit(1)
    # off the terminal a transient bar would leave a blank line before the answer
    with Progress(console=console, transient=True, disable=not console.is_terminal) as progress:
        bar = progress.add_task("enumerating", total=None)

        def report(stage: str, done: int, total: int) -> None:
            progress.update(bar, description=stage, completed=done, total=total or None)

        ranked = candidates(lv, runs, strength, criterion=criterion, progress=report)
    if not ranked:
        console.print(escape(f"no {name} exists: the complete enumeration finds none, "
                             "although no bound excludes it"))
        raise typer.Exit(1)
    table = Table(title=f"{len(ranked)} non-isomorphic OA({runs}; {format_levels(lv)}; "
                  f"strength {strength}), best by {escape(criterion)} first", show_edge=False)
    gwlp_head = (f"GWLP A{strength + 1}..A{len(lv)}" if strength < len(lv)
                 else "GWLP (all zero)")
    for col in (gwlp_head if col == "GWLP" else col
                for col in ("id", "GWLP", "min distance", "distance range", "covering radius")):
        table.add_column(col)
    for c in ranked:
        s = c.summary
        # _fmt_gwlp drops its first value: here A_t, which is 0 for a strength-t array
        table.add_row(c.id, fmt_gwlp(s["gwlp"][strength:]), str(s["min_distance"]),
                      f"{s['min_distance']}..{s['max_distance']}",
                      str(s["covering_radius"]))
    console.print(table)
    if out is not None and ranked:
        write_array(out, ranked[0].array, list(FactorSpace.from_levels(lv).names))
        console.print(f"wrote {ranked[0].id} to {escape(str(out))}")


def _such(reason: str, name: str) -> str:
    """A bound's sentence about ``name`` said of 'such an array', to follow 'no NAME exists'."""
    return "such an array " + reason[len(name) + 1:] if reason.startswith(name + " ") else reason


@app.command("paper")
def paper_cmd(
    out: Annotated[Path | None, typer.Option(help="Folder for train.csv, eval.csv, "
                                                  "first_order.csv.")] = None,
) -> None:
    """The papers' harness design: OA-18 training set with h0, the held-out eval set, checks."""
    from hscale.design import (
        check_array_target,
        check_strength,
        covering_radius,
        distance_matrix,
        distance_range,
        eval_set,
        first_order,
        gwlp,
        structured,
        write_array,
    )
    from hscale.harness import factor_space

    space = factor_space()
    if out is not None:
        if out.exists() and not out.is_dir():
            raise HscaleError(f"--out {out}: exists and is not a folder",
                              "give a folder for train.csv, eval.csv and first_order.csv")
        for name in ("train", "eval", "first_order"):
            check_array_target(out / f"{name}.csv")
    train = structured(space, runs=18)
    fo = first_order(space)
    evals = eval_set(space, [train, fo])  # held out from every arm but Full-243
    console.print(f"[bold]{space}[/bold], {space.size} configurations; base harness h0 = "
                  f"{space.label(space.base)}")
    for title, d in (("training set (Structured-18)", train), ("in-space eval set", evals),
                     ("first-order coverage set", fo)):
        console.print(f"\n[bold]{title}[/bold]: {d.runs} configurations via {d.method}")
        for start in range(0, d.runs, 6):
            console.print("  " + "  ".join(d.labels[start:start + 6]), soft_wrap=True)
    lo, hi = distance_range(train.array)
    elo, ehi = evals.notes["pairwise_distance_range"]
    cross = distance_matrix(evals.array, train.array)
    facts = [
        f"training GWLP A3..A5 = {fmt_gwlp(gwlp(train.array)[2:])}, pairwise distances "
        f"{lo}..{hi}, covering radius {covering_radius(train.array, space.levels)}",
        f"eval-to-training distances {cross.min()}..{cross.max()}",
    ]
    checks = [
        ("training set is an OA(18; 3^5) of strength 2", check_strength(train.array, 2).ok),
        ("training set contains h0", bool((train.indices == 0).any())),
        ("training set is the best of the 10 OA(18; 3^5) by GWLP (minimum distance 3)",
         lo == 3),
        ("eval set is disjoint from training", not np.isin(evals.indices, train.indices).any()),
        ("eval set excludes h0", not (evals.indices == 0).any()),
        ("eval set is disjoint from the first-order set",
         not np.isin(evals.indices, fo.indices).any()),
        ("eval set uses every realization 6 times",
         all(c == [6, 6, 6] for c in evals.notes["level_counts"])),
        (f"eval pairwise distances {elo}..{ehi} (paper: 2..5)", (elo, ehi) == (2, 5)),
        ("first-order set uses every realization once",
         all(sorted(fo.array[:, j].tolist()) == [0, 1, 2] for j in range(5))),
    ]
    console.print("\n[bold]measures[/bold]")
    for text in facts:
        console.print(f"  {text}")
    console.print("\n[bold]checks[/bold]")
    for text, ok in checks:
        console.print(f"  [{'green' if ok else 'red'}]{'PASS' if ok else 'FAIL'}[/] {text}")
    if out is not None:
        for name, d in (("train", train), ("eval", evals), ("first_order", fo)):
            write_array(out / f"{name}.csv", d.array, list(space.names))
        console.print(f"wrote {escape(str(out))}/train.csv, eval.csv, first_order.csv")
    if not all(ok for _, ok in checks):
        raise typer.Exit(1)
