"""Language models in the harness loop, for evaluation and serving (no training here)."""

from __future__ import annotations

from pathlib import Path

from hscale.errors import HscaleError
from hscale.train.lm._base import ChatModel
from hscale.train.spec import is_endpoint

HINT = ("give an endpoint (http://HOST:PORT/v1), smollm2, a Hugging Face model folder "
        "(with config.json), an embedded checkpoint (.pt) or preset (hscale-tiny)")


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
    from hscale.train.spec import PRESETS

    if name in PRESETS:
        from hscale.train.lm._embedded import EmbeddedChat

        return EmbeddedChat.open(name)
    raise HscaleError(f"model {name!r}: not an endpoint, folder, checkpoint or preset", HINT)
