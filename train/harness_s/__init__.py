"""Harness-S: routers that pick sibling harnesses for zero-signal groups (one
interface the drivers call), the profiles router's judges, the frozen
sibling pool and its evolution.
"""

import lazy_loader as lazy

__getattr__, __dir__, __all__ = lazy.attach_stub(__name__, __file__)
