"""What the source tree keeps in one place: the veRL wire's keys (hscale.contracts._wire),
the black-box prefix (hscale.contracts._vocabulary), and the router's kind (read by the
router and the run's plan, never by a driver)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_imports import modules

# keys only the veRL wire spells (generic ones such as "harness" or "run" name columns too)
WIRE_KEYS = {"extra_info", "hscale_val_index", "routed_to", "rescued_from", "measure_on",
             "routing", "route"}
WIRE = "hscale.contracts._wire"
PREFIX_HOME = "hscale.contracts._vocabulary"
# what plays episodes: none of these asks which kind of router a run has
DRIVERS = ("hscale.train.embedded", "hscale.train.policy", "hscale.train.backends",
           "hscale.train.lm",
           "hscale.harness")
KIND_WORDS = {"RouterKind", "ROUTERS"}


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _trees() -> dict[str, ast.AST]:
    return {name: ast.parse(path.read_text()) for name, path in modules().items()}


def test_the_verl_wire_keys_are_spelled_in_one_module():
    found = {f"{name}:{line} {text!r}" for name, tree in _trees().items() if name != WIRE
             for line, text in _strings(tree) if text in WIRE_KEYS}
    assert found == set(), "read and write veRL rows through hscale.contracts.RowInfo"
    wire = _trees()[WIRE]
    fields = {n.target.id for n in ast.walk(wire)  # RowInfo's fields are its keys
              if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert {text for _, text in _strings(wire)} | fields >= WIRE_KEYS


def test_the_black_box_prefix_is_spelled_in_one_module():
    found = {f"{name}:{line}" for name, tree in _trees().items() if name != PREFIX_HOME
             for line, text in _strings(tree) if text == "bb/"}
    assert found == set(), "test a label with hscale.contracts.is_blackbox"


def test_no_driver_tests_the_routers_kind():
    found = []
    for name, tree in _trees().items():
        if not name.startswith(DRIVERS):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr == "kind" and \
                    "router" in ast.unparse(node.value).lower():
                found.append(f"{name}:{node.lineno} {ast.unparse(node)}")
            if isinstance(node, ast.Name | ast.alias) and \
                    getattr(node, "id", getattr(node, "name", None)) in KIND_WORDS:
                found.append(f"{name}:{node.lineno}")
    assert found == [], "call the router's methods (hscale.train.harness_s._routers.Router)"


def test_the_checks_would_see_a_violation(tmp_path):
    """The detectors find what they look for (they cannot pass by looking at nothing)."""
    tree = ast.parse('info.get("routed_to")\nlabel.startswith("bb/")\n'
                     'if router.kind.profiles: pass\n')
    assert {t for _, t in _strings(tree)} == {"routed_to", "bb/"}
    assert any(isinstance(n, ast.Attribute) and n.attr == "kind" for n in ast.walk(tree))
    assert Path(modules()[WIRE]).name == "_wire.py"
