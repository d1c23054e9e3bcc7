"""Harness-S: routers that pick sibling harnesses for zero-signal groups (one
interface the drivers call), the profiles router's judges, the frozen
sibling pool and its evolution.
"""

from ._evolve import Evolution, ModelEditor, ScriptedEditor
from ._pool import read_pool, with_pool, write_pool
from ._profiles import PROFILES, PROFILES_ENV
from ._routers import ROUTERS, Router, RouterKind, require_judges

__all__ = [
    "Evolution",
    "ModelEditor",
    "PROFILES",
    "PROFILES_ENV",
    "ROUTERS",
    "Router",
    "RouterKind",
    "ScriptedEditor",
    "read_pool",
    "require_judges",
    "with_pool",
    "write_pool",
]
