"""Names a package imports on first use: those of its modules that import something heavy
(torch, pandas, a web server, pytest), so that importing the package costs a command
nothing it does not use. Every other name the package imports plainly. The lazy ones are
written once, as imports under ``if TYPE_CHECKING:``, which static tools and readers follow
and which :func:`on_first_use` reads::

    from typing import TYPE_CHECKING

    from hscale.lazy import on_first_use

    from ._lookup import available          # light: imported now

    if TYPE_CHECKING:  # torch: imported on first use
        from ._model import TinyGPT

    __all__ = ["TinyGPT", "available"]
    __getattr__ = on_first_use(__name__, __file__)
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path


def lazy_names(init: str | Path) -> dict[str, tuple[str, str]]:
    """Name -> (relative module, the name there), for the imports under
    ``if TYPE_CHECKING:`` of a package's ``__init__.py``."""
    out = {}
    for node in ast.parse(Path(init).read_text(encoding="utf-8")).body:
        if (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
                and node.test.id == "TYPE_CHECKING"):
            for imported in node.body:
                if isinstance(imported, ast.ImportFrom) and imported.level:
                    module = "." * imported.level + (imported.module or "")
                    out.update({a.asname or a.name: (module, a.name) for a in imported.names})
    return out


def on_first_use(package: str, init: str | Path) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` (whose ``__init__.py`` is ``init``) that
    imports a name of its ``TYPE_CHECKING`` block the first time it is read, and keeps it."""
    home = lazy_names(init)

    def __getattr__(name: str) -> object:
        if name not in home:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = home[name]
        if module.strip("."):
            value = getattr(importlib.import_module(module, package), attribute)
        else:  # ``from . import sub``: the name is a submodule
            value = importlib.import_module(module + attribute, package)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
