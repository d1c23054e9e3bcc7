"""Pass@1 against the training-set size N and against K: the papers' harness scaling law.

Arms are placed by what their manifests record, never by their names: N is the number of
training configurations, K the assignment's ``k``. Arms form a series when they share the
experiment, model, algorithm, assignment mode and kind of training set (a strength-2
orthogonal array, or another set) and K (for the N fit) or N (for the K fit); a series that
takes two or more values is fitted, so structured and random sets get a line each.

Per series and setting, each arm's Pass@1 (%) pools its final-checkpoint episodes; a
weighted least-squares line is fitted on log2 N (or K), each arm weighted by the inverse
variance of its Pass@1 (cluster bootstrap over tasks, floored by the binomial variance at
the series' pooled rate, so an arm at 0 % does not take all the weight). The slope's
interval and the line's band come from the same bootstrap: whole tasks resampled, all arms
at once (they share their tasks), the line refitted each time, so they answer "what if
other tasks had been drawn".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from hscale.analysis._bootstrap import CLUSTER
from hscale.analysis._load import Results
from hscale.analysis._naming import SETTING_ORDER, order_key, setting_label
from hscale.analysis._passk import final_step
from hscale.analysis._plots import FigureSpec, NoData, Options
from hscale.analysis._render import Table, fmt
from hscale.analysis._stats import GROUP
from hscale.contracts import HEADLINE_SETTINGS
from hscale.errors import HscaleError

SETTINGS = HEADLINE_SETTINGS
AXES = {"N": ("n", "k"), "K": ("k", "n")}  # what varies -> (its column, the one held fixed)
PER = {"N": "doubling of N", "K": "+1 K"}
OA, OTHER = "orthogonal array", "other set"
TITLE = "Scaling: Pass@1 vs training-set size N and K"
GRID = 40  # points a fitted line and its band are drawn at
WHY_NOT = ("the runs vary neither N (training configurations) nor K (harnesses a task) "
           "within one experiment, assignment mode and kind of training set")


@dataclass
class Scaling:
    """The fits (one row per series x setting), the arms' points, and the fitted lines."""

    fits: pd.DataFrame
    points: pd.DataFrame
    lines: pd.DataFrame


def arm_axes(results: Results) -> pd.DataFrame:
    """Per measured arm: N, K, the assignment mode and the kind of training set."""
    runs, keys = results.runs, [*GROUP, "method"]
    columns = [*keys, "n", "k", "mode", "design"]
    if runs.empty or not {"train_harnesses", "assignment", *keys} <= set(runs.columns):
        return pd.DataFrame(columns=columns)
    rows = []
    for key, part in runs.groupby(keys, sort=False):
        first = part.iloc[0]
        train, assignment = list(first["train_harnesses"] or []), dict(first["assignment"] or {})
        if not train or "k" not in assignment:
            continue
        rows.append({**dict(zip(keys, map(str, key), strict=True)), "n": len(train),
                     "k": int(assignment["k"]), "mode": str(assignment.get("mode", "")),
                     "design": _design(train, first.get("space"))})
    return pd.DataFrame(rows, columns=columns)


def _design(labels: Sequence[str], factors: dict | None) -> str:
    """OA when the training configurations form a strength-2 orthogonal array of the space."""
    from hscale.analysis._effects import parse_harnesses
    from hscale.design import check_strength

    table = parse_harnesses(labels)
    if not factors or len(table) != len(labels) or table.shape[1] != len(factors):
        return OTHER
    try:
        report = check_strength(table.to_numpy(), 2, [len(v) for v in factors.values()],
                                first_only=True)
    except HscaleError:
        return OTHER
    return OA if report.ok else OTHER


def scaling(results: Results, n_boot: int = 2000, seed: int = 0,
            settings: Sequence[str] = SETTINGS) -> Scaling:
    """Every series x setting fitted (see the module's docstring)."""
    axes = arm_axes(results)
    ep = final_step(results.episodes)
    ep = ep[ep["setting"].isin(list(settings))]
    fits, points, lines = [], [], []
    for varies, (col, fixed) in AXES.items():
        for key, part in axes.groupby([*GROUP, "mode", "design", fixed], sort=False):
            if part[col].nunique() < 2:
                continue
            ident = {**dict(zip(GROUP, key[:4], strict=True)), "varies": varies,
                     "series": _series(varies, key[4], key[5], int(key[6]))}
            xs = dict(zip(part["method"], part[col].astype(float), strict=True))
            mine = ep[ep["method"].astype(str).isin(list(xs))]
            for name, value in zip(GROUP, key[:4], strict=True):
                mine = mine[mine[name].astype(str) == value]
            for setting, block in mine.groupby("setting", observed=True, sort=False):
                rng = np.random.default_rng([seed, len(fits)])
                found = fit_series(block, xs, varies == "N", n_boot, rng)
                if found is None:
                    continue
                fit, pts, line = found
                here = {**ident, "setting": str(setting)}
                fits.append({**here, **fit})
                points.append(pts.assign(**here))
                lines.append(line.assign(**here))
    order = order_key(SETTINGS, SETTING_ORDER)
    fits_frame = pd.DataFrame(fits)
    if len(fits_frame):
        fits_frame = fits_frame.assign(_o=fits_frame["setting"].map(order)).sort_values(
            ["experiment", "varies", "series", "_o"], kind="stable").drop(columns="_o")
    return Scaling(fits_frame.reset_index(drop=True),
                   pd.concat(points, ignore_index=True) if points else pd.DataFrame(),
                   pd.concat(lines, ignore_index=True) if lines else pd.DataFrame())


def _series(varies: str, mode: str, design: str, fixed: int) -> str:
    return f"{design}, {mode} K={fixed}" if varies == "N" else f"{design} N={fixed}, {mode}"


def fit_series(episodes: pd.DataFrame, xs: dict[str, float], log2: bool, n_boot: int,
               rng: np.random.Generator) -> tuple[dict, pd.DataFrame, pd.DataFrame] | None:
    """One series in one setting: (fit, points per arm, line on a grid); None when fewer
    than two values of x have episodes."""
    agg = episodes.groupby(["method", *CLUSTER], observed=True)["success"].agg(["sum", "count"])
    sums = agg["sum"].unstack("method", fill_value=0.0)
    counts = agg["count"].unstack("method", fill_value=0)
    methods = [str(m) for m in sums.columns]
    x_raw = np.array([xs[m] for m in methods])
    if len(set(x_raw)) < 2:
        return None
    x = np.log2(x_raw) if log2 else x_raw
    s, c = sums.to_numpy(np.float64), counts.to_numpy(np.float64)
    total, n = s.sum(0), c.sum(0)
    est = total / n
    tasks = s.shape[0]
    pooled = (total.sum() + 0.5) / (n.sum() + 1.0)
    floor = pooled * (1 - pooled) / n  # binomial at the series' rate: tasks only add to it
    if tasks >= 2 and n_boot >= 1:
        weights = rng.multinomial(tasks, np.full(tasks, 1.0 / tasks), size=n_boot)
        with np.errstate(invalid="ignore", divide="ignore"):
            boot = (weights @ s) / (weights @ c)
        var = np.maximum(np.nan_to_num(np.nanvar(boot, axis=0, ddof=1), nan=0.0), floor)
    else:
        boot, var = np.full((1, len(methods)), np.nan), floor
    w = 1.0 / var
    intercept, slope = _wls(x, est, w)
    boot_a, boot_b = _wls(x, boot, w)
    with np.errstate(all="ignore"):
        lo, hi = np.nanquantile(boot, [0.025, 0.975], axis=0)
        slope_lo, slope_hi = np.nanquantile(boot_b, [0.025, 0.975])
        grid = np.linspace(x.min(), x.max(), GRID)
        band = boot_a[:, None] + boot_b[:, None] * grid[None, :]
        band_lo, band_hi = np.nanquantile(band, [0.025, 0.975], axis=0)
    points = pd.DataFrame({"method": methods, "x": x_raw, "mean": est * 100, "lo": lo * 100,
                           "hi": hi * 100, "episodes": n.astype(int), "weight": w})
    line = pd.DataFrame({"x": 2.0 ** grid if log2 else grid,
                         "fit": (intercept + slope * grid) * 100, "lo": band_lo * 100,
                         "hi": band_hi * 100})
    fit = {"arms": len(methods), "values": ", ".join(f"{v:g}" for v in sorted(set(x_raw))),
           "tasks": tasks, "slope": slope * 100, "lo": slope_lo * 100, "hi": slope_hi * 100,
           "intercept": intercept * 100, "at_min": line["fit"].iloc[0],
           "at_max": line["fit"].iloc[-1]}
    return fit, points, line


def _wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intercept and slope of y on x with weights w; y may hold many rows (resamples)."""
    y = np.asarray(y, dtype=np.float64)
    xm = (w * x).sum() / w.sum()
    ym = (y * w).sum(axis=-1) / w.sum()
    slope = (w * (x - xm) * (y - ym[..., None])).sum(axis=-1) / (w * (x - xm) ** 2).sum()
    return ym - slope * xm, slope


def scaling_table(results: Results, n_boot: int = 2000, seed: int = 0) -> Table:
    """One row per series x setting: the slope with its interval, and the fitted ends."""
    fits = scaling(results, n_boot, seed).fits
    if fits.empty:
        return Table("scaling", TITLE, pd.DataFrame(), fits, [f"No fit: {WHY_NOT}."])
    frame = pd.DataFrame({
        "experiment": fits["experiment"], "model": fits["model"],
        "algorithm": fits["algorithm"], "varies": fits["varies"], "series": fits["series"],
        "setting": fits["setting"].map(setting_label), "arms": fits["arms"],
        "values": fits["values"],
        "slope (pp)": [f"{fmt(b, signed=True)} [{lo:+.2f}, {hi:+.2f}]" for b, lo, hi in
                       zip(fits["slope"], fits["lo"], fits["hi"], strict=True)],
        "per": fits["varies"].map(PER),
        "fitted Pass@1": [f"{fmt(a)} → {fmt(b)}" for a, b in
                          zip(fits["at_min"], fits["at_max"], strict=True)]})
    note = ("Weighted least-squares line of each arm's Pass@1 (%) on log2 N (N: training "
            "configurations) or on K (harnesses a task), arms grouped by experiment, "
            "assignment mode, kind of training set (a strength-2 orthogonal array or another "
            "set) and the other axis; weights: inverse variance of each arm's Pass@1. Slope "
            "in percentage points per doubling of N or per +1 K, with a 95% cluster-bootstrap "
            "interval over tasks; 'fitted Pass@1': the line at the smallest and largest value.")
    return Table("scaling", TITLE, frame, fits, [note])


def scaling_data(results: Results, options: Options | None = None) -> pd.DataFrame:
    """The arms' points and the fitted lines, one frame (``row``: point or line)."""
    options = options or Options()
    found = scaling(results, options.n_boot, options.seed)
    if found.fits.empty:
        raise NoData(WHY_NOT)
    return pd.concat([found.points.assign(row="point"), found.lines.assign(row="line")],
                     ignore_index=True)


def plot_scaling(data: pd.DataFrame):
    """One panel per axis (N, K) x setting: arms with intervals, the fit with its band."""
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    if data is None or data.empty:
        raise NoData("no scaling fits")
    rows = [v for v in AXES if v in set(data["varies"])]
    settings = [s for s in SETTINGS if s in set(data["setting"])]
    fig = Figure(figsize=(4.2 * len(settings) + 0.6, 3.4 * len(rows)), layout="constrained")
    grid = fig.subplots(len(rows), len(settings), squeeze=False)
    keys = [*GROUP[1:], "series"]
    several = len(data[list(GROUP[1:])].drop_duplicates()) > 1  # name the experiment then
    cmap = colormaps["tab10"]
    for i, varies in enumerate(rows):
        lines = list(dict.fromkeys(map(tuple, data.loc[data["varies"] == varies, keys].values)))
        for j, setting in enumerate(settings):
            ax = grid[i][j]
            panel = data[(data["varies"] == varies) & (data["setting"] == setting)]
            parts = list(panel.groupby(keys, sort=False))
            for s, (key, part) in enumerate(parts):
                name = f"{' '.join(key[:-1])}: {key[-1]}" if several else key[-1]
                _draw(ax, part, varies, cmap(lines.index(tuple(key)) % cmap.N), name,
                      s - (len(parts) - 1) / 2)
            ax.set(title=f"{setting_label(setting)}: Pass@1 vs {varies}",
                   xlabel="N (training configurations, log scale)" if varies == "N"
                   else "K (harnesses a task)", ylabel="Pass@1 (%)")
            if varies == "N":
                ax.set_xscale("log", base=2)
                values = sorted(set(panel.loc[panel["row"] == "point", "x"]))
                ax.set_xticks(values, [f"{v:g}" for v in values])
                ax.minorticks_off()
        grid[i][-1].legend(fontsize=7, loc="best")
    fig.suptitle("Harness scaling: Pass@1 with 95% intervals over tasks, weighted fits")
    return fig


def _draw(ax, part: pd.DataFrame, varies: str, color, label: str, offset: float) -> None:
    line = part[part["row"] == "line"].sort_values("x")
    ax.plot(line["x"], line["fit"], color=color, lw=1.4, label=label)
    ax.fill_between(line["x"], line["lo"], line["hi"], color=color, alpha=0.15, lw=0)
    pts = part[part["row"] == "point"]
    shift = offset * 0.03  # series at the same x stay apart
    x = pts["x"] * 2.0 ** shift if varies == "N" else pts["x"] + shift
    err = np.vstack([pts["mean"] - pts["lo"], pts["hi"] - pts["mean"]])
    ax.errorbar(x, pts["mean"], yerr=np.nan_to_num(np.clip(err, 0, None)), fmt="o", ms=3.5,
                capsize=2, color=color, lw=1)


FIGURE = FigureSpec("scaling", "Pass@1 against training-set size N and K", scaling_data,
                    plot_scaling)
