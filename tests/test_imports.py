"""The project's modules import each other one way only, and stay small.

A cycle, even through an import inside a function, makes import order matter and hides a
tangled dependency; the layers keep the light packages light (design imports nothing of
hscale's but the shared home; the file contracts never import torch).
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("hscale", "design", "harness", "train", "analysis")
MAX_LINES = 460


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages."""
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _target(module: str, name: str | None, known: dict[str, Path]) -> str | None:
    """The project module an ``import module`` / ``from module import name`` reaches."""
    if name is not None and f"{module}.{name}" in known:
        return f"{module}.{name}"
    if name is not None and module in PACKAGES:
        exports = getattr(importlib.import_module(module), "_EXPORTS", {})
        if name in exports:
            return exports[name]
    return module if module in known else None


def import_graph() -> nx.DiGraph:
    known = modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(known)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[:len(package.split(".")) -
                                                         node.level + 1], base]).strip(".")
                targets = [_target(base, a.name, known) for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [_target(a.name, None, known) for a in node.names]
            else:
                continue
            graph.add_edges_from((name, t) for t in targets if t and t != name)
    return graph


def test_no_module_imports_itself_through_others():
    graph = import_graph()
    assert graph.has_edge("train.runner", "train.contracts")  # the graph sees real imports
    assert list(nx.simple_cycles(graph)) == []


def test_layers():
    graph = import_graph()
    for name in graph:
        reached = {t.split(".")[0] for t in graph.successors(name)}
        if name.startswith("design"):
            assert reached <= {"design", "hscale"}, name
        if name.startswith("hscale") and not name.startswith("hscale.cli"):
            assert reached <= {"hscale"}, name


def test_the_contracts_and_the_cli_root_stay_light():
    code = ("import sys, train.contracts, hscale.cli, analysis.load; "
            "print([m for m in ('torch', 'verl', 'ray', 'transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr


def test_modules_stay_small():
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}, \
        "split these by what they hold"
