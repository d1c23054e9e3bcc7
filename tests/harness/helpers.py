"""Checks several harness tests share."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from hscale.harness import Episode, Harness

# internal: uses the built-in world's vocabulary
from hscale.harness._vocab import tokenize, vocabulary


def send_json(handler: BaseHTTPRequestHandler, payload: object, status: int = 200) -> None:
    """Answer an http.server request with ``payload`` as JSON (the test servers' replies)."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def out_of_vocabulary(text: str) -> list[str]:
    """Tokens of ``text`` the built-in vocabulary lacks (empty when it covers the text)."""
    known = set(vocabulary())
    return [t for t in tokenize(text) if t not in known]


def success_by_realization(episodes: Sequence[Episode]) -> dict[str, tuple[int, float]]:
    """Realization name (and ``overall``) -> (episodes, success rate)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    names: dict[str, list[str]] = {}
    for episode in episodes:
        if episode.harness not in names:
            names[episode.harness] = list(
                Harness.from_name(episode.harness).realization_names().values())
        for key in ("overall", *names[episode.harness]):
            counts[key][0] += 1
            counts[key][1] += episode.success
    return {k: (n, wins / n) for k, (n, wins) in sorted(counts.items())}


def hostile_turns(n: int) -> dict[str, str]:
    """Model turns of ``n`` characters aimed at regex backtracking, deep nesting and unclosed
    syntax in the parsers; the shape's name is the key."""
    def fill(piece: str, head: str = "", tail: str = "") -> str:
        return head + piece * ((n - len(head) - len(tail)) // len(piece)) + tail

    return {
        "newlines": fill("\n"), "lt_spaces": fill(" ", "<"), "lt_slash_spaces": fill(" ", "</"),
        "lt_many": fill("< "), "braces": fill("{"), "brackets": fill("[", "<tool_call>"),
        "json_nest": fill('{"a":', "<tool_call>"), "tool_call_tags": fill("<tool_call>"),
        "name_keys": fill('{"name"'), "quotes": fill('"'), "single_quotes": fill("'", "f('"),
        "escapes": fill('\\"', 'f("'), "triple": fill("'", "f('''"), "fences": fill("```"),
        "fence_lines": fill("```\n"), "dollar_quote": fill("'", "$ echo "),
        "dollar_lines": fill("$ x\n"), "dollar_long": fill("a", "$ echo ", " > f"),
        "action_words": fill("action: "), "action_lines": fill("action:\n"),
        "action_body": fill("y", "action: put\nfile: x\nbody: "), "parens": fill("f("),
        "nested_parens": fill("(", "fetch(name="), "word": fill("a"), "dots": fill("a."),
        "attrs": fill(' b="c"', "<a"), "open_attrs": fill(' b="', "<a"),
        "tag_spaces": fill(" ", "<a b"), "open_body": fill("x", '<save file="a">'),
        "entities": fill("&"), "spaces_then_call": fill(" ", "", "<ls/>"),
        "mixed": fill('<ls \n\n\n\n\n"{(`$'), "py_string": fill("a", 'fetch(name="', '")'),
    }


@contextmanager
def local_http(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """An http.server answering with ``handler`` on a free loopback port (``server_port``;
    ``bodies``, an empty list for handlers that keep what they were sent), stopped after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.bodies = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def judge_server(handler: type[BaseHTTPRequestHandler], monkeypatch, model: str,
                 url_tail: str = "/v1", key: str | None = None) -> Iterator[ThreadingHTTPServer]:
    """A local chat-completions server answering with ``handler``, named to hscale's judge by
    the HSCALE_JUDGE_* variables (no proxy in the way), stopped after."""
    for var in ("HSCALE_JUDGE_KEY", "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    with local_http(handler) as server:
        monkeypatch.setenv("HSCALE_JUDGE_URL",
                           f"http://127.0.0.1:{server.server_port}{url_tail}")
        monkeypatch.setenv("HSCALE_JUDGE_MODEL", model)
        if key is not None:
            monkeypatch.setenv("HSCALE_JUDGE_KEY", key)
        monkeypatch.setenv("HSCALE_JUDGE_TIMEOUT", "10")
        yield server
