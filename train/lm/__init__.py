"""Language models in the harness loop, for evaluation and serving (no training here).

``open_chat_model(name)`` reads a model name the way ``hscale evaluate`` and ``hscale serve``
take it: an OpenAI-compatible endpoint (``http://host:port/v1``), ``smollm2`` (the
SmolLM2-135M-Instruct that a package ships, imported once into a Hugging Face folder), a
Hugging Face model folder (holding config.json), an embedded checkpoint (a ``.pt`` file) or
an embedded preset (``hscale-tiny``). Heavy imports happen in the kind that needs them.
"""

from __future__ import annotations

from pathlib import Path

from hscale.errors import HscaleError
from hscale.train.lm.base import MAX_NEW_TOKENS, ChatModel

HINT = ("give an endpoint (http://HOST:PORT/v1), smollm2, a Hugging Face model folder "
        "(with config.json), an embedded checkpoint (.pt) or preset (hscale-tiny)")


def is_endpoint(name: str) -> bool:
    """Whether a model name is an OpenAI-compatible endpoint's URL."""
    return name.startswith(("http://", "https://"))


def served_model(name: str, served_name: str | None = None) -> ChatModel | str:
    """What ``hscale serve`` fronts for ``name``: an endpoint's URL as it is (proxy mode: its
    own tool calling), else the model opened here."""
    return name if is_endpoint(name) else open_chat_model(name, served_name)


def open_chat_model(name: str, served_name: str | None = None) -> ChatModel:
    """The chat model ``name`` names; ``served_name`` is an endpoint's model name."""
    if is_endpoint(name):
        from hscale.harness.http_policy import probe
        from hscale.train.lm.endpoint import EndpointChat

        probe(name)  # a dead endpoint is refused before anything is written
        return EndpointChat(name, served_name or "default")
    if name == "smollm2":
        from hscale.train.lm.hf import HFChat
        from hscale.train.lm.importer import import_smollm2

        return HFChat(import_smollm2())
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise HscaleError(f"model {name!r}: {path} holds no config.json", HINT)
        from hscale.train.lm.hf import HFChat

        return HFChat(path)
    if path.suffix == ".pt":
        if not path.is_file():
            raise HscaleError(f"model {name!r}: no such file", HINT)
        from hscale.train.lm.embedded import EmbeddedChat

        return EmbeddedChat.load(path)
    from hscale.train.embedded.presets import PRESETS

    if name in PRESETS:
        from hscale.train.lm.embedded import EmbeddedChat

        return EmbeddedChat.open(name)
    raise HscaleError(f"model {name!r}: not an endpoint, folder, checkpoint or preset", HINT)


__all__ = ["MAX_NEW_TOKENS", "ChatModel", "is_endpoint", "open_chat_model", "served_model"]
