"""A package imports its heavy modules (torch, pandas, scipy, the web server, pytest) on first
use of one of their names, and every other name plainly (hscale.lazy): importing the package
costs a command nothing it does not use, and reading a name gives the module's own object."""

from __future__ import annotations

import subprocess
import sys

import pytest

# package, a name of it, what importing the package must not import (the name may)
HEAVY = [("hscale.train.policy", "TinyGPT", "torch"),
         ("hscale.train.lm", "EmbeddedChat", "torch"),
         ("hscale.train.running", "BackendContract", "pytest"),
         ("hscale.train.serving", "serve", "starlette"),
         ("hscale.train", "plan", "pandas"),
         ("hscale.harness", "behaviour", "pandas"),
         ("hscale.analysis", "cluster_bootstrap", "scipy"),
         ("hscale.design", "foldover", "numpy")]


@pytest.mark.parametrize(("package", "name", "heavy"), HEAVY)
def test_a_heavy_name_is_imported_when_read_and_not_before(package, name, heavy):
    code = (f"import sys, importlib; m = importlib.import_module({package!r}); "
            f"before = {heavy!r} in sys.modules; value = getattr(m, {name!r}); "
            f"print(before, value is getattr(m, {name!r}), value.__module__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == "False", f"importing {package} imported {heavy}"
    assert out[1] == "True"  # kept: the second read is the same object
    assert out[2].startswith(package + ".")


def test_a_name_the_package_does_not_have_is_an_attribute_error():
    import hscale.train.policy as policy

    with pytest.raises(AttributeError, match="no attribute 'TinyGTP'"):
        policy.TinyGTP  # noqa: B018
    assert not hasattr(policy, "nothing_here")


def test_the_lazy_names_are_those_under_type_checking(tmp_path):
    from hscale.lazy import lazy_names

    init = tmp_path / "__init__.py"
    init.write_text("from typing import TYPE_CHECKING\nfrom ._a import plain\n"
                    "if TYPE_CHECKING:\n    from ._b import one, two as deux\n"
                    "    from .sub import three\n    from . import _c\n")
    assert lazy_names(init) == {"one": ("._b", "one"), "deux": ("._b", "two"),
                                "three": (".sub", "three"), "_c": (".", "_c")}


def test_a_submodule_named_under_type_checking_is_imported_on_first_use(tmp_path,
                                                                        monkeypatch):
    package = tmp_path / "lazypkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nfrom hscale.lazy import on_first_use\n"
        "if TYPE_CHECKING:\n    from . import _heavy\n    from ._heavy import VALUE\n"
        "__all__ = ['VALUE', '_heavy']\n__getattr__ = on_first_use(__name__, __file__)\n")
    (package / "_heavy.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazypkg

    assert "lazypkg._heavy" not in sys.modules
    assert lazypkg.VALUE == 42 and lazypkg._heavy.VALUE == 42
    assert "lazypkg._heavy" in sys.modules
    for name in ("lazypkg", "lazypkg._heavy"):
        monkeypatch.delitem(sys.modules, name)
