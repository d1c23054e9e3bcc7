"""Every notebook in notebooks/ runs top to bottom without an error and draws its pictures,
each once: the analysis notebook in its small mode (synthetic demo-shaped results)."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# what each notebook must show beyond running: (figures at least, phrases in its output)
EXPECTED = {"analysis": (6, ("synthetic demo-shaped results", "Ordering measured")),
            "design_space": (1, ())}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("HSCALE_NOTEBOOK_SMALL", "1")  # the kernel inherits the environment
    monkeypatch.delenv("HSCALE_RUNS", raising=False)
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [out for cell in notebook.cells if cell.cell_type == "code"
               for out in cell.get("outputs", [])]
    errors = [out for out in outputs if out.get("output_type") == "error"]
    assert not errors, errors
    figures, phrases = EXPECTED.get(path.stem, (1, ()))
    images = [out for out in outputs if "image/png" in out.get("data", {})]
    assert len(images) >= figures, "the notebook should draw its pictures"
    text = "".join(out.get("text", "") for out in outputs)
    for phrase in phrases:
        assert phrase in text


def test_both_notebooks_are_there():
    assert {p.stem for p in NOTEBOOKS} >= set(EXPECTED)
