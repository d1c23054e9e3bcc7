"""What a spec's ``model`` names, per backend: an embedded preset (local backend), a
Hugging Face hub id or local model folder (veRL and evaluation), with short aliases for the
papers' models as published, or an OpenAI-compatible endpoint's URL (evaluation, serving).

A local folder is checked before anything is written (it must hold a ``config.json``); a hub
id is taken as written, since a GPU node downloads it, not this machine.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

from hscale.errors import HscaleError, reason

# The papers' models, by the names they and hscale's specs use, as published on the hub.
ALIASES = {
    "Qwen3-4B-Instruct-2507": "Qwen/Qwen3-4B-Instruct-2507",
    "Qwen3-4B-Instruct": "Qwen/Qwen3-4B-Instruct-2507",
    "Qwen3-30B-A3B-Instruct-2507": "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "Qwen3-30B-A3B-Instruct": "Qwen/Qwen3-30B-A3B-Instruct-2507",
    "Qwen3.5-4B": "Qwen/Qwen3.5-4B",
}
_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
HINT = ("name a hub id (org/name), a local model folder (./path, holding config.json), or "
        f"one of {', '.join(ALIASES)}")
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


def is_local_path(name: str) -> bool:
    """Written as a path: ./x, ../x, /x, ~/x, or an existing folder."""
    if name.startswith(("./", "../", "/", "~")):
        return True
    try:
        return bool(name.strip()) and Path(name).is_dir()
    except OSError:  # a name too long for a path is no folder
        return False


def resolve_model(name: str, base: str | Path = ".") -> str:
    """The hub id or absolute folder a Hugging Face backend loads for ``name``; relative paths
    are read from ``base`` (the spec's folder). One-line error when it cannot be."""
    if name in ALIASES:
        return ALIASES[name]
    if is_local_path(name):
        folder = (Path(base) / Path(name).expanduser()).resolve()
        if not folder.is_dir():
            raise HscaleError(f"model {name!r}: no such folder {folder}", HINT)
        if not (folder / "config.json").is_file():
            raise HscaleError(f"model {name!r}: {folder} holds no config.json",
                              "give a Hugging Face model folder (config.json, weights, "
                              "tokenizer)")
        return str(folder)
    if _HUB_ID.fullmatch(name):
        return name
    close = difflib.get_close_matches(name, list(ALIASES), n=1)
    raise HscaleError(f"model {name!r} is neither a hub id, a local folder nor a known alias",
                      (f"did you mean {close[0]!r}? " if close else "") + HINT)


def check_spec_model(name: str, base: str | Path = ".") -> None:
    """A spec's ``model`` names something a backend can start from: an embedded preset (the
    local backend), a known alias, a hub id (org/name), or a model folder (relative to
    ``base``, the spec's folder). One line otherwise, with the nearest known name."""
    from hscale.train.spec._presets import PRESETS

    if name in PRESETS:
        return
    try:
        resolve_model(name, base)
    except HscaleError as exc:
        if is_local_path(name):
            raise
        close = difflib.get_close_matches(name, [*PRESETS, *ALIASES], n=1)
        raise HscaleError(f"model {name!r} is not an embedded preset, a hub id, a local "
                          "folder nor a known alias",
                          (f"did you mean {close[0]!r}? " if close else "")
                          + f"use one of {', '.join(PRESETS)} (the local backend), or "
                          + HINT) from exc


def read_config(folder: Path) -> dict:
    """The folder's config.json as a dict, or one HscaleError naming the file."""
    path = folder / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise HscaleError(f"{path}: not a readable JSON config ({reason(exc)})",
                          "write it with save_pretrained") from None
    if not isinstance(config, dict) or not isinstance(config.get("model_type", ""), str):
        raise HscaleError(f"{path}: not a model config (a JSON object with model_type)",
                          "write it with save_pretrained")
    return config
