"""Start and stop ``hscale serve``: the ASGI app on uvicorn in a background thread, on a
socket bound here first (so port 0 names its port at once and a taken port is one line)."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hscale.errors import HscaleError
from hscale.train.lm import Recorder, is_endpoint
from hscale.train.serving._engine import Batcher, Completer, LocalCompleter, ProxyCompleter
from hscale.train.serving._prefix import CACHE_TOKENS

GRACE_S = 5  # seconds a stopping server waits for requests in flight, then cancels them
# bytes of a request line and headers h11 buffers while they arrive; past them uvicorn answers
# 400 and closes. Headers that arrive whole are bounded by the app's MAX_HEADERS (a 431).
MAX_HEADER_BLOCK = 1 << 20

if TYPE_CHECKING:
    from hscale.train.serving._app import Service


class Server:
    """A running server: ``url`` is the base URL (ending in ``/v1``); ``shutdown()`` stops
    it, then the batcher, then writes the record's last part. A context manager."""

    def __init__(self, service: Service, sock: socket.socket, host: str,
                 verbose: bool, hosts: tuple[str, ...] = ()) -> None:
        import uvicorn  # the web server: imported by a command that serves, not by its users

        from hscale.train.serving._app import build_app

        self.service, self.host = service, host
        self.port = sock.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/v1"
        config = uvicorn.Config(build_app(service, hosts),
                                log_level="info" if verbose else "warning",
                                access_log=verbose, lifespan="off",
                                timeout_graceful_shutdown=GRACE_S, http="h11",
                                h11_max_incomplete_event_size=MAX_HEADER_BLOCK)
        self._server = uvicorn.Server(config)
        self._sock = sock
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="hscale-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                raise HscaleError("the server did not start in 30 s", "run with --verbose")
            time.sleep(0.01)
        self._closed = False

    @property
    def model(self) -> Any:
        return getattr(self.service.completer, "model", None)

    @property
    def batches(self) -> list[int]:
        """Sizes of the batches the model answered (one generate each; rows of each decoding
        step under continuous batching)."""
        return self.service.batcher.batches

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()
        self.service.batcher.close()
        if self.service.recorder is not None:
            self.service.recorder.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


def completer_of(model: Any, served_name: str | None = None, max_new_tokens: int = 1024
                 ) -> Completer:
    """A ChatModel's completer, or a proxy's for an ``http(s)://`` URL; a Completer as it
    is."""
    if callable(getattr(model, "complete", None)):
        return model
    if isinstance(model, str):
        if not is_endpoint(model):
            raise HscaleError(f"{model!r} is not an upstream URL", "give http://HOST:PORT/v1")
        return ProxyCompleter(model, served_name)
    return LocalCompleter(model, max_new_tokens)


def batcher_of(completer: Completer, max_batch: int = 32,
               cache_tokens: int = CACHE_TOKENS) -> Any:
    """What answers ``completer``'s requests: continuous batching (and a prefix cache of
    ``cache_tokens`` tokens) for a model that decodes step by step, else the batcher."""
    if isinstance(completer, LocalCompleter) and completer.continuous:
        from hscale.train.serving._scheduler import Scheduler  # torch: a local model's

        return Scheduler(completer, max_batch, cache_tokens)
    return Batcher(completer, max_batch)


def serve(model: Any, host: str = "127.0.0.1", port: int = 8000,
          record: str | Path | None = None, allow_remote: bool = False,
          verbose: bool = False, max_batch: int = 32, served_name: str | None = None,
          max_new_tokens: int = 1024, cache_tokens: int = CACHE_TOKENS,
          allow_hosts: tuple[str, ...] = ()) -> Server:
    """Serve ``model`` (a ChatModel, or an upstream URL to front) in a background thread;
    port 0 picks a free port. Requests must name this machine in ``Host``: localhost, an IP
    address, ``host`` itself, or a name in ``allow_hosts``."""
    family = _family(host, allow_remote)
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise HscaleError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                          "pick another --port (0 picks a free one)") from None
    sock.listen(128)
    from hscale.train.serving._app import Service  # Starlette: a command that serves only

    completer = completer_of(model, served_name, max_new_tokens)
    recorder = Recorder(record) if record is not None else None
    service = Service(completer, batcher_of(completer, max_batch, cache_tokens), recorder,
                      verbose)
    return Server(service, sock, host, verbose, (host, *allow_hosts))


def _family(host: str, allow_remote: bool) -> int:
    """The address family for ``host``; HscaleError unless it is loopback or remote is allowed."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise HscaleError(f"cannot resolve host {host!r}: {exc.strerror}",
                          "use 127.0.0.1") from None
    addresses = {info[4][0].split("%")[0] for info in infos}
    if not allow_remote and not all(ipaddress.ip_address(a).is_loopback for a in addresses):
        raise HscaleError(f"{host} is not a loopback address: the endpoint has no "
                          "authentication", "use 127.0.0.1, or pass --allow-remote")
    return infos[0][0]
