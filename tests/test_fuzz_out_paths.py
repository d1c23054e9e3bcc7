"""Every ``--out`` meets a user's path: a folder of their files (names that collide with what
hscale writes included), a file, a link, a FIFO. Whatever the command does, every byte of
what the user had is still there afterwards; a refusal is one line and exit 2."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli import hscale
from tests.test_fuzz import BASE

pytest.importorskip("torch")

# names hscale writes somewhere under an --out, and some of the user's own
NAMES = ["report.md", "report.html", "tables.md", "heatmap.png", "weights.yaml", "train.csv",
         "eval.csv", "first_order.csv", "model.json", "config.json", "model.safetensors",
         "manifest.json", "status.json", "eval.parquet", "thesis.tex", "notes.txt", "data.csv",
         "fuzz", "evaluate", ".hidden"]
SPEC = yaml.safe_dump({**BASE, "steps": 2, "seeds": [0], "arms": {"single": {
    "train": "single", "assignment": {"mode": "repeat", "k": 1}}}})

folders = st.dictionaries(
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=2).map("/".join),
    st.binary(max_size=64), min_size=1, max_size=5)
commands = st.sampled_from(["report", "evaluate", "plan", "design paper", "design oa",
                            "design candidates", "model build", "model import"])
kinds = st.sampled_from(["folder", "file", "link", "fifo"])


def _make(root: Path, kind: str, files: dict[str, bytes]) -> Path:
    target = root / "target"
    if kind == "folder":
        for name, data in files.items():
            path = target / name
            if any(p.is_file() for p in [*path.parents][:-1] if p.is_relative_to(target)):
                continue  # a file already holds that name as a folder
            if path.is_dir():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    elif kind == "file":
        target.write_bytes(next(iter(files.values())))
    elif kind == "link":
        (root / "linked.txt").write_bytes(b"linked")
        target.symlink_to(root / "linked.txt")
    else:
        os.mkfifo(target)
    return target


def _state(root: Path) -> dict[str, bytes | str | None]:
    out: dict[str, bytes | str | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_fifo():
            out[rel] = "fifo"
        elif path.is_dir():
            out[rel] = None
        else:
            out[rel] = path.read_bytes()
    return out


def _args(command: str, target: Path, runs: Path, spec: Path) -> list[str | Path]:
    return {
        "report": ["report", runs, "--out", target],
        "evaluate": ["evaluate", "hscale-tiny", "--harnesses", "base", "--tasks", "1",
                     "--out", target],
        "plan": ["plan", spec, "--out", target],
        "design paper": ["design", "paper", "--out", target],
        "design oa": ["design", "oa", "3^4", "--out", target],
        "design candidates": ["design", "candidates", "2^3", "--runs", "4", "--out", target],
        "model build": ["model", "build", "hscale-test", "--out", target],
        "model import": ["model", "import", "smollm2", "--out", target],
    }[command]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    done = hscale("evaluate", "hscale-tiny", "--harnesses", "base", "--tasks", "1",
                  "--out", out)
    assert done.returncode == 0, done.stderr
    return out / "evaluate"


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(command=commands, kind=kinds, files=folders)
def test_every_out_leaves_what_the_user_had(runs, command, kind, files):
    if command == "model import":
        # internal: tests the packaged-weights importer
        from hscale.train.lm._importer import find_gguf

        try:
            find_gguf()
        except Exception:
            return  # the package is not installed: import refuses before any path
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        spec = root / "spec.yaml"
        spec.write_text(SPEC)
        target = _make(root, kind, files)
        before = _state(root)
        done = hscale(*_args(command, target, runs, spec), env={
            "HSCALE_CACHE": os.environ.get("HSCALE_CACHE")})
        after = _state(root)
        lost = {k: v for k, v in before.items() if after.get(k, "<gone>") != v}
        assert not lost, f"{command} --out {kind}: changed {sorted(lost)}: {done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        if done.returncode != 0:
            lines = done.stderr.strip().splitlines()
            assert done.returncode == 2 and len(lines) == 1, done.stderr
        leftovers = [p.name for p in root.iterdir() if p.name.startswith(".target")]
        assert leftovers == []
