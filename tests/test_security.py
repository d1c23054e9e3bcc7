"""hscale's local servers and files, attacked as a web page, a malicious model output, a
shared run folder or a black-box CLI would attack them: a foreign ``Host`` (DNS rebinding)
and a cross-origin simple POST are refused by ``hscale view`` and ``hscale serve`` (and the
POST is never executed); every response carries a strict Content-Security-Policy; every value
a crafted run folder holds is rendered escaped; ``--export`` replaces nothing it did not
write (a user's file, a FIFO, a link, a device); a CLI's escape sequences never reach the
terminal."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
import time
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hscale.analysis import Study, build_view_app, export_html

# internal: tests the viewer's page builders
from hscale.analysis._view_app import compare_page, episode_page, table_page
from hscale.contracts import EVAL_KEY, ROLLOUT_COLUMNS
from hscale.text import printable, visible
from tests.cli import hscale

ATTACKS = ["<img src=x onerror=alert(1)>", "\"><script>alert(1)</script>",
           "' onmouseover='alert(1)", "javascript:alert(1)", "</pre><svg onload=alert(1)>",
           "</style><script>x</script>", "<!--", "]]>", "{{7*7}}", "&lt;b&gt;",
           "\x1b]0;pwned\x07\x1b[2J", "\u202eevil", "a\x00b"]
payloads = st.one_of(st.sampled_from(ATTACKS),
                     st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30),
                     st.lists(st.sampled_from(ATTACKS), min_size=1, max_size=3).map("".join))


# --- a crafted run folder ------------------------------------------------------------------
def _transcript(text: str) -> str:
    return json.dumps({
        "messages": [["system", text], ["user", text], ["assistant", text], [text, text]],
        "segments": [[[["system", text]], 1, 1, 4]], "calls": [],
        "tokens": [[text, text]], "final_answer": text, "termination": text,
        "reward": 0.0, "error": text, "parse_errors": 0,
        "model_calls": [{"prompt_tokens": text, "completion_tokens": text, "seconds": text,
                         "new": [{"role": text, "content": text},
                                 {"role": "user", "content": [{"text": text}, text]}],
                         "reply": text, "tool_calls": [text]}]})


def crafted_run(folder: Path, text: str, rows: int = 3) -> Path:
    """A run folder of the contract's shape whose every string cell (eval, transcripts,
    rollouts, the manifest's level names) holds ``text``."""
    run = folder / "exp" / "arm" / "0"
    run.mkdir(parents=True, exist_ok=True)
    evals = pd.DataFrame({
        "experiment": text, "arm": [text, f"{text}2", "arm"][:rows], "seed": 0,
        "run": range(rows), "step": 4, "benchmark": text, "setting": "in_space",
        "harness": ["S0-T0-O0-C0-W0", text, "S1-T1-O1-C1-W1"][:rows], "task_id": text,
        "reward": 0.0, "success": [False, True, False][:rows], "turns": 2,
        "decoding": text, "category": text, "error": text, "tool_calls": 1.0,
        "tool_errors": 0.0, "recovered": 0.0, "repeats": 0.0, "looked_first": 0.0,
        "model_calls": 1.0, "prompt_tokens": 3.0, "completion_tokens": 4.0})
    evals.to_parquet(run / "eval.parquet")
    kept = evals[["experiment", "arm", "seed", *EVAL_KEY]].assign(
        seconds=1.0, transcript=_transcript(text))
    kept.to_parquet(run / "transcripts.parquet")
    rollouts = pd.DataFrame([{**{c: 0 for c in ROLLOUT_COLUMNS}, "experiment": text,
                              "arm": text, "role": text, "task_id": text, "harness": text,
                              "success": True, "reward": 1.0, "seconds": 1.0,
                              "model_calls": 1.0, "prompt_tokens": 1.0,
                              "completion_tokens": 1.0, "transcript": _transcript(text)}])
    rollouts.to_parquet(run / "rollouts.parquet")
    (run / "manifest.json").write_text(json.dumps({"space": {"factors": {
        f: [text, text, text] for f in "STOCW"}}}))
    return folder


TAGS = {"html", "head", "meta", "title", "style", "body", "header", "a", "main", "form",
        "label", "select", "option", "input", "button", "p", "b", "div", "table", "thead",
        "tbody", "tr", "th", "td", "span", "pre", "details", "summary", "h2", "h3", "h4",
        "ul", "li", "section", "hr"}
ATTRIBUTES = {"charset", "name", "content", "http-equiv", "href", "class", "method",
              "action", "value", "selected", "size", "id", "type"}


class Markup(HTMLParser):
    """Every tag and attribute of a page, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def assert_inert(page: str) -> Markup:
    """No tag, attribute or link a page's author did not write: what a run folder holds
    is text."""
    parsed = Markup()
    parsed.feed(page)
    parsed.close()
    for tag, attrs in parsed.tags:
        assert tag in TAGS, (tag, attrs)
        for name, value in attrs:
            assert name in ATTRIBUTES, (tag, name, value)
            if name == "href":
                assert value.startswith(("/", "#", "?")), value
    assert page.count("<style>") == 1 and "<script" not in page
    return parsed


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=payloads)
def test_every_string_a_run_folder_holds_renders_escaped(tmp_path_factory, text):
    folder = crafted_run(tmp_path_factory.mktemp("crafted"), text)
    study = Study(folder)
    assert not study.problems, study.problems
    evals = study.select({"source": "eval"}, strict=False)
    pages = [table_page(study, {}), table_page(study, {"source": "rollout"}),
             table_page(study, {"arm": text, "task": text}),
             export_html(study, {}, limit=10)]
    pages += [episode_page(study, i) for i in range(len(study))]
    pages += [compare_page(study, int(evals.index[0]), int(evals.index[1]))]
    for page in pages:
        parsed = assert_inert(page)
        shown = visible(text).strip()
        if shown and not any(c in shown for c in "&<>"):  # read back as the reader sees it
            assert shown in "".join(parsed.text).replace("\r\n", "\n").replace("\r", "\n") \
                or "\r" in text


def test_a_crafted_number_column_is_refused_by_name_not_rendered(tmp_path):
    folder = crafted_run(tmp_path / "runs", "x")
    good = tmp_path / "runs" / "exp" / "arm" / "0"
    bad = tmp_path / "runs" / "exp" / "evil" / "0"
    bad.mkdir(parents=True)
    for name in ("transcripts.parquet", "manifest.json"):
        (bad / name).write_bytes((good / name).read_bytes())
    frame = pd.read_parquet(good / "eval.parquet")
    for column in ("seed", "step", "run", "turns"):
        frame[column] = frame[column].astype(object)
    frame["seed"] = ATTACKS[0]
    frame.to_parquet(bad / "eval.parquet")
    study = Study(folder)
    assert any("evil/0/eval.parquet: column seed is not whole numbers" in p
               for p in study.problems), study.problems
    assert "onerror" not in table_page(study, {})
    done = hscale("view", folder, "--export", tmp_path / "out.html")
    assert done.returncode == 0 and "warning: skipped" in done.stderr, done.stderr
    assert "column seed" in done.stderr


# --- the servers ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    import uvicorn

    study = Study(crafted_run(tmp_path_factory.mktemp("served"), "episode-text"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(build_view_app(study), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", port
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from hscale.train.serving import ScriptedChat, serve

    record = tmp_path_factory.mktemp("record")
    server = serve(ScriptedChat({}), port=0, record=record)
    yield server, record
    server.shutdown()


FOREIGN_HOSTS = ["attacker.example", "attacker.example:{port}", "127.0.0.1.nip.io:{port}",
                 "localhost.attacker.example", "evil.com:80", ""]
LOCAL_HOSTS = ["127.0.0.1:{port}", "localhost:{port}", "127.0.0.1", "app.localhost:{port}"]


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_a_foreign_host_gets_nothing_from_the_viewer(viewer, host):
    url, port = viewer
    reply = httpx.get(f"{url}/episode/0", headers={"Host": host.format(port=port)})
    assert reply.status_code == 403 and "episode-text" not in reply.text
    assert "DNS rebinding" in reply.text


@pytest.mark.parametrize("host", LOCAL_HOSTS)
def test_the_viewer_answers_its_own_names(viewer, host):
    url, port = viewer
    reply = httpx.get(f"{url}/episode/0", headers={"Host": host.format(port=port)})
    assert reply.status_code == 200 and "episode-text" in reply.text


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_a_foreign_host_gets_nothing_from_serve(served, host):
    server, _ = served
    reply = httpx.get(f"{server.url}/models",
                      headers={"Host": host.format(port=server.port)})
    assert reply.status_code == 403 and "DNS rebinding" in reply.text
    assert "data" not in reply.json()


def _chat_body() -> bytes:
    return json.dumps({"model": "m", "max_tokens": 8,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()


@pytest.mark.parametrize(("origin", "kind", "status"), [
    ("http://evil.example", "text/plain", 403),
    ("http://evil.example", "application/json", 403),
    ("null", "application/json", 403),
    ("http://127.0.0.1:1", "application/json", 403),  # another port: another origin
    (None, "text/plain", 415),  # what a page sends without a preflight, even unlabelled
    (None, "application/x-www-form-urlencoded", 415),
])
def test_a_cross_origin_or_simple_post_is_refused_and_never_executed(served, origin, kind,
                                                                     status):
    from hscale.train.lm import read_record

    server, record = served
    session = f"attack-{abs(hash((origin, kind)))}"
    headers = {"content-type": kind, "x-hscale-session": session}
    if origin is not None:
        headers["origin"] = origin
    reply = httpx.post(f"{server.url}/chat/completions", content=_chat_body(), headers=headers)
    assert reply.status_code == status, reply.text
    assert server.service.requests(session) == 0  # never counted, never decoded
    rows = read_record(record)
    mine = rows[rows.session == session]
    assert len(mine) == 1 and int(mine.iloc[0].status) == status  # recorded: who tried


def test_a_same_origin_post_is_answered(served):
    server, _ = served
    origin = f"http://127.0.0.1:{server.port}"
    reply = httpx.post(f"{server.url}/chat/completions", content=_chat_body(),
                       headers={"content-type": "application/json", "origin": origin})
    assert reply.status_code == 200, reply.text


def _policy(reply: httpx.Response) -> dict[str, str]:
    return {d.split()[0]: d.strip() for d in reply.headers["content-security-policy"]
            .split(";") if d.strip()}


def test_every_response_carries_a_strict_policy(viewer, served):
    url, _ = viewer
    for path in ("/", "/episode/0", "/compare?a=0&b=1", "/episode/999999", "/nowhere"):
        reply = httpx.get(url + path)
        policy = _policy(reply)
        assert policy["default-src"] == "default-src 'none'" and "script-src" not in policy
        assert "'unsafe-inline'" not in reply.headers["content-security-policy"]
        assert policy["frame-ancestors"] == "frame-ancestors 'none'"
        assert reply.headers["x-content-type-options"] == "nosniff"
        assert reply.headers["x-frame-options"] == "DENY"
    server, _ = served
    for reply in (httpx.get(f"{server.url}/models"),
                  httpx.post(f"{server.url}/chat/completions", content=_chat_body(),
                             headers={"content-type": "application/json"})):
        assert _policy(reply)["default-src"] == "default-src 'none'"
        assert reply.headers["x-content-type-options"] == "nosniff"


def test_the_pages_inline_style_is_the_one_the_policy_allows(viewer):
    import base64
    import hashlib
    import re

    url, _ = viewer
    reply = httpx.get(url + "/")
    style = re.search(r"<style>(.*?)</style>", reply.text, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in _policy(reply)["style-src"]


# --- files written at a user's path --------------------------------------------------------
@pytest.fixture
def runs(tmp_path):
    return crafted_run(tmp_path / "runs", "x")


def _kinds(tmp_path: Path) -> dict[str, Path]:
    user = tmp_path / "thesis.tex"
    user.write_text("\\chapter{mine}")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    target = tmp_path / "target.txt"
    target.write_text("linked")
    link = tmp_path / "link.html"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.html"
    dangling.symlink_to(tmp_path / "nowhere")
    folder = tmp_path / "folder"
    folder.mkdir()
    return {"user file": user, "fifo": fifo, "link": link, "dangling link": dangling,
            "device": Path("/dev/null"), "folder": folder}


def _state(path: Path) -> tuple:
    info = os.lstat(path)
    kind = stat.S_IFMT(info.st_mode)
    body = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
    return kind, body, os.readlink(path) if path.is_symlink() else None


@pytest.mark.parametrize("kind", ["user file", "fifo", "link", "dangling link", "device",
                                  "folder"])
def test_export_replaces_nothing_it_did_not_write(runs, tmp_path, kind):
    path = _kinds(tmp_path)[kind]
    before = _state(path)
    target = (tmp_path / "target.txt").read_bytes()
    done = hscale("view", runs, "--export", path)  # (a FIFO opened would hang here)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --export {path}"), lines
    assert _state(path) == before and (tmp_path / "target.txt").read_bytes() == target
    assert "wrote" not in done.stdout


def test_export_replaces_its_own_earlier_export(runs, tmp_path):
    out = tmp_path / "view.html"
    for _ in range(2):
        done = hscale("view", runs, "--export", out)
        assert done.returncode == 0, done.stderr
    assert out.read_text().startswith("<!doctype html>")


def test_atomic_writes_never_replace_a_link_or_special_file(tmp_path):
    from hscale.errors import HscaleError
    from hscale.files import atomic_write_text

    kinds = _kinds(tmp_path)
    for name in ("fifo", "link", "dangling link", "device"):
        before = _state(kinds[name])
        with pytest.raises(HscaleError, match="not a plain file"):
            atomic_write_text(kinds[name], "x")
        assert _state(kinds[name]) == before


# --- text from outside reaching a terminal -------------------------------------------------
EVIL = r"printf '\033]0;pwned\007\033[2J\033]52;c;ZXZpbA==\007\233\061m boom\n' >&2; exit 1"
CONTROLS = ("\x1b", "\x07", "\x9b")


def test_a_clis_escape_sequences_never_reach_the_terminal(tmp_path):
    from tests.harness.test_blackbox_failures import _install

    root = tmp_path / "harnesses"
    _install(root, EVIL)
    env = {"HSCALE_HARNESSES": str(root)}
    collected = hscale("collect", "scripted", "--harness", "bb/claude-code", "--out",
                       tmp_path / "collected", "--tasks", "2", env=env)
    evaluated = hscale("evaluate", "hscale-tiny", "--harnesses", "bb/claude-code", "--tasks",
                       "1", "--decoding", "greedy", "--out", tmp_path / "runs", env=env)
    for done in (collected, evaluated):
        assert done.returncode == 2 and "boom" in done.stderr, done.stderr
        output = done.stdout + done.stderr
        assert not any(c in output for c in CONTROLS), repr(output[-400:])


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_printable_text_has_no_control_but_tab_and_newline(text):
    out = printable(text)
    assert not any(ord(c) < 32 and c not in "\t\n" or 0x7F <= ord(c) <= 0x9F for c in out)
    assert printable(out) == out
    if not any(ord(c) < 32 and c not in "\t\n" or 0x7F <= ord(c) <= 0x9F
               or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069 for c in text):
        assert out == text  # plain text passes unchanged

