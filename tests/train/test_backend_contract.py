"""Every backend hscale ships keeps the backend contract (hscale.train.running._testing): the
embedded trainer and the scripted fake run; veRL's export writes its inputs."""

from __future__ import annotations

import pytest

from hscale.train.running import BackendContract, ExportContract


class TestScripted(BackendContract):
    cli_args = ("--backend", "scripted")

    def make_backend(self):
        from hscale.train.backends import ScriptedBackend

        return ScriptedBackend()


class TestLocal(BackendContract):
    spec_changes = {"model": "hscale-test"}
    cli_args = ("--backend", "local")

    def make_backend(self):
        pytest.importorskip("torch")
        pytest.importorskip("verl")
        from hscale.train.backends import LocalBackend

        return LocalBackend()


class TestVerlExport(ExportContract):
    spec_changes = {"model": "Qwen/Qwen3-4B-Instruct-2507"}  # a hub id, never loaded here
    cli_args = ("--backend", "verl", "--dry-run")
    compared = ("verl/train.parquet", "verl/val.parquet")

    def make_backend(self):
        pytest.importorskip("verl")
        from hscale.train.backends.verl import VerlBackend

        return VerlBackend()


def test_a_backend_without_an_export_says_so(tmp_path):
    from hscale.errors import HscaleError
    from hscale.train.backends import ScriptedBackend
    from hscale.train.running import export_experiment

    spec = TestScripted.write_spec(tmp_path)
    with pytest.raises(HscaleError, match="scripted backend has nothing to export"):
        export_experiment(spec, tmp_path / "runs", backend=ScriptedBackend())
    assert not (tmp_path / "runs").exists()
