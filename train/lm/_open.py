"""Language models in the harness loop, for evaluation and serving (no training here)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from hscale.errors import HscaleError
from hscale.train.lm._base import ChatModel

HINT = ("give an endpoint (http://HOST:PORT/v1), smollm2, a Hugging Face model folder "
        "(with config.json), an embedded checkpoint (.pt) or preset (hscale-tiny)")
URL_HINT = "give http://HOST:PORT/v1 (an IPv6 host in brackets: http://[::1]:8000/v1)"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def is_endpoint(name: str) -> bool:
    """Whether a model name is an OpenAI-compatible endpoint's URL (``scheme://...``); one
    that is malformed (no host, a bad port or IPv6 bracket, not http or https) is refused
    here, in one line, whoever asks."""
    if not _SCHEME.match(name):
        return False
    _check_url(name)
    return True


def _check_url(url: str) -> None:
    def bad(why: str) -> HscaleError:
        return HscaleError(f"endpoint {url!r}: {why}", URL_HINT)

    if any(c.isspace() or not c.isprintable() for c in url):
        raise bad("it holds a space or a control character")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- a port that is not a number in 0..65535 raises here
    except ValueError as exc:
        raise bad(str(exc)) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise bad(f"{parts.scheme}:// is not http:// or https://")
    if not parts.hostname:
        raise bad("no host")
    if parts.port == 0:
        raise bad("port 0 is no server's port")
    if parts.query or parts.fragment:
        raise bad("a base URL has no ?query or #fragment")


def served_model(name: str, served_name: str | None = None) -> ChatModel | str:
    """What ``hscale serve`` fronts for ``name``: an endpoint's URL as it is (proxy mode: its
    own tool calling), else the model opened here."""
    return name if is_endpoint(name) else open_chat_model(name, served_name)


def open_chat_model(name: str, served_name: str | None = None) -> ChatModel:
    """The chat model ``name`` names; ``served_name`` is an endpoint's model name."""
    if not name.strip():
        raise HscaleError("the model's name is empty", HINT)
    if is_endpoint(name):
        from hscale.harness import probe
        from hscale.train.lm._endpoint import EndpointChat

        probe(name)  # a dead endpoint is refused before anything is written
        return EndpointChat(name, served_name or "default")
    if name == "smollm2":
        from hscale.train.lm._hf import HFChat
        from hscale.train.lm._importer import import_smollm2

        return HFChat(import_smollm2())
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise HscaleError(f"model {name!r}: {path} holds no config.json", HINT)
        from hscale.train.lm._hf import HFChat

        return HFChat(path)
    if path.suffix == ".pt":
        if not path.is_file():
            raise HscaleError(f"model {name!r}: no such file", HINT)
        from hscale.train.lm._embedded import EmbeddedChat

        return EmbeddedChat.load(path)
    from hscale.train.embedded import PRESETS

    if name in PRESETS:
        from hscale.train.lm._embedded import EmbeddedChat

        return EmbeddedChat.open(name)
    raise HscaleError(f"model {name!r}: not an endpoint, folder, checkpoint or preset", HINT)
