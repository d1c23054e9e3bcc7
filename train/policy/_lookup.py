"""Where a base model is found: the cache, or the checkpoint shipped with hscale, each
keyed by the preset's content hash.

Apart from reading a shipped checkpoint's recorded hash, nothing here needs torch: the runner
looks its base models up before it dispatches the runs, and a process that only dispatches
should not pay torch's import (about 1.5 s of CPU).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from functools import cache
from pathlib import Path

from hscale.errors import HscaleError
from hscale.files import atomic_write_bytes, cache_dir
from hscale.harness import tokenizer
from hscale.train.spec import preset

ARCH_VERSION = 2  # bump when hscale.train.policy._model changes what a state dict means
SHIPPED = Path(__file__).resolve().parent / "data"
FINGERPRINT_EPISODES = 32


def demonstrations_fingerprint(seed: int) -> str:
    """A hash of the first demonstrations' texts: it changes when the demonstrator does."""
    from hscale.harness import demonstrations

    h = hashlib.sha256()
    for episode in demonstrations(FINGERPRINT_EPISODES, seed=seed):
        for message in episode.messages:
            h.update(f"{message.role}\x00{message.content}\x01".encode())
    return h.hexdigest()


@cache
def content_hash(name: str) -> str:
    spec = preset(name)
    body = {"preset": spec, "tokenizer": tokenizer().fingerprint, "arch": ARCH_VERSION,
            "demonstrations": demonstrations_fingerprint(spec["warm_start"]["seed"])}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:20]


def base_model_path(name: str) -> Path:
    """Where the base model of ``name`` is (or will be) cached."""
    return cache_dir() / "models" / f"{name}-{content_hash(name)}.pt"


def shipped_path(name: str) -> Path:
    return SHIPPED / f"{name}.pt"


def available(name: str) -> Path | None:
    """The cached or shipped checkpoint whose content hash matches, if any. A shipped one
    that matches is copied into the cache (600 kB), so the next lookup finds it by name
    without reading it."""
    path = base_model_path(name)
    if path.is_file():
        return path
    shipped = shipped_path(name)
    if not (shipped.is_file() and checkpoint_hash(shipped) == content_hash(name)):
        return None
    # a cache it cannot write: the shipped one is read each time
    with contextlib.suppress(OSError, HscaleError):
        atomic_write_bytes(path, shipped.read_bytes())
        return path
    return shipped


def checkpoint_hash(path: Path) -> str | None:
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True).get("content_hash")
    except (OSError, RuntimeError):
        return None
