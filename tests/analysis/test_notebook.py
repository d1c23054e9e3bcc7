"""notebooks/analysis.ipynb runs top to bottom in small mode and draws its figures."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "analysis.ipynb"


def test_analysis_notebook_executes_in_small_mode(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("HSCALE_NOTEBOOK_SMALL", "1")  # the kernel inherits the environment
    monkeypatch.delenv("HSCALE_RUNS", raising=False)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [out for cell in notebook.cells if cell.cell_type == "code"
               for out in cell.get("outputs", [])]
    errors = [out for out in outputs if out.get("output_type") == "error"]
    assert not errors, errors
    images = [out for out in outputs if "image/png" in out.get("data", {})]
    assert len(images) >= 6, "every figure should be drawn"
    text = "".join(out.get("text", "") for out in outputs)
    assert "synthetic demo-shaped results" in text and "Ordering measured" in text
