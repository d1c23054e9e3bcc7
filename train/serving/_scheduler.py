"""Continuous batching for ``hscale serve``'s local engine, for a model that decodes step by
step (an HF model, ``LocalCompleter.continuous``): the batcher of hscale.train.serving._engine
answers a whole batch with one ``generate``, so a request arriving mid-batch waited for the
batch's longest reply and rows that stopped early idled; here requests join and leave between
decoding steps.
"""

from __future__ import annotations

import queue
import random
import threading
from collections import deque
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from typing import Any

from hscale.errors import HscaleError
from hscale.train.lm import row_generator
from hscale.train.serving._chat import BadRequest, Reply, Request
from hscale.train.serving._live import Live
from hscale.train.serving._prefix import CACHE_TOKENS
from hscale.train.serving._steps import Row, Stepper
from hscale.train.serving._tool_prompt import settled


@dataclass(eq=False)
class _Job:
    request: Request
    future: Future
    live: Live | None = None
    prompt_tokens: int = 0


class Scheduler:
    """One thread that owns the model. Between decoding steps it admits the requests waiting,
    up to ``max_batch`` rows (each prefilled past the prefix the cache holds, its first token
    picked, so its reply starts at once) and lets the rows that ended go (their futures
    answered, their slots free). A streamed request (``submit`` with a Live) gets its text
    after every step. The Batcher's interface: ``submit``, ``close``, ``batches``."""

    streams = True  # submit takes a Live

    def __init__(self, completer: Any, max_batch: int = 32,
                 cache_tokens: int = CACHE_TOKENS) -> None:
        self.completer, self.max_batch = completer, max_batch
        self.stepper = Stepper(completer.model, cache_tokens)
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="hscale-scheduler",
                                        daemon=True)
        self._thread.start()

    @property
    def batches(self) -> list[int]:
        """Rows decoded at each recent step (for tests and benchmarks)."""
        return [rows for rows, _ in self.stepper.steps]

    def submit(self, request: Request, live: Live | None = None) -> Future:
        future: Future = Future()
        self._queue.put(_Job(request, future, live))
        return future

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        waiting: deque[_Job] = deque()
        while self._take(waiting):
            while waiting and len(self.stepper.rows) < self.max_batch:
                self._admit(waiting.popleft())
            for row in [r for r in self.stepper.rows if r.owner.future.cancelled()]:
                self.stepper.leave(row)  # its client is gone
                self._settle(row.owner, None)
            if self.stepper.rows:
                self._step()
        stopped = HscaleError("the server stopped before this request was answered")
        for job in [*waiting, *(r.owner for r in self.stepper.drop_all())]:
            self._settle(job, stopped)

    def _take(self, waiting: deque[_Job]) -> bool:
        """What was submitted, into ``waiting``: blocking only when there is nothing else to
        do. False once closed."""
        block = not waiting and not self.stepper.rows
        while True:
            try:
                item = self._queue.get(block=block)
            except queue.Empty:
                return True
            if item is None:
                return False
            waiting.append(item)
            block = False

    def _admit(self, job: _Job) -> None:
        if job.future.cancelled():
            self._settle(job, None)
            return
        request = job.request
        try:
            prepared = self.completer.prepare(request)
            if isinstance(prepared, BadRequest):
                raise prepared
            ids, job.prompt_tokens, limit = prepared
            seed = request.seed if request.seed is not None else random.getrandbits(62)
            draw = None if request.temperature == 0 else row_generator(seed)
            row = self.stepper.join(Row(ids, limit, draw, job))
        except Exception as exc:  # noqa: BLE001 -- that request's own error (400 or 500)
            self._settle(job, exc)
            return
        if job.live is not None:
            job.live.begin(job.prompt_tokens)
        self._progress(row)

    def _step(self) -> None:
        rows = list(self.stepper.rows)
        try:
            self.stepper.step()
        except Exception as exc:  # noqa: BLE001 -- every row of the step hears of it
            for row in self.stepper.drop_all():
                self._settle(row.owner, exc)
            return
        for row in rows:
            self._progress(row)

    def _progress(self, row: Row) -> None:
        """A streamed row's new text goes out; an ended row's reply is answered."""
        job: _Job = row.owner
        if job.live is not None:
            text = self.stepper.chat.tok.decode(row.ids, skip_special_tokens=True)
            job.live.offer(settled(text.rstrip("\ufffd"), job.request.tools,
                                   job.request.tool_choice))
        if row.done:
            try:
                reply = self.completer.reply(job.request, job.prompt_tokens,
                                             self.stepper.generation(row))
            except Exception as exc:  # noqa: BLE001
                self._settle(job, exc)
                return
            self._settle(job, reply)

    @staticmethod
    def _settle(job: _Job, result: Reply | BaseException | None) -> None:
        """The end of a request: its stream's, then its future's (None: it was cancelled)."""
        if job.live is not None:
            job.live.end()
        try:
            if isinstance(result, BaseException):
                job.future.set_exception(result)
            elif result is not None:
                job.future.set_result(result)
        except InvalidStateError:  # cancelled meanwhile: nobody waits for it
            pass
