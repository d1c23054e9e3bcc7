"""report.html opened in headless Chromium: the screenshot shows tables and figures.

.ci/run installs Chromium (Debian's ``chromium`` package); elsewhere the test skips when no
browser is found. Set HSCALE_CHROMIUM to use a particular binary.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from hscale.analysis.report import write_report
from hscale.analysis.synthetic import demo_like

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome",
         "headless_shell")


def find_chromium() -> str | None:
    explicit = os.environ.get("HSCALE_CHROMIUM")
    if explicit:
        return explicit
    return next((path for name in NAMES if (path := shutil.which(name))), None)


def test_report_html_renders_in_headless_chromium(tmp_path):
    browser = find_chromium()
    if browser is None:
        pytest.skip("no headless Chromium found (install Debian's chromium package, as "
                    ".ci/run does, or set HSCALE_CHROMIUM)")
    runs = demo_like(tmp_path / "runs", tasks=6, seeds=(0, 1), runs=2, steps=8)
    page = write_report(runs, tmp_path / "report", n_boot=100).out / "report.html"
    shot = tmp_path / "shot.png"
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
               "--window-size=1280,4000", f"--screenshot={shot}", page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert shot.is_file(), done.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    ink = np.mean(pixels.min(axis=2) < 0.9)  # share of pixels that are not (near) white
    colours = len(np.unique((pixels[::4, ::4] * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    assert ink > 0.02, f"screenshot is blank ({ink:.4f} of pixels drawn)"
    assert colours > 50, "no figures rendered: too few colours for embedded plots"
