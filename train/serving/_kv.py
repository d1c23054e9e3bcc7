"""The keys and values of the rows ``hscale serve``'s local engine is decoding, as one
transformers Cache that rows join and leave between steps.

Rows are right-aligned: column ``hi - 1`` holds every row's latest token, row r's tokens fill
columns ``[hi - lens[r], hi)`` and the columns left of them are masked for it. A step writes
each row's new key and value at column ``hi`` in place, into tensors allocated ahead (with
room for ``GROW`` more steps); transformers' DynamicCache concatenates instead, copying the
whole cache every step. A row that leaves is replaced by the last one (one row copied), so the
active rows stay ``0..n-1`` and a step runs only them.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

GROW = 256  # columns allocated past the widest row, so most steps write in place


class Slots:
    """Per layer, keys and values ``[rows, heads, columns, head_dim]``; ``lens`` the tokens of
    each active row; ``cache`` the transformers Cache a decoding step passes the model."""

    def __init__(self, layers: int) -> None:
        self.keys: list[Any] = [None] * layers
        self.values: list[Any] = [None] * layers
        self.lens: list[int] = []
        self.hi = 0  # one past the last column written
        self.cache = Cache(layers=[_Layer(self, i) for i in range(layers)])

    @property
    def width(self) -> int:
        """Columns a step attends to before its own token (the longest row)."""
        return max(self.lens, default=0)

    def add(self, layers: tuple[tuple[Any, Any], ...]) -> None:
        """A new last row: its keys and values (per layer ``[1, heads, tokens, head_dim]``)."""
        tokens = layers[0][0].shape[2]
        if self.keys[0] is None:
            self._allocate(layers)
        elif len(self.lens) == self._rows() or tokens > self.hi:
            rows = self._rows() * (2 if len(self.lens) == self._rows() else 1)
            self._relayout(rows, max(tokens, self.width))
        row = len(self.lens)
        for store, (k, v) in zip(zip(self.keys, self.values, strict=True), layers, strict=True):
            store[0][row, :, self.hi - tokens:self.hi] = k[0]
            store[1][row, :, self.hi - tokens:self.hi] = v[0]
        self.lens.append(tokens)

    def drop(self, row: int) -> None:
        """Row ``row`` leaves; the last row takes its place."""
        last = len(self.lens) - 1
        if row != last:
            lo = self.hi - self.lens[last]
            for k, v in zip(self.keys, self.values, strict=True):
                k[row, :, lo:self.hi] = k[last, :, lo:self.hi]
                v[row, :, lo:self.hi] = v[last, :, lo:self.hi]
            self.lens[row] = self.lens[last]
        self.lens.pop()
        if not self.lens:  # nothing left: the memory goes back
            self.keys = [None] * len(self.keys)
            self.values = [None] * len(self.values)
            self.hi = 0

    def row(self, row: int) -> tuple[tuple[Any, Any], ...]:
        """Row ``row``'s keys and values, copied (per layer ``[1, heads, tokens, head_dim]``)."""
        lo = self.hi - self.lens[row]
        return tuple((k[row:row + 1, :, lo:self.hi].clone(), v[row:row + 1, :, lo:self.hi].clone())
                     for k, v in zip(self.keys, self.values, strict=True))

    def inputs(self) -> tuple[Any, Any]:
        """(position ids ``[n, 1]``, attention mask ``[n, width + 1]``) of the next step."""
        if self.hi >= self._columns():
            self._relayout(self._rows(), self.width)
        device = self.keys[0].device
        lens = torch.tensor(self.lens, device=device)
        columns = torch.arange(self.width + 1, device=device)
        return lens[:, None], columns[None, :] >= (self.width - lens)[:, None]

    def advance(self) -> None:
        """After a step: every row holds one more token."""
        self.hi += 1
        self.lens = [n + 1 for n in self.lens]

    def write(self, layer: int, k: Any, v: Any) -> tuple[Any, Any]:
        """A step's keys and values ``[n, heads, 1, head_dim]`` at column ``hi``; what the
        step attends to: the active rows' window ending there."""
        n, lo = len(self.lens), self.hi - self.width
        if self.keys[layer] is None:
            raise RuntimeError("a decoding step with no rows")
        self.keys[layer][:n, :, self.hi:self.hi + 1] = k
        self.values[layer][:n, :, self.hi:self.hi + 1] = v
        return (self.keys[layer][:n, :, lo:self.hi + 1],
                self.values[layer][:n, :, lo:self.hi + 1])

    def _columns(self) -> int:
        return self.keys[0].shape[2]

    def _rows(self) -> int:
        return self.keys[0].shape[0]

    def _relayout(self, rows: int, width: int) -> None:
        """New tensors of ``rows`` rows, the window (``width`` columns) moved to their left
        end with GROW columns to spare (zeros: a masked column must hold no NaN)."""
        n, lo = len(self.lens), self.hi - self.width
        for store in (self.keys, self.values):
            for i, old in enumerate(store):
                shape = (rows, old.shape[1], width + GROW, old.shape[3])
                new = old.new_zeros(shape)
                new[:n, :, width - (self.hi - lo):width] = old[:n, :, lo:self.hi]
                store[i] = new
        self.hi = width

    def _allocate(self, layers: tuple[tuple[Any, Any], ...]) -> None:
        """Tensors for one row, shaped after its keys and values."""
        tokens = layers[0][0].shape[2]
        for i, (k, v) in enumerate(layers):
            self.keys[i] = k.new_zeros((1, k.shape[1], tokens + GROW, k.shape[3]))
            self.values[i] = v.new_zeros((1, v.shape[1], tokens + GROW, v.shape[3]))
        self.hi = tokens


class _Layer(DynamicLayer):
    """One layer of Slots as transformers' models call a cache layer."""

    def __init__(self, slots: Slots, index: int) -> None:
        super().__init__()
        self.slots, self.index = slots, index
        self.is_initialized = True

    def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
        pass

    def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any
               ) -> tuple[Any, Any]:
        return self.slots.write(self.index, key_states, value_states)

    def get_seq_length(self) -> int:
        return self.slots.width

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.slots.width + query_length, 0
