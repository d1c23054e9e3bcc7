"""A streamed request's text on its way out while it is decoded: from the engine's thread,
which offers the reply's settled text after every step, to the server's event loop, which
sends each new part as an SSE delta (hscale.train.serving._app)."""

from __future__ import annotations

import asyncio
import contextlib


class Live:
    """The channel of one streamed request. The engine calls ``begin`` once its prompt is
    prefilled, ``offer`` after each step and ``end`` when the reply (or its error) is set; the
    route awaits ``started`` then ``next`` until it gives None."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._given = ""  # the engine's side: the text put so far
        self._ended = False  # the route's side: the end was read
        self.prompt_tokens = 0  # the prompt's, once begun

    # --- the engine's thread -------------------------------------------------------------
    def begin(self, prompt_tokens: int) -> None:
        self.prompt_tokens = prompt_tokens
        self._put("")

    def offer(self, text: str) -> None:
        """The reply's text so far that is sure to stay (hscale.train.serving._tool_prompt's
        ``settled``); the part past what was given goes out."""
        if len(text) > len(self._given) and text.startswith(self._given):
            delta, self._given = text[len(self._given):], text
            self._put(delta)

    def end(self) -> None:
        self._put(None)

    def _put(self, item: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is listening
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    # --- the route's event loop ----------------------------------------------------------
    async def started(self) -> bool:
        """Whether decoding began; False when the request ended first (its reply or error
        is then its future's)."""
        first = await self._queue.get()
        self._ended = first is None
        return not self._ended

    async def next(self) -> str | None:
        """The text decoded since the last call, all that waits joined (so a slow reader gets
        fewer, longer deltas); None once the reply is done."""
        if self._ended:
            return None
        item = await self._queue.get()
        parts: list[str] = []
        while item is not None:
            parts.append(item)
            if self._queue.empty():
                return "".join(parts)
            item = self._queue.get_nowait()
        self._ended = True
        return "".join(parts) if parts else None
