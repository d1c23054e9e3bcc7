"""The prefix cache of ``hscale serve``'s local engine: the keys and values of conversations
already computed, so a request that resends them (a black-box CLI resends the whole
conversation on every call) prefills only what is new.

An entry is a token-id sequence (a prompt, or a prompt and the reply written after it) and its
keys and values, one ``(keys, values)`` pair a layer, each ``[1, heads, tokens, head_dim]``.
A lookup finds the entry sharing the longest prefix with a prompt; an entry that another
extends is dropped (the longer one holds it). The entries together hold at most
``max_tokens`` tokens, the least recently used going first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

CACHE_TOKENS = 32768  # tokens the cache holds unless told (SmolLM2-135M: 46 KB of fp32 a token)
Layers = tuple[tuple[Any, Any], ...]  # per layer (keys, values), [1, heads, tokens, head_dim]


def common(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    if n and a[:n] == b[:n]:  # the usual case (a conversation resent whole): one comparison
        return n
    low, high = 0, n  # the first difference by halving: slices compare in C
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class PrefixCache:
    """Computed keys and values by token ids, bounded by ``max_tokens`` (LRU); safe to share
    between threads."""

    def __init__(self, max_tokens: int = CACHE_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._entries: OrderedDict[tuple[int, ...], Layers] = OrderedDict()
        self._lock = threading.Lock()
        self.tokens = 0  # held now
        self.hits = self.reused = 0  # lookups that found a prefix, and the tokens it held

    def lookup(self, ids: Sequence[int]) -> tuple[int, Layers | None]:
        """(n, the first n tokens' keys and values) of the entry sharing the longest prefix
        with ``ids``, n at most ``len(ids) - 1`` (the last token is run to get its logits);
        (0, None) when none does."""
        ids = tuple(ids)
        with self._lock:
            best, found = 0, None
            for key in self._entries:
                n = min(common(key, ids), len(ids) - 1)
                if n > best:
                    best, found = n, key
            if found is None:
                return 0, None
            self._entries.move_to_end(found)
            layers = self._entries[found]
            self.hits, self.reused = self.hits + 1, self.reused + best
        return best, tuple((k[:, :, :best], v[:, :, :best]) for k, v in layers)

    def store(self, ids: Sequence[int], layers: Layers) -> None:
        """Keep ``layers`` (of exactly ``len(ids)`` tokens, tensors nothing else writes to)
        under ``ids``; entries it extends are dropped, then the least recently used until the
        bound holds. An entry past the bound alone is not kept."""
        ids = tuple(ids)
        if not ids or len(ids) > self.max_tokens:
            return
        with self._lock:
            for key in [k for k in self._entries if len(k) <= len(ids) and ids[:len(k)] == k]:
                self.tokens -= len(key)
                del self._entries[key]
            longer = next((k for k in self._entries
                           if len(k) > len(ids) and k[:len(ids)] == ids), None)
            if longer is not None:  # already held
                self._entries.move_to_end(longer)
                return
            self._entries[ids] = layers
            self.tokens += len(ids)
            while self.tokens > self.max_tokens:
                key, _ = self._entries.popitem(last=False)
                self.tokens -= len(key)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.tokens = 0

    def __len__(self) -> int:
        return len(self._entries)
