"""Each package's __init__ is its public API: its names are those its __init__.py imports
(plainly, or under ``if TYPE_CHECKING:`` for the names of heavy modules, imported on first
use), every one of them imports, no package reaches
into another's private modules, README's and the notebooks' examples use public names only,
and an editor's static analysis (jedi) follows a public name of each package to its code
from the editable install."""

from __future__ import annotations

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_imports import PACKAGES, ROOT, modules, package_exports

PUBLIC = ["hscale.design", "hscale.harness", "hscale.train", "hscale.analysis",
          "hscale.contracts"]


def _packages() -> list[str]:
    return sorted(name for name, path in modules().items() if path.name == "__init__.py"
                  and package_exports(path, name))


@pytest.mark.parametrize("package", _packages())
def test_the_init_is_the_package_api_and_every_name_imports(package):
    module = importlib.import_module(package)
    names = package_exports(modules()[package], package)
    assert sorted(module.__all__) == sorted(names)
    for name in names:
        assert getattr(module, name) is not None, name


def _private_imports() -> list[str]:
    """Imports of a private module (``hscale.pkg._x``) from outside its package (its own
    subpackages may use it)."""
    found = []
    for name, path in modules().items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets = ([f"{node.module}.{a.name}" for a in node.names]
                       if isinstance(node, ast.ImportFrom) and node.module and not node.level
                       else [a.name for a in node.names] if isinstance(node, ast.Import)
                       else [])
            for target in targets:
                parts = target.split(".")
                private = [i for i, p in enumerate(parts) if p.startswith("_")
                           and not p.startswith("__")]
                if not private or not target.startswith("hscale."):
                    continue
                owner = ".".join(parts[:private[0]])
                if package != owner and not package.startswith(owner + "."):
                    found.append(f"{name}:{node.lineno} imports {target}")
    return found


def test_no_package_imports_another_packages_private_modules():
    assert _private_imports() == []


def _unexplained_private_imports(path: Path) -> list[str]:
    """``file:line`` of each import of a private hscale module (``hscale.pkg._x``, or
    ``from hscale.pkg import _x``) in ``path`` whose line above is not ``# internal: why``."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            targets = [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        private = [t for t in targets if t.split(".")[0] == "hscale" and any(
            p.startswith("_") and not p.startswith("__") for p in t.split("."))]
        above = lines[node.lineno - 2].strip() if node.lineno > 1 else ""
        if private and not above.startswith("# internal:"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {private[0]}")
    return found


def test_tests_import_private_modules_only_where_they_say_why():
    """Tests reach behaviour through the public API, so moving code between private modules
    breaks no test; a test about an internal on purpose says so on the line above its import
    (``# internal: why``)."""
    assert [f for path in sorted((ROOT / "tests").rglob("*.py"))
            for f in _unexplained_private_imports(path)] == []


def test_the_private_import_check_sees_an_unexplained_one(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    planted = tmp_path / "test_planted.py"
    planted.write_text("from hscale.design import full\n"
                       "# internal: tests the search itself\n"
                       "from hscale.design._search import search_oa\n"
                       "import hscale.train.planning._workload\n"
                       "def f():\n"
                       "    from hscale.analysis import _plots, load_results\n")
    assert _unexplained_private_imports(planted) == [
        "test_planted.py:4 imports hscale.train.planning._workload",
        "test_planted.py:6 imports hscale.analysis._plots"]


def _examples() -> list[tuple[str, str, str]]:
    """(where, module, name) of every ``from hscale... import`` in README's code blocks and
    the notebooks' code cells, and every dotted ``hscale.pkg.name`` README names."""
    found = []
    readme = (ROOT / "README.md").read_text()
    sources = [("README.md", block) for block in re.findall(r"```python\n(.*?)```",
                                                            readme, re.S)]
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        sources += [(notebook.name, "".join(c["source"])) for c in cells
                    if c["cell_type"] == "code"]
    for where, code in sources:
        code = "\n".join(line for line in code.splitlines() if not line.startswith("%"))
        try:
            tree = ast.parse(code)
        except SyntaxError:  # a shell block
            continue
        found += [(where, node.module, a.name) for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and (node.module or "")
                  .startswith("hscale") for a in node.names]
    for dotted in re.findall(r"`(hscale(?:\.\w+)+)", readme):
        module, _, name = dotted.rpartition(".")
        if module in PACKAGES or module.startswith("hscale.train."):
            found.append(("README.md", module, name))
    return found


def test_readme_and_notebooks_use_public_names_only():
    wrong = []
    for where, module, name in _examples():
        if any(p.startswith("_") for p in module.split(".")):
            wrong.append(f"{where}: {module} is private")
            continue
        package = importlib.import_module(module)
        public = set(getattr(package, "__all__", ())) | {
            n for n in dir(package) if not n.startswith("_")}
        sub = importlib.util.find_spec(f"{module}.{name}") if module.startswith("hscale") \
            else None
        if name not in public and sub is None:
            wrong.append(f"{where}: {module}.{name} is not public")
    assert wrong == []
    assert len(_examples()) > 20  # it read the examples


JEDI_PROBE = """
import json, sys
import jedi
out = {}
for module, name in [("hscale.design", "orthogonal_array"), ("hscale.harness", "run_episode"),
                     ("hscale.train", "run_experiment"), ("hscale.analysis", "load_results")]:
    script = jedi.Script(f"from {module} import {name}\\n{name}", path=sys.argv[1])
    found = script.goto(2, 1, follow_imports=True)
    out[module] = [str(d.module_path) for d in found]
print(json.dumps(out))
"""


def test_an_editor_follows_each_packages_public_names_from_the_editable_install(tmp_path):
    """jedi (what editors use for go-to-definition), asked from a script outside the
    checkout, finds each package's public name in the checkout's files."""
    pytest.importorskip("jedi")
    import hscale

    if Path(hscale.__file__).resolve().parents[1] != ROOT:
        pytest.skip("hscale is not installed in editable mode from this checkout")
    done = subprocess.run([sys.executable, "-c", JEDI_PROBE, str(tmp_path / "mine.py")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    for module, paths in found.items():
        assert paths, f"jedi found nothing for {module}"
        assert all(Path(p).resolve().is_relative_to(ROOT) for p in paths), paths
        assert all(Path(p).name.startswith("_") for p in paths)  # the implementation
