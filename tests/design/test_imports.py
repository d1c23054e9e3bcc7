"""design modules may import each other only one way: a cycle, even through an import
inside a function, makes the import order matter and hides a tangled dependency."""

import ast
from pathlib import Path

import networkx as nx

from design import _EXPORTS


def design_imports():
    """Edges a -> b for every import of design module b in design/a.py, at any depth
    (``from design import name`` counts as an import of the module that defines name)."""
    root = Path(__file__).resolve().parents[2] / "design"
    modules = {path.stem for path in root.glob("*.py")} - {"__init__"}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name in modules:
        for node in ast.walk(ast.parse((root / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "design":
                targets = [_EXPORTS.get(a.name, a.name).removeprefix("design.")
                           for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module.removeprefix("design.")] \
                    if node.module.startswith("design.") else []
            elif isinstance(node, ast.Import):
                targets = [a.name.removeprefix("design.") for a in node.names
                           if a.name.startswith("design.")]
            else:
                continue
            graph.add_edges_from((name, t) for t in targets if t in modules)
    return graph


def test_design_modules_import_each_other_without_cycles():
    graph = design_imports()
    assert graph.has_edge("oa", "product")
    assert list(nx.simple_cycles(graph)) == []
