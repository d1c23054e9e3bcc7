"""The project's modules import each other one way only, and stay small.

A cycle, even through an import inside a function, makes import order matter and hides a
tangled dependency; the layers keep the light packages light (design imports nothing of
hscale's but the shared home; the file contracts never import torch).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import networkx as nx

from hscale.lazy import lazy_names

ROOT = Path(__file__).resolve().parents[1]
# Installed name -> folder (pyproject maps the layout's top-level folders into hscale).
PACKAGES = {"hscale": "hscale", "hscale.design": "design", "hscale.harness": "harness",
            "hscale.train": "train", "hscale.analysis": "analysis"}
# A module holds one topic, at whatever length it needs; one past this many lines has likely
# grown a second, and is split by what it holds (not cut at a line count to pass).
MAX_LINES = 600
CORE = "hscale"  # errors, files, lazy, registry, yamlio, the file contracts: what all share
# What each layer may import (besides itself). Analysis reads training results only through
# the file contracts; the command line sits on top of everything.
ALLOWED = {
    CORE: set(),
    "hscale.design": {CORE},
    "hscale.harness": {CORE, "hscale.design"},
    "hscale.train": {CORE, "hscale.design", "hscale.harness"},
    "hscale.analysis": {CORE, "hscale.design", "hscale.harness._space"},
    "hscale.cli": {CORE, "hscale.design", "hscale.harness", "hscale.train", "hscale.analysis"},
}


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages."""
    out = {}
    for package, folder in PACKAGES.items():
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            out[".".join([package, *parts])] = path
    return out


def layer(module: str) -> str:
    """The layer a module belongs to: hscale.<package>, hscale.cli, or the shared core."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ("design", "harness", "train", "analysis", "cli"):
        return ".".join(parts[:2])
    return CORE


def _target(module: str, name: str | None, known: dict[str, Path]) -> str | None:
    """The project module an ``import module`` / ``from module import name`` reaches."""
    if name is not None and f"{module}.{name}" in known:
        return f"{module}.{name}"
    if name is not None and module in known and known[module].name == "__init__.py":
        exports = package_exports(known[module], module)
        if name in exports:
            return exports[name]
    return module if module in known else None


def package_exports(init: Path, package: str) -> dict[str, str]:
    """A package's public names -> the module defining each, as its ``__init__.py`` imports
    them: plainly, or under ``if TYPE_CHECKING:`` for those imported on first use
    (hscale.lazy)."""
    if not init.is_file():
        return {}
    out = {}
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            out.update({a.name: f"{package}.{node.module}" for a in node.names})
    for name, (module, attribute) in lazy_names(init).items():
        out[name] = f"{package}{module}" if module.strip(".") else f"{package}.{attribute}"
    return out


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
    assert graph.has_edge("hscale.train.running._runner", "hscale.contracts")  # sees real imports
    assert list(nx.simple_cycles(graph)) == []


def _allowed(mine: str, target: str) -> bool:
    """Whether a module of layer ``mine`` may import ``target``: its own layer, a layer it
    sits on, or one module it is allowed (``hscale.contracts`` for analysis)."""
    theirs = layer(target)
    if theirs == mine or theirs in ALLOWED[mine]:
        return True
    return any(a != CORE and (target == a or target.startswith(a + "."))
               for a in ALLOWED[mine])


def test_the_layer_rule_tells_a_reach_up_from_a_reach_down():
    assert _allowed("hscale.harness", "hscale.design._space")
    assert not _allowed("hscale.design", "hscale.harness._space")
    assert _allowed("hscale.analysis", "hscale.contracts")
    assert not _allowed("hscale.analysis", "hscale.train.running._runner")
    assert not _allowed(CORE, "hscale.design._space") and _allowed(CORE, "hscale.errors")


def test_every_package_imports_only_the_layers_below_it():
    graph = import_graph()
    assert len(graph) > 100 and graph.has_edge("hscale.harness._harness", "hscale.design._space")
    wrong = []
    for name in graph:
        mine = layer(name)
        for target in graph.successors(name):
            if not _allowed(mine, target):
                wrong.append(f"{name} -> {target}")
    assert wrong == [], "a layer reaches up or sideways"


# train/'s subpackages, lowest first (train/__init__.py says what each holds): each imports
# only those before it
TRAIN_STACK = ("harness_s", "spec", "planning", "policy", "lm", "serving", "blackbox",
               "embedded", "backends", "ray_cluster", "running")


def _train_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["hscale", "train"] else None


def test_train_is_a_one_way_stack():
    """An import up the stack, even inside a function, is the start of a two-way tangle: move
    the shared name down a layer, or the caller up."""
    graph = import_graph()
    assert set(TRAIN_STACK) == {p.name for p in (ROOT / "train").iterdir()
                                if (p / "__init__.py").is_file()}
    place = {name: i for i, name in enumerate(TRAIN_STACK)}
    up = sorted(f"{name} -> {target}" for name, target in graph.edges
                if _train_part(name) and _train_part(target)
                and place[_train_part(target)] > place[_train_part(name)])
    assert any(_train_part(a) == "running" and _train_part(b) == "backends"
               for a, b in graph.edges)  # it sees train/'s imports
    assert up == [], "train/ reaches up its stack"


def test_the_project_imports_only_through_its_namespace():
    """No module names design, harness, train or analysis as top-level packages any more."""
    old = ("design", "harness", "train", "analysis")
    found = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                mods = [node.module]
            elif isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            else:
                continue
            found += [f"{name}: {m}" for m in mods if m.split(".")[0] in old]
    assert found == []


def test_the_contracts_and_the_cli_root_stay_light():
    code = ("import sys, hscale.contracts, hscale.cli, hscale.analysis._load; "
            "print([m for m in ('torch', 'verl', 'ray', 'transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr


def test_modules_hold_one_topic():
    sizes = {name: len(path.read_text().splitlines()) for name, path in modules().items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}, \
        "split these by what they hold"
