"""Every backend hscale ships keeps the backend contract (hscale.train.backends.testing): the
embedded trainer, the scripted fake, and veRL's dry run."""

from __future__ import annotations

import pytest

from hscale.train.backends.testing import BackendContract


class TestScripted(BackendContract):
    cli_args = ("--backend", "scripted")

    @pytest.fixture(scope="class")
    def backend(self):
        from hscale.train.backends.scripted import ScriptedBackend

        return ScriptedBackend()


class TestLocal(BackendContract):
    spec_changes = {"model": "hscale-test"}
    cli_args = ("--backend", "local")

    @pytest.fixture(scope="class")
    def backend(self):
        pytest.importorskip("torch")
        pytest.importorskip("verl")
        from hscale.train.backends.local import LocalBackend

        return LocalBackend()


class TestVerlDryRun(BackendContract):
    spec_changes = {"model": "Qwen/Qwen3-4B-Instruct-2507"}  # a hub id, never loaded here
    cli_args = ("--backend", "verl", "--dry-run")
    compared = ("verl/train.parquet", "verl/val.parquet")

    @pytest.fixture(scope="class")
    def backend(self):
        pytest.importorskip("verl")
        from hscale.train.backends.verl import VerlBackend

        return VerlBackend(dry_run=True)
