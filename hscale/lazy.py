"""Names a package imports on first use: only those of its modules that import something
heavy (torch, a web server, pytest), so that importing the package costs a command nothing
it does not use. The package imports every other name plainly, and names the lazy ones
under ``if TYPE_CHECKING:`` too, for readers and static tools::

    if TYPE_CHECKING:  # torch: imported on first use
        from ._model import TinyGPT

    __getattr__ = on_first_use(__name__, {"._model": ("TinyGPT",)})
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable


def on_first_use(package: str, modules: dict[str, Iterable[str]]
                 ) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports name N from its module (a
    relative name, ``modules[module]`` holding N) the first time N is read, and keeps it."""
    home = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> object:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
