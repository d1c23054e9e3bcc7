"""``hscale serve MODEL``: a model behind the APIs agent harnesses speak, until Ctrl-C.

OpenAI chat completions, the Responses API and Anthropic messages (hscale.train.serving),
so Claude Code, Codex CLI, OpenClaw or any agent framework can drive a model hscale trained
or evaluates, with every request optionally recorded (hscale.train.lm._record). Given an
endpoint URL it fronts that server instead (proxy mode).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from hscale.errors import HscaleError


def serve_cmd(
    model: Annotated[str, typer.Argument(help="An embedded preset (hscale-tiny) or checkpoint "
                                              "(.pt), a Hugging Face folder, smollm2, or an "
                                              "OpenAI-compatible endpoint URL to front.")],
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port (0 picks a free one).",
                                      min=0, max=65535)] = 8000,
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    record: Annotated[Path | None, typer.Option("--record", help="Folder for a parquet record "
                                                "of every request.")] = None,
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="Bind a non-loopback "
                                               "host (the endpoint has no authentication).")
                            ] = False,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", help="A name clients reach this server by, besides localhost and "
                             "IP addresses (with --allow-remote; repeatable): a request whose "
                             "Host names anything else is refused (DNS rebinding).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log every request.")
                       ] = False,
    max_batch: Annotated[int, typer.Option("--max-batch", min=1, max=1024,
                                           help="Rows decoded together: requests of concurrent "
                                                "sessions join the batch between decode "
                                                "steps, up to this many.")] = 32,
    served_name: Annotated[str | None, typer.Option(
        help="Proxy mode: the upstream's model name (default: its first).")] = None,
    max_new_tokens: Annotated[int, typer.Option(
        "--max-new-tokens", min=1, max=1 << 16,
        help="Tokens a reply may take, whatever a request asks (and at most half the "
             "model's context).")] = 1024,
) -> None:
    """Serve a model at OpenAI- and Anthropic-compatible endpoints, recording every request.

    Serve MODEL at /v1/chat/completions, /v1/responses and /v1/messages until Ctrl-C or
    SIGTERM; an endpoint URL as MODEL is fronted with the same three faces (proxy mode).

    With --record, each request's row is on disk before its reply is sent: a kill loses none
    (read them with hscale.train.lm.read_record)."""
    from hscale.train.lm import is_endpoint
    from hscale.train.serving import serve

    chat = model if is_endpoint(model) else open_model(model)
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())  # as Ctrl-C: a clean stop
    server = serve(chat, host, port, record=record, allow_remote=allow_remote,
                   verbose=verbose, max_batch=max_batch, served_name=served_name,
                   max_new_tokens=max_new_tokens, allow_hosts=tuple(allow_host or ()))
    try:  # from the moment it serves: whenever the stop comes, the record is compacted
        print(f"serving {server.service.completer.name} at {server.url}"
              + (f" (recording to {record})" if record is not None else ""), flush=True)
        while not stop.wait(1.0):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.shutdown()
    print("stopped", flush=True)


def open_model(name: str):
    """The ChatModel ``name`` means (``hscale.train.lm.open_chat_model``); a missing package is one
    line with its fix."""
    from hscale.train.lm import open_chat_model

    try:
        return open_chat_model(name)
    except ModuleNotFoundError as exc:
        raise HscaleError(f"model {name!r} needs the package {exc.name}, not installed here",
                          f"pip install {exc.name} (or run 'hscale doctor')") from None
