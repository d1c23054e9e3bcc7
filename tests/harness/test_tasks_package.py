"""The harness.tasks package: its stated API, and submodules that do not import in a circle."""

from __future__ import annotations

import ast
import importlib
from graphlib import TopologicalSorter
from pathlib import Path

import harness.tasks

PACKAGE = Path(harness.tasks.__file__).parent


def test_all_names_resolve_to_their_home_module():
    assert len(set(harness.tasks.__all__)) == len(harness.tasks.__all__)
    for name in harness.tasks.__all__:
        value = getattr(harness.tasks, name)
        home = getattr(value, "__module__", None)
        if home and home.startswith("harness.tasks."):
            assert getattr(importlib.import_module(home), name) is value


def test_submodules_import_without_cycles():
    graph = {}
    for path in PACKAGE.glob("*.py"):
        if path.stem == "__init__":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[path.stem] = {node.module.rsplit(".", 1)[-1] for node in ast.walk(tree)
                            if isinstance(node, ast.ImportFrom) and node.module
                            and node.module.startswith("harness.tasks.")}
    assert len(graph) >= 4
    list(TopologicalSorter(graph).static_order())  # raises CycleError on a cycle
