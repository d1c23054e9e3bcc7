"""An episode's network fence (hscale.harness._netns) without a CLI: a command run inside it
reaches the served endpoint and nothing else, and where this machine can make a network
namespace the fence is up (a relay that fails to start is a failure here, never a quiet fall
back to proxy variables)."""

from __future__ import annotations

import subprocess
import sys
from http.server import BaseHTTPRequestHandler

import pytest

from hscale.harness import isolation

# internal: tests the network fence itself
from hscale.harness._netns import RELAY, fence, isolated
from hscale.harness.tasks import no_network_prefix
from tests.harness.helpers import local_http, send_json

PROBE = ("import socket, sys\n"
         "for a in sys.argv[1:]:\n"
         "    h, p = a.rsplit(':', 1); c = socket.socket(); c.settimeout(3)\n"
         "    print('reached' if c.connect_ex((h, int(p))) == 0 else 'unreachable')\n")


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        send_json(self, {"ok": True})

    def log_message(self, *args):
        pass


def _namespaces() -> None:
    if not no_network_prefix():
        pytest.skip("this machine cannot make network namespaces (not root, no unprivileged "
                    "user namespaces)")


def test_the_relay_runs_by_path():
    assert RELAY.is_file(), RELAY


def test_where_namespaces_can_be_made_the_fence_is_up():
    _namespaces()
    assert fence(), isolation()
    assert isolation().startswith("a network namespace per episode")


def test_inside_the_fence_only_the_endpoint_answers():
    _namespaces()
    with local_http(_Ok) as endpoint, local_http(_Ok) as other:
        url = f"http://127.0.0.1:{endpoint.server_port}/v1"
        argv = [sys.executable, "-I", "-c", PROBE, f"127.0.0.1:{endpoint.server_port}",
                f"127.0.0.1:{other.server_port}", "93.184.215.14:80", "1.1.1.1:53"]
        with isolated(argv, url) as fenced:
            done = subprocess.run(fenced, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["reached", "unreachable", "unreachable", "unreachable"]
