"""report.html opened in headless Chromium: the screenshot shows tables and figures.

.ci/run installs Chromium (Debian's ``chromium`` package); elsewhere the test skips when no
browser is found. Set HSCALE_CHROMIUM to use a particular binary.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from hscale.analysis import demo_like, write_report

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome",
         "headless_shell")


def find_chromium() -> str | None:
    explicit = os.environ.get("HSCALE_CHROMIUM")
    if explicit:
        return explicit
    return next((path for name in NAMES if (path := shutil.which(name))), None)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The demo-shaped results' report.html, written once for the tests below."""
    if find_chromium() is None:
        pytest.skip("no headless Chromium found (install Debian's chromium package, as "
                    ".ci/run does, or set HSCALE_CHROMIUM)")
    tmp = tmp_path_factory.mktemp("browser")
    runs = demo_like(tmp / "runs", tasks=6, seeds=(0, 1), runs=2, steps=8)
    return write_report(runs, tmp / "report", n_boot=100).out / "report.html"


def chromium(page, tmp_path, size: str, *flags: str) -> subprocess.CompletedProcess:
    """``page`` opened by headless Chromium in a window of ``size`` (its own profile)."""
    command = [find_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
               "--hide-scrollbars", "--disable-dev-shm-usage",
               f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={size}", *flags,
               page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "HOME": str(tmp_path)})


def test_report_html_renders_in_headless_chromium(page, tmp_path):
    shot = tmp_path / "shot.png"
    done = chromium(page, tmp_path, "1280,4000", f"--screenshot={shot}")
    assert shot.is_file(), done.stderr[-2000:]
    from matplotlib.image import imread

    pixels = imread(shot)[..., :3]
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    ink = np.mean(pixels.min(axis=2) < 0.9)  # share of pixels that are not (near) white
    colours = len(np.unique((pixels[::4, ::4] * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    assert ink > 0.02, f"screenshot is blank ({ink:.4f} of pixels drawn)"
    assert colours > 50, "no figures rendered: too few colours for embedded plots"


# Measures the page as Chromium lays it out at 1280 x 800 (the first screen) and writes what
# it found into the DOM, which --dump-dom prints; the report itself holds no script.
PROBE = """<script>window.addEventListener('load', () => {
  const box = e => { const b = e.getBoundingClientRect(); return [b.top, b.bottom, b.height]; };
  const screen = window.innerHeight;
  const summary = document.getElementById('run-summary');
  const figure = document.getElementById('fig-headline');
  const answer = document.getElementById('answer');
  const tables = [...document.querySelectorAll('table')].map(box)
      .filter(b => b[2] > 0 && b[0] < screen);
  const measured = [...document.querySelectorAll('details.measured table')].map(t => {
    const names = [...t.tHead.rows[t.tHead.rows.length - 1].cells].map(c => c.textContent);
    const rows = [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent.trim()));
    const empty = names.filter((_, j) => rows.every(r => ['\u2014', ''].includes(r[j] ?? '')));
    return {table: t.closest('details').querySelector('summary').textContent, empty};
  });
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({screen, summary: summary && box(summary),
    figure: figure && box(figure), answer: answer && box(answer),
    sentences: answer ? [...answer.querySelectorAll('p')].map(p => p.textContent) : [],
    tables, measured});
  document.body.appendChild(out);
});</script>"""


def test_the_first_screen_holds_the_summary_and_the_forest_plot_and_no_table(page, tmp_path):
    """Opened as a new user opens it: at 1280 x 800 the run summary, the answer's sentences
    and the headline forest plot are on the first screen, whole, and no table is; no
    measured table has a column that is empty for every row."""
    probe = page.with_name("probe.html")
    # internal: tests the report page's content policy
    from hscale.analysis._report_html import POLICY

    text = page.read_text()
    assert POLICY in text  # the report runs no script; the probe's runs without the policy
    probe.write_text(text.replace(POLICY, "").replace("</body>", PROBE + "</body>"))
    done = chromium(probe, tmp_path, "1280,800", "--virtual-time-budget=5000", "--dump-dom")
    found = re.search(r"<pre id=\"probe\">(.*?)</pre>", done.stdout, re.S)
    assert found, done.stderr[-2000:]
    layout = json.loads(html.unescape(found.group(1)))
    screen = layout["screen"]
    assert layout["summary"] and layout["summary"][1] <= screen
    assert layout["answer"] and layout["answer"][1] <= screen  # the answer, whole
    assert 2 <= len(layout["sentences"]) <= 4
    assert layout["sentences"][0].startswith("Against structured-18")
    assert layout["answer"][1] <= layout["figure"][0]  # the answer, then the plot
    top, bottom, height = layout["figure"]
    assert height > 200 and bottom <= screen, layout["figure"]  # the whole forest plot
    assert layout["tables"] == []  # no table on the first screen
    assert len(layout["measured"]) >= 5
    assert [t for t in layout["measured"] if t["empty"]] == []
