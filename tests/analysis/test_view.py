"""``hscale view`` over real run folders (the demo at --quick size, played by the scripted
backend through the real harnesses and turn engine): the index, the filters, one episode's
transcript, a side-by-side pair, the export; and the pages in headless Chromium (skipped
without a browser, as the report's browser test is)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hscale.analysis import Study, build_view_app, export_html

# internal: tests the viewer's data helpers
from hscale.analysis._view_data import BEHAVIOURS, marked_lines
from hscale.contracts import EVAL_KEY, TRANSCRIPTS
from hscale.errors import HscaleError
from tests.analysis.test_browser import find_chromium

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("view") / "runs"
    done = subprocess.run([sys.executable, "-m", "hscale.cli", "run",
                           str(ROOT / "experiments" / "demo.yaml"), "--quick", "--backend",
                           "scripted", "--out", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out / "demo-quick"


@pytest.fixture(scope="module")
def study(runs) -> Study:
    return Study(runs)


def test_the_index_holds_every_eval_row_and_each_has_its_transcript(runs, study):
    evals = [pd.read_parquet(p) for p in sorted(runs.rglob("eval.parquet"))]
    assert len(study.select({"source": "eval"})) == sum(len(e) for e in evals) == 600
    kept = [pd.read_parquet(p) for p in sorted(runs.rglob("rollouts.parquet"))]
    assert len(study.select({"source": "rollout"})) == sum(len(k) for k in kept) > 0
    for path in runs.rglob("eval.parquet"):
        kept = pd.read_parquet(path.with_name(TRANSCRIPTS))
        assert len(kept) == len(pd.read_parquet(path))
        assert not kept.duplicated(list(EVAL_KEY)).any()
    for index in (0, 123, len(study) - 1):
        ep = study.episode(index)
        record = ep["transcript"]
        assert record is not None and record["reward"] == ep["reward"]
        assert record["messages"][0][0] == "system"  # as the harness rendered it
        assert ep["model_calls"] == ep["turns"] == len(record["tokens"])


def test_filters_narrow_to_exactly_the_rows_they_name(study):
    frame = study.frame[study.frame.source == "eval"]  # unless rollouts are asked for
    assert len(study.select({})) == len(frame)
    rollouts = study.select({"source": "rollout", "arm": "k1"})
    assert len(rollouts) and set(rollouts.setting) == {"training"}
    picked = study.select({"arm": "k1", "outcome": "failed"})
    assert len(picked) == ((frame.arm == "k1") & ~frame.success).sum() > 0
    stuck = study.select({"behaviour": "error-not-recovered"})
    assert len(stuck) and ((stuck.tool_errors > 0) & (stuck.recovered == 0)).all()
    level = study.select({"level": "T1", "setting": "in_space"})
    assert len(level) and level.harness.astype(str).str.contains("-T1-").all()
    assert len(study.select({"task": "eval-0-00001"})) == (frame.task_id == "eval-0-00001").sum()
    assert study.select({"arm": "no-such-arm"}, strict=False).empty  # the page's
    for query, says in (({"arm": "no-such-arm"}, "no episode has arm"),
                        ({"colour": "red"}, "no filter 'colour'"),
                        ({"outcome": "maybe"}, "no episode has outcome"),
                        ({"behaviour": "sleepy"}, "no episode has behaviour")):
        with pytest.raises(HscaleError, match=says):
            study.select(query)  # an export's --where: never ignored
    assert set(BEHAVIOURS) >= {"error-not-recovered", "repeated"}


def test_differences_name_the_components_that_differ(study):
    frame = study.frame.reset_index()
    a = frame[frame.harness == "S0-T0-O0-C0-W0"].iloc[0]
    b = frame[(frame.harness != "S0-T0-O0-C0-W0") & (frame.harness.str.startswith("S"))
               & (frame.task_id == a.task_id)].iloc[0]
    told = study.differences(study.episode(int(a["index"])), study.episode(int(b["index"])))
    changed = [f for f, x, y in zip("STOCW", a.harness.split("-"), b.harness.split("-"),
                                    strict=True) if x != y]
    assert [line.split(":")[0] for line in told if line.startswith("component")] == \
        [f"component {f}" for f in changed]
    assert all("|" in line for line in told)


@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=8),
       st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=8))
def test_marked_lines_mark_exactly_what_the_other_side_lacks_in_order(mine, other):
    marked = marked_lines("\n".join(mine), "\n".join(other))
    assert [m.text for m in marked] == mine
    kept = [m.text for m in marked if not m.changed]
    it = iter(other)
    assert all(line in it for line in kept)  # the unmarked lines are a subsequence of other


def test_export_is_one_self_contained_file_of_the_selection(study, tmp_path):
    page = export_html(study, {"arm": "k4"}, limit=7)  # its evaluated episodes
    assert "<script" not in page and "http" not in page.split("<main>", 1)[1]
    assert len(re.findall(r'<section id="e\d+">', page)) == 7
    assert "60</b> episodes match" in page
    out = tmp_path / "k4.html"
    done = subprocess.run([sys.executable, "-m", "hscale.cli", "view", str(study.root),
                           "--export", str(out), "--where", "arm=k4", "--limit", "3"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(re.findall(r'<section id="e\d+">', out.read_text())) == 3


@pytest.mark.parametrize("args, says", [
    (["view", "no/such/folder"], "no such folder"),
    (["view", ".", "--export", "x.html", "--where", "arm"], "not KEY=VALUE"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, says):
    done = subprocess.run([sys.executable, "-m", "hscale.cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (tmp_path / "x.html").exists()


def _page(study: Study, path: str) -> str:
    from starlette.testclient import TestClient

    with TestClient(build_view_app(study), base_url="http://localhost") as client:
        reply = client.get(path)
    assert reply.status_code == 200, reply.text[:500]
    return reply.text


def test_an_episode_page_says_what_was_expected_and_how_it_was_scored(study):
    from markupsafe import escape

    failed = study.frame.index[(study.frame.source == "eval") & ~study.frame.success]
    index = int(failed[0])
    record = study.episode(index)["transcript"]
    assert record["expected"] and record["checked"].endswith(repr(record["expected"]))
    page = _page(study, f"/episode/{index}")
    assert f"<td>scored by</td><td>{escape(record['checked'])}</td>" in page
    assert f"<td>expected</td><td>{escape(record['expected'])}</td>" in page


def test_the_table_states_pass1_as_the_report_does(study):
    """Sampled episodes only (greedy apart), and over several arms a note that the pooled
    number is no arm's."""
    page = _page(study, "/?arm=k1&setting=in_space")
    rows = study.select({"arm": "k1", "setting": "in_space", "source": "eval"})
    sampled = rows[rows.decoding == "sampled"]
    assert f"Pass@1 {sampled.success.mean() * 100:.1f}% over {len(sampled):,} sampled" in page
    if (rows.decoding == "greedy").any():
        greedy = rows[rows.decoding == "greedy"].success.mean() * 100
        assert f"greedy {greedy:.1f}%" in page
    assert "pooled over" not in page
    arms = study.select({"source": "eval"})["arm"].astype(str).nunique()
    assert f"pooled over {arms} arms" in _page(study, "/")


def test_a_run_of_greedy_rows_alone_is_its_pass1_as_in_the_report():
    """``hscale evaluate --decoding greedy`` writes greedy rows alone: the report measures that
    run by them (split_decoding), and so does the viewer's line."""
    # internal: tests the viewer's page builders
    from hscale.analysis._view_app import _pass1

    rows = pd.DataFrame({"experiment": "e", "arm": "m", "seed": 0, "decoding": "greedy",
                         "success": [True, False, False, True]})
    assert _pass1(rows) == "Pass@1 50.0% over 4 evaluated episodes"


# --- in a browser ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(study):
    if find_chromium() is None:
        pytest.skip("no headless Chromium found (install Debian's chromium package, as "
                    ".ci/run does, or set HSCALE_CHROMIUM)")
    import socket

    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_view_app(study), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def dom(url: str, tmp_path: Path) -> str:
    done = subprocess.run([find_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'p'}",
                           "--dump-dom", url], capture_output=True, text=True, timeout=120,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert "<table" in done.stdout or "class='msg" in done.stdout \
        or 'class="msg' in done.stdout, done.stderr[-2000:]
    return done.stdout


def summary_count(page: str) -> int:
    found = re.search(r"<p id=\"summary\"><b>([\d,]+)</b>", page)
    return int(found.group(1).replace(",", ""))


def test_the_page_loads_a_filter_narrows_an_episode_opens_two_side_by_side(
        served, study, tmp_path):
    table = dom(served + "/", tmp_path)
    assert summary_count(table) == len(study.select({}))
    assert table.count('class="episode"') == 50  # one page
    narrowed = dom(served + "/?arm=k1&outcome=solved", tmp_path)
    want = len(study.select({"arm": "k1", "outcome": "solved"}))
    assert summary_count(narrowed) == want < len(study.select({}))
    assert narrowed.count('class="episode"') == min(want, 50)
    first = int(re.search(r'href="/episode/(\d+)"', narrowed).group(1))
    assert study.frame.loc[first, "arm"] == "k1" and study.frame.loc[first, "success"]
    episode = dom(f"{served}/episode/{first}", tmp_path)
    record = study.episode(first)["transcript"]
    assert episode.count('class="msg assistant"') >= sum(
        1 for role, _ in record["messages"] if role == "assistant")
    other = int(re.search(r'href="/compare\?a=\d+&amp;b=(\d+)"', episode).group(1))
    pair = dom(f"{served}/compare?a={first}&b={other}", tmp_path)
    assert 'id="left"' in pair and 'id="right"' in pair and 'class="diffs"' in pair
    assert json.dumps(study.frame.loc[other, "task_id"]).strip('"') in pair


def test_a_report_rows_link_opens_exactly_the_episodes_the_row_averages(study):
    """The report's "episodes" links (hscale.analysis._view_app.view_link): an arm and
    setting's row selects that arm's sampled evaluation episodes of the setting; a level's
    row, the in-space episodes under that level."""
    from urllib.parse import parse_qsl, urlsplit

    # internal: tests the viewer's page builders
    from hscale.analysis._view_app import view_link

    evals = study.frame[study.frame.source == "eval"]
    link = view_link(evals.assign(method=evals.arm.astype(str)))

    def selected(row: dict) -> pd.DataFrame:
        return study.select(dict(parse_qsl(urlsplit(link(row)).query)))

    for (arm, setting), rows in evals[evals.decoding == "sampled"].groupby(
            ["arm", "setting"], observed=True):
        label = {"base": "base harness", "in_space": "in-space",
                 "out_of_space": "out-of-space"}[setting]
        got = selected({"source": "measured", "method": arm, "setting": label})
        assert got.index.equals(rows.index), (arm, setting)
    got = selected({"component": "T: tool interface", "level": 1})
    want = evals[(evals.setting == "in_space")
                 & evals.harness.astype(str).str.contains("-T1-", regex=False)]
    assert len(got) > 0 and got.index.equals(want.index)
    assert link({"source": "reported", "method": "structured-18"}) is None
    assert link({"method": "no-such-arm"}) is None
