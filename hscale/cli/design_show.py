"""How ``hscale design`` shows arrays: a run table, a GWLP, a balance table."""

from __future__ import annotations

import numpy as np
from rich.markup import escape
from rich.table import Table


def array_table(array: np.ndarray, names: list[str], limit: int = 60) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    table.add_column("run", justify="right", style="dim")
    for n in names:
        table.add_column(n, justify="right")
    for i, row in enumerate(array[:limit]):
        table.add_row(str(i), *(str(int(v)) for v in row))
    if len(array) > limit:
        table.add_row("...", *(["..."] * len(names)))
    return table


def fmt_gwlp(values, most: int = 6) -> str:
    """A_1..A_k of a GWLP (A_0 = 1 is dropped) as a short tuple, the first ``most`` terms."""
    shown = ", ".join(f"{v:.4g}" for v in values[1:most + 1])
    return "(" + shown + (", ..." if len(values) > most + 1 else "") + ")"


def print_balance(console, counts: np.ndarray, names: list[str], levels: tuple[int, ...]) -> None:
    table = Table(title="balance table: runs at each level pair", show_edge=False)
    for col in ("factors", "counts (rows: first factor's level)", "expected"):
        table.add_column(col)
    n = int(counts[0, 0].sum())
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            block = counts[i, j, : levels[i], : levels[j]]
            rows = " | ".join(" ".join(str(int(v)) for v in r) for r in block)
            exp = n / (levels[i] * levels[j])
            style = "" if (block == exp).all() else "red"
            table.add_row(escape(f"{names[i]} x {names[j]}"), rows, f"{exp:g}", style=style)
    console.print(table)
