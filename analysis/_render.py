"""Tables as Markdown, LaTeX (booktabs) and HTML, without extra dependencies."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

MISSING = "—"


@dataclass
class Table:
    """A paper table: display strings for people, tidy numbers for machines."""

    name: str  # file stem, e.g. "settings"
    title: str
    frame: pd.DataFrame  # row-label columns first, then one formatted column per cell
    data: pd.DataFrame  # the numbers behind it, one row per cell (written as CSV)
    notes: list[str] = field(default_factory=list)


def fmt(mean: float, std: float = math.nan, signed: bool = False, digits: int = 2) -> str:
    """``52.78 ± 1.87``; ``+9.80`` for differences; the em dash for a missing number."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return MISSING
    text = f"{mean:+.{digits}f}" if signed else f"{mean:.{digits}f}"
    if std is not None and not (isinstance(std, float) and math.isnan(std)):
        text += f" ± {std:.{digits}f}"
    return text


def fmt_interval(lo: float, hi: float, digits: int = 2) -> str:
    """``[-1.80, +35.10]``; where no interval can be estimated (the paired cells do not vary,
    or a term has nothing to estimate it with), what that means instead of ``[nan, nan]``."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "(no interval: the cells do not vary)"
    return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"


def fmt_p(p: float) -> str:
    if p is None or math.isnan(p):
        return MISSING
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def _cells(frame: pd.DataFrame) -> list[list[str]]:
    return [[str(v) for v in row] for row in frame.astype(object).fillna(MISSING).to_numpy()]


def to_markdown(table: Table) -> str:
    """A GitHub-flavoured Markdown table with its title and notes."""
    cols = [str(c) for c in table.frame.columns]
    esc = [[c.replace("|", "\\|") for c in row] for row in _cells(table.frame)]
    lines = [f"### {table.title}", "", "| " + " | ".join(cols) + " |",
             "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in esc]
    lines += [""] + [f"*{note}*  " for note in table.notes]
    return "\n".join(lines).rstrip() + "\n"


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
        "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}"}
_TEX_SYMBOLS = {"±": r"$\pm$", "Δ": r"$\Delta$", "−": "$-$", "—": "--", "·": r"$\cdot$",
                "<": r"$<$", ">": r"$>$", "≥": r"$\geq$"}


def tex_escape(text: str) -> str:
    out = "".join(_TEX.get(ch, ch) for ch in str(text))
    for symbol, tex in _TEX_SYMBOLS.items():
        out = out.replace(symbol, tex)
    return out


def to_latex(table: Table, label_columns: int | None = None) -> str:
    """A booktabs table: label columns left-aligned, numbers right-aligned."""
    labels = label_columns if label_columns is not None else _label_count(table.frame)
    spec = "l" * labels + "r" * (table.frame.shape[1] - labels)
    head = " & ".join(tex_escape(c) for c in table.frame.columns) + r" \\"
    body = [" & ".join(tex_escape(v) for v in row) + r" \\" for row in _cells(table.frame)]
    notes = "".join(f"\\par\\footnotesize {tex_escape(n)}\n" for n in table.notes)
    return ("\\begin{table}[t]\n\\centering\n"
            f"\\caption{{{tex_escape(table.title)}}}\n\\label{{tab:{table.name}}}\n"
            f"\\resizebox{{\\linewidth}}{{!}}{{%\n\\begin{{tabular}}{{{spec}}}\n\\toprule\n"
            f"{head}\n\\midrule\n" + "\n".join(body) + "\n\\bottomrule\n\\end{tabular}}\n"
            f"{notes}\\end{{table}}\n")


def _label_count(frame: pd.DataFrame) -> int:
    labels = ("source", "model", "algorithm", "method", "experiment", "term", "factor", "level")
    count = 0
    for col in frame.columns:
        if str(col) not in labels:
            break
        count += 1
    return max(count, 1)


def to_html(table: Table, link: Callable[[dict], str | None] | None = None) -> str:
    """An HTML table (escaped) with its title and notes, for the self-contained report;
    ``link`` (a display row -> a URL or None) adds a last column of links to each row's
    episodes."""
    frame = table.frame.astype(object).fillna(MISSING)
    hrefs = [link(row) for row in table.frame.to_dict("records")] if link else []
    if any(hrefs):
        frame = frame.assign(episodes=[f"@@link{i}@@" if h else "" for i, h in enumerate(hrefs)])
    body = frame.to_html(index=False, escape=True, border=0, classes="results")
    for i, href in enumerate(hrefs):
        if href:
            body = body.replace(f"@@link{i}@@", f"<a class='view' href='{html.escape(href)}'>"
                                                "episodes</a>", 1)
    notes = "".join(f"<p class='note'>{html.escape(n)}</p>" for n in table.notes)
    name = html.escape(table.name)
    labels = _label_count(table.frame)  # label columns left, numbers right
    style = (f"<style>#t-{name} td:nth-child(-n+{labels}),#t-{name} th:nth-child(-n+{labels})"
             "{text-align:left}</style>")
    return (f"<h3 id='{name}'>{html.escape(table.title)}</h3>\n{style}"
            f"<div class='wide' id='t-{name}'>{body}</div>\n{notes}")
