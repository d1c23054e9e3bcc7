"""An episode's network: the black-box CLI runs in a network namespace of its own whose only
way out is the served endpoint.

Inside, :mod:`hscale.harness._netns_relay` brings the loopback up, listens on the endpoint's
port at 127.0.0.1 and carries each connection over a Unix socket; outside, a relay thread
carries what arrives on that socket to the endpoint. Nothing else is reachable from the CLI
or the commands it runs: no other host, no other port of this machine's loopback, no DNS.
Where this machine cannot make a network namespace (not root and no unprivileged user
namespaces) or the relay cannot bring its loopback up there, :func:`isolation` says so and
the CLI runs with its proxy variables pointed at a closed port only (clients that honour
them reach nothing else).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from hscale.harness import _netns_relay
from hscale.harness._netns_relay import pump_both
from hscale.harness.tasks import no_network_prefix

RELAY = Path(_netns_relay.__file__)  # run by path: it imports the standard library only


def fence() -> tuple[str, ...]:
    """The namespace prefix when the whole fence works here (the inside relay starts and
    brings its loopback up), probed once a process; () when it does not."""
    return _probe()[0]


@functools.cache
def _probe() -> tuple[tuple[str, ...], str]:
    """(the prefix, "") when the fence works; ((), why not) when it does not."""
    prefix = no_network_prefix()
    if not prefix:
        return (), "this machine cannot make network namespaces: run as root or allow " \
                   "unprivileged user namespaces"
    with tempfile.TemporaryDirectory(prefix="hscale-net-") as folder:
        try:
            done = subprocess.run([*prefix, sys.executable, "-I", str(RELAY),
                                   str(Path(folder) / "probe.sock"), "0", "--", "true"],
                                  capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as error:
            return (), f"the namespace's relay did not start: {error}"
    if done.returncode:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        return (), (f"the namespace's relay exited with {done.returncode}"
                    + (f": {said[-1]}" if said else ""))
    return prefix, ""


def isolation() -> str:
    """How episodes are kept off the network here, in words."""
    prefix, why = _probe()
    if prefix:
        return "a network namespace per episode: only the served endpoint is reachable"
    return f"proxy variables only ({why})"


@contextlib.contextmanager
def isolated(argv: Sequence[str], url: str) -> Iterator[list[str]]:
    """``argv`` as it runs in a network namespace that reaches ``url``'s host and port only
    (at 127.0.0.1 and the same port inside); ``argv`` itself where no namespace can be
    made. The outside relay lives as long as the context."""
    prefix = fence()
    if not prefix:
        yield list(argv)
        return
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    with tempfile.TemporaryDirectory(prefix="hscale-net-") as folder:
        path = str(Path(folder) / "endpoint.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
        stop = threading.Event()
        thread = threading.Thread(target=_serve, args=(listener, (parts.hostname, port), stop),
                                  name="hscale-netns-relay", daemon=True)
        thread.start()
        try:
            yield [*prefix, sys.executable, "-I", str(RELAY), path, str(port), "--", *argv]
        finally:
            stop.set()
            listener.close()
            thread.join(timeout=5)


def _serve(listener: socket.socket, target: tuple[str | None, int],
           stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            inside, _ = listener.accept()
        except OSError:  # closed: the episode ended
            return
        try:
            outside = socket.create_connection(target, timeout=30)
        except OSError:
            inside.close()
            continue
        outside.settimeout(None)
        pump_both(inside, outside)


__all__ = ["isolated", "isolation"]
