"""oneDNN-packed linear layers for the decoding steps of ``hscale serve``'s local engine on a
CPU.

torch's ``linear`` on a CPU runs MKL's matrix product, which is slow for a few rows against a
large weight: a step of 8 rows took twice one of 1 row, though it reads each weight once
either way. oneDNN with the weights packed ahead for its kernels (what torch.compile's CPU
code runs) takes about as long for 8 rows as for 1. A step of more than one row runs every
linear layer that way; a step of one row and every prefill keep torch's own kernel, so a
request decoded alone writes exactly what HFChat.generate writes. The packed copies take the
weights' memory again: a model whose linear weights pass MAX_BYTES is not packed.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

import torch

MAX_BYTES = 2 << 30  # linear weights packed at most (a CPU-sized model)
ROWS_HINT = 8  # the batch size oneDNN lays the weights out for (any works)


class Packed:
    """A model's linear layers, packed once; ``rows(n)`` runs them packed for a step of n."""

    def __init__(self, model: Any) -> None:
        self._local = threading.local()
        self.ready = False
        linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
        size = sum(m.weight.numel() * m.weight.element_size() for m in linears)
        if not linears or size > MAX_BYTES or linears[0].weight.device.type != "cpu" \
                or not torch.backends.mkldnn.is_available():
            return
        try:
            packed = [torch.ops.mkldnn._reorder_linear_weight(m.weight.detach(), ROWS_HINT)
                      for m in linears]
            probe = linears[0].weight.new_zeros((2, linears[0].in_features))
            torch.ops.mkldnn._linear_pointwise(probe, packed[0], None, "none", [], "")
        except (RuntimeError, AttributeError):  # a torch or a dtype oneDNN does not pack
            return
        for module, weight in zip(linears, packed, strict=True):
            module.packed_weight = weight
            module.forward = functools.partial(_forward, module, self._local)
        self.ready = True

    @classmethod
    def of(cls, model: Any) -> Packed:
        """The model's packed layers, packed on first use."""
        found = getattr(model, "_hscale_packed", None)
        if found is None:
            found = cls(model)
            model._hscale_packed = found
        return found

    @contextlib.contextmanager
    def rows(self, n: int) -> Iterator[None]:
        """Within: this thread's linear layers run packed if ``n`` > 1."""
        self._local.on = self.ready and n > 1
        try:
            yield
        finally:
            self._local.on = False


def _forward(module: Any, local: threading.local, x: Any) -> Any:
    if getattr(local, "on", False):
        return torch.ops.mkldnn._linear_pointwise(x, module.packed_weight, module.bias,
                                                  "none", [], "")
    return torch.nn.functional.linear(x, module.weight, module.bias)
