"""An OpenAI-compatible endpoint drives the agent loop (a local scripted server on loopback)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from hscale.errors import HscaleError
from hscale.harness import Harness, Message, OpenAIChatPolicy, Oracle, generate, run_episode
from tests.harness.helpers import send_json


@pytest.fixture
def server():
    """Serves the oracle's turns; records every request body."""
    state: dict = {"requests": []}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["requests"].append((self.path, body))
            messages = [Message("tool" if m["role"] == "user" and i > 1 else m["role"],
                                m["content"]) for i, m in enumerate(body["messages"])]
            text = state["oracle"].generate(messages).text
            reply = {"choices": [{"message": {"role": "assistant", "content": text},
                                  "logprobs": {"content": [{"logprob": -0.5}]}}]}
            send_json(self, reply)

        def log_message(self, *args):
            pass

    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()


def test_endpoint_policy_runs_an_episode(server):
    harness = Harness.from_name("S0-T2-O1-C0-W0")
    task = generate(3, seed=0)[2]
    server["oracle"] = Oracle(task, harness)
    policy = OpenAIChatPolicy(server["url"], model="served", api_key="k")
    episode = run_episode(policy, harness, task)
    assert episode.success and episode.termination == "answer"
    assert episode.generations[0].logprobs == (-0.5,)
    path, body = server["requests"][0]
    assert path == "/v1/chat/completions" and body["model"] == "served"
    assert body["messages"][0]["role"] == "system"
    assert all(m["role"] in {"system", "user", "assistant"} for _, b in server["requests"]
               for m in b["messages"])


def test_unreachable_endpoint_is_a_clear_error():
    policy = OpenAIChatPolicy("http://127.0.0.1:9/v1", model="m", timeout=2)
    with pytest.raises(HscaleError, match="failed"):
        policy.generate([Message("user", "hi")])
