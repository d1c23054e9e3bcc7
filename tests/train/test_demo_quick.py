"""README's main job at smoke-test scale, end to end through the command line: every demo
arm runs (2 worker processes) from the shipped base model, then the report is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("verl")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_quick_runs_every_arm_and_reports(tmp_path):
    out = tmp_path / "runs"
    run = subprocess.run([sys.executable, "-m", "hscale.cli", "run",
                          str(ROOT / "experiments" / "demo.yaml"), "--quick", "--out", str(out),
                          "--workers", "2"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "9 of 9 runs completed" in run.stdout
    exp = out / "demo-quick"
    for run_dir in sorted(exp.glob("*/0")):
        assert json.loads((run_dir / "status.json").read_text())["state"] == "COMPLETED"
        evals = pd.read_parquet(run_dir / "eval.parquet")
        assert set(evals.setting) == {"base", "in_space", "out_of_space"}
    assert len(list(exp.glob("*/0"))) == 9
    report = subprocess.run([sys.executable, "-m", "hscale.cli", "report", str(exp)],
                            capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stderr[-2000:]
    html = (exp / "report" / "report.html").read_text()
    assert "structured-18" in html and "<img" in html
