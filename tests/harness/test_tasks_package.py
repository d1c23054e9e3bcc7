"""The hscale.harness.tasks package: its stated API, and submodules importing in no circle."""

from __future__ import annotations

import ast
import importlib
from graphlib import TopologicalSorter
from pathlib import Path

import hscale.harness.tasks as tasks_package

PACKAGE = Path(tasks_package.__file__).parent


def test_all_names_resolve_to_their_home_module():
    assert len(set(tasks_package.__all__)) == len(tasks_package.__all__)
    for name in tasks_package.__all__:
        value = getattr(tasks_package, name)
        home = getattr(value, "__module__", None)
        if home and home.startswith("hscale.harness.tasks."):
            assert getattr(importlib.import_module(home), name) is value


def test_submodules_import_without_cycles():
    graph = {}
    for path in PACKAGE.glob("*.py"):
        if path.stem == "__init__":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[path.stem] = {node.module.rsplit(".", 1)[-1] for node in ast.walk(tree)
                            if isinstance(node, ast.ImportFrom) and node.module
                            and node.module.startswith("hscale.harness.tasks.")}
    assert len(graph) >= 4
    list(TopologicalSorter(graph).static_order())  # raises CycleError on a cycle
