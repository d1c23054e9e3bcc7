"""What stands in front of every local HTTP server of hscale (``hscale view``, ``hscale
serve``): a server on 127.0.0.1 is reachable by every web page the user opens, so it answers
only requests that name it and come from its own pages.

- ``Host`` must name this machine: ``localhost`` (or ``*.localhost``), an IP address, or a
  name the user allowed. A DNS-rebinding page reaches the loopback under its own name
  (``Host: attacker.example``), and is refused.
- A request that carries ``Origin`` (every cross-origin fetch, every POST a browser sends)
  must come from the server's own origin; ``Origin: null`` (a file or a sandboxed frame) is
  refused too. A link followed from a report opened from disk sends none and is answered.
- A JSON API refuses the bodies a page can send without asking (``text/plain``, forms):
  its state-changing requests must say ``application/json``.
- Every response carries a strict Content-Security-Policy and the headers that keep it out
  of other sites' frames and reads.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

LOOPBACK = "localhost"
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
# the content types a page may send cross-origin without a preflight (the CORS "simple" ones)
SIMPLE_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")
# for a JSON API: nothing to load, no frame, no form; a browser shown one renders no script
API_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
HEADERS = {"x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
           "x-frame-options": "DENY", "cross-origin-resource-policy": "same-origin",
           "cross-origin-opener-policy": "same-origin"}

Refusal = Callable[[Any, int, str], Awaitable[Any]]  # (request, status, message) -> Response


def host_name(value: str) -> str:
    """The host of a ``Host`` header or an origin's netloc, lower case, without its port,
    brackets or trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        value = value.split(":")[0]
    return value.rstrip(".")


def names_this_machine(name: str, allowed: Iterable[str] = ()) -> bool:
    """Whether a request's host ``name`` (from :func:`host_name`) can only mean this server:
    localhost, an IP literal (no DNS answer can rebind one), or a name in ``allowed``."""
    if name == LOOPBACK or name.endswith("." + LOOPBACK) or name in set(allowed):
        return True
    try:
        ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    return True


def _same_origin(origin: str, scheme: str, host: str) -> bool:
    """Whether ``origin`` (``scheme://host[:port]``) is the request's own: its scheme, and
    the host and port of its ``Host`` header (default ports filled in)."""
    default = {"http": 80, "https": 443}
    try:
        theirs, ours = urlsplit(origin.strip().lower()), urlsplit(f"//{host.strip().lower()}")
        mine = (scheme, ours.hostname, ours.port or default.get(scheme))
        return (theirs.scheme, theirs.hostname, theirs.port or default.get(theirs.scheme)) \
            == mine and theirs.path in ("", "/")
    except ValueError:  # a port that is not a number
        return False


class LocalOnly:
    """ASGI middleware: the checks of this module around ``app``. ``policy``: the
    Content-Security-Policy of every response; ``json_api``: refuse simple content types
    on state-changing requests; ``hosts``: names besides localhost and IP literals a
    ``Host`` may give (a remote server's own name); ``refuse``: makes the refusal's
    response (the app's shape of error), default plain text; ``host_hint``: ends a foreign
    Host's refusal (how to allow a name)."""

    def __init__(self, app: Any, policy: str = API_POLICY, json_api: bool = False,
                 hosts: Iterable[str] = (), refuse: Refusal | None = None,
                 host_hint: str = "") -> None:
        self.app, self.policy, self.json_api, self.host_hint = app, policy, json_api, host_hint
        self.hosts = frozenset(host_name(h) for h in hosts)
        self.refuse = refuse

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self.problem(scope)

        async def secured(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", [])
                           if k.decode("latin-1").lower() not in HEADERS
                           and k.lower() != b"content-security-policy"]
                headers += [(k.encode(), v.encode()) for k, v in HEADERS.items()]
                headers.append((b"content-security-policy", self.policy.encode()))
                message = {**message, "headers": headers}
            await send(message)

        if problem is None:
            await self.app(scope, receive, secured)
            return
        status, message = problem
        from starlette.requests import Request
        from starlette.responses import PlainTextResponse

        request = Request(scope, receive)
        response = (await self.refuse(request, status, message) if self.refuse is not None
                    else PlainTextResponse(message + "\n", status_code=status))
        await response(scope, receive, secured)

    def problem(self, scope: dict) -> tuple[int, str] | None:
        """(status, why) of a request to refuse, or None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", ())}
        host = headers.get("host", "")
        if not host or not names_this_machine(host_name(host), self.hosts):
            return 403, (f"refused: Host {host!r} does not name this server (a page of "
                         "another site, or DNS rebinding); reach it as localhost or by its "
                         f"IP address{self.host_hint}")
        origin = headers.get("origin")
        if origin is not None and not _same_origin(origin, scope.get("scheme", "http"), host):
            return 403, (f"refused: a request from another origin ({origin}); this local "
                         "server answers only its own pages and non-browser clients")
        method = scope.get("method", "GET").upper()
        if self.json_api and method not in SAFE_METHODS:
            kind = headers.get("content-type", "").split(";")[0].strip().lower()
            if kind in SIMPLE_TYPES:
                return 415, (f"refused: Content-Type {kind}; send the JSON body as "
                             "Content-Type: application/json (curl: --json, or -H "
                             "'Content-Type: application/json')")
        return None
