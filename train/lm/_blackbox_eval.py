"""Black-box episodes of an evaluation: the model served in this process (hscale serve's
app, its batcher shared by every session) and each (harness, task) played by the real CLI
(hscale.harness._blackbox_run), several at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from hscale.harness import Served, run_blackbox
from hscale.harness.tasks import Task
from hscale.train.lm._base import ChatModel

CONCURRENCY = 4  # CLI sessions at once: each is a Node or Rust process, mostly waiting


def play(model: ChatModel | str, jobs: Sequence[tuple[str, Task]],
         done: Callable[[int, Any], None], *, greedy: Sequence[bool] | None = None,
         concurrency: int = CONCURRENCY, timeout_s: float = 300.0, max_turns: int = 30,
         max_batch: int = 32, max_new_tokens: int = 1024, served_name: str | None = None,
         sessions: Sequence[str] | None = None, record: str | Path | None = None) -> None:
    """Each (black-box harness, task) job's episode; ``done(index, episode)`` as each ends.
    ``model``: a ChatModel, or an endpoint's URL, fronted in proxy mode (its own tool
    calling, ``served_name`` its model). ``greedy`` (one flag a job) pins each episode's
    decoding; else each CLI's own asks. ``sessions`` names each job's requests in the
    ``record`` the server keeps."""
    from hscale.train.serving import serve

    if not jobs:
        return
    with serve(model, port=0, max_batch=max_batch, max_new_tokens=max_new_tokens,
               served_name=served_name, record=record) as server:
        service = server.service
        served = Served(server.url, service.completer.name, service.completer.context,
                        service.limit, service.requests)
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            futures = {pool.submit(run_blackbox, name, task, served, timeout_s=timeout_s,
                                   max_turns=max_turns,
                                   greedy=None if greedy is None else greedy[i],
                                   session=None if sessions is None else sessions[i]): i
                       for i, (name, task) in enumerate(jobs)}
            for future in as_completed(futures):
                done(futures[future], future.result())


def played(model: ChatModel, jobs: Sequence[tuple[str, Task]],
           greedy: Sequence[bool] | None = None, **kwargs: Any) -> list[Any]:
    """:func:`play`'s episodes, in the order of ``jobs``."""
    out: list[Any] = [None] * len(jobs)

    def done(i: int, episode: Any) -> None:
        out[i] = episode

    play(model, jobs, done, greedy=greedy, **kwargs)
    return out
