"""Backends run one planned run (a manifest and its schedule) and write its result files."""

from __future__ import annotations

import inspect
from typing import Any

from hscale.errors import HscaleError
from hscale.train.backends._base import Backend
from hscale.train.spec import BACKENDS  # the names a spec may give, and their classes


def get_backend(name: str, **options: Any) -> Backend:
    """A configured backend; options it does not take (None values are ignored) are refused
    in one line naming them."""
    cls = BACKENDS.get(name)
    given = {k: v for k, v in options.items() if v is not None and v is not False}
    takes = set(inspect.signature(cls).parameters)
    foreign = sorted(set(given) - takes)
    if foreign:
        owners = [n for n in BACKENDS.names()
                  if foreign[0] in inspect.signature(BACKENDS.get(n)).parameters]
        flag = foreign[0].replace("_", "-")
        raise HscaleError(f"the {name} backend takes no {flag} option",
                          f"use --backend {owners[0]}" if owners else f"drop {flag}")
    return cls(**given)
