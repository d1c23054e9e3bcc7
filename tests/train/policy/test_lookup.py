"""Finding a base model: the shipped checkpoint is current, a matching one is copied into the
cache, and the runner's own process finds the base models without importing torch (the
workers import it; the runner only dispatches)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

# internal: tests the lookup policy module
from hscale.train.policy import _lookup, load  # noqa: E402

PRESET = "hscale-tiny"  # the one hscale ships


def test_the_shipped_checkpoint_is_the_current_base_model():
    shipped = _lookup.shipped_path(PRESET)
    assert _lookup.checkpoint_hash(shipped) == _lookup.content_hash(PRESET), (
        f"rebuild it: hscale model build {PRESET} --out {shipped}")
    load(shipped)  # and it loads


def test_a_matching_shipped_checkpoint_is_copied_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HSCALE_CACHE", str(tmp_path))
    found = _lookup.available(PRESET)
    assert found == _lookup.base_model_path(PRESET) and found.parent == tmp_path / "models"
    assert found.read_bytes() == _lookup.shipped_path(PRESET).read_bytes()
    assert [p.name for p in found.parent.iterdir()] == [found.name]  # nothing staged is left
    assert _lookup.available(PRESET) == found


def test_a_cache_it_cannot_write_leaves_it_reading_the_shipped_checkpoint(tmp_path,
                                                                           monkeypatch):
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder would be")  # read-only, even for root
    monkeypatch.setenv("HSCALE_CACHE", str(blocked))
    assert _lookup.available(PRESET) == _lookup.shipped_path(PRESET)


def test_a_shipped_checkpoint_of_another_content_is_not_used(tmp_path, monkeypatch):
    monkeypatch.setenv("HSCALE_CACHE", str(tmp_path))
    monkeypatch.setattr(_lookup, "content_hash", lambda name: "0" * 20)
    assert _lookup.available(PRESET) is None
    assert not (tmp_path / "models").exists() or not any((tmp_path / "models").iterdir())


def test_the_runner_finds_its_base_models_without_importing_torch(tmp_path):
    """The local backend's prepare, as ``hscale run`` calls it before dispatching: the first
    time (a fresh cache) it reads the shipped checkpoint's hash; from then on it does not
    import torch (about 1.5 s of CPU an ``hscale run``)."""
    script = (
        "import sys\n"
        "from hscale.train.backends import LocalBackend\n"
        "class M:\n"
        f"    model = {PRESET!r}\n"
        "LocalBackend().prepare([M()])\n"
        "print('torch' in sys.modules)\n")
    env = {**os.environ, "HSCALE_CACHE": str(tmp_path)}
    said = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=120) for _ in range(2)]
    assert [s.returncode for s in said] == [0, 0], said[-1].stderr[-2000:]
    assert [s.stdout.split()[-1] for s in said] == ["True", "False"]
