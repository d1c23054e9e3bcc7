"""Black-box episodes of an evaluation: the model served in this process (hscale serve's
app, its batcher shared by every session) and each (harness, task) played by the real CLI
(hscale.harness._blackbox_run), several at a time."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.harness import Served, run_blackbox
from hscale.harness.tasks import Task
from hscale.train.lm import ChatModel

CONCURRENCY = 4  # CLI sessions at once: each is a Node or Rust process, mostly waiting


def play_clis(model: ChatModel | str, jobs: Sequence[tuple[str, Task]],
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
                        service.limit, service.requests, service.calls)
        failures = CliFailures(jobs)
        with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
            futures = {pool.submit(run_blackbox, name, task, served, timeout_s=timeout_s,
                                   max_turns=max_turns,
                                   greedy=None if greedy is None else greedy[i],
                                   session=None if sessions is None else sessions[i]): i
                       for i, (name, task) in enumerate(jobs)}
            try:
                for future in as_completed(futures):
                    episode = future.result()
                    done(futures[future], episode)
                    failures.add(jobs[futures[future]][0], episode.error)
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)  # what has not begun never will
                raise


def check_context(model: Any, harnesses: Sequence[str]) -> None:
    """Refuse, before any episode, a black-box harness whose first request alone is longer
    than the model's context: each of its calls would be refused, so its episodes would
    measure nothing (an endpoint's context is unknown here, and the embedded policy reads
    its own compact view: nothing to check)."""
    from hscale.harness import HARNESSES

    context = getattr(model, "context", None)
    if getattr(model, "own_syntax", False):  # the embedded policy reads its own view of it
        return
    for name in sorted(set(harnesses)) if context else ():
        need = HARNESSES.get(name).prompt_tokens
        if need > context:
            raise HscaleError(f"{name}'s first request is about {need:,} tokens (its prompt and "
                              f"tools in SmolLM2's tokens), more than {model.name}'s context "
                              f"of {context:,}: every episode through it would be refused",
                              f"leave {name} out for this model, or use one with a context "
                              f"of at least {need + 1024:,} tokens")


FIRST = 4  # a CLI that fails its first this many episodes, none run, is broken


class CliFailures:
    """Each harness's episodes whose CLI failed (hscale.harness.cli_failed): a harness whose
    first episodes all failed, or whose every episode did, stops the work with its CLI's
    own words, where it would otherwise pass for an agent that solves nothing."""

    def __init__(self, jobs: Sequence[tuple[str, Task]]) -> None:
        self.planned = {name: sum(1 for n, _ in jobs if n == name) for name, _ in jobs}
        self.failed: dict[str, list[str]] = {name: [] for name in self.planned}
        self.ran: dict[str, int] = dict.fromkeys(self.planned, 0)

    def add(self, harness: str, error: str) -> None:
        from hscale.harness import cli_failed

        if not cli_failed(error):
            self.ran[harness] += 1
            return
        failed = self.failed[harness]
        failed.append(error)
        if not self.ran[harness] and len(failed) >= min(FIRST, self.planned[harness]):
            common = max(set(failed), key=failed.count).removeprefix("cli: ")
            raise HscaleError(f"{harness} failed in each of its first {len(failed)} "
                              f"episodes, so nothing was measured: {common}",
                              f"run the CLI by hand to see why (hscale harness install "
                              f"{harness} reinstalls it)")


def played(model: ChatModel, jobs: Sequence[tuple[str, Task]],
           greedy: Sequence[bool] | None = None, **kwargs: Any) -> list[Any]:
    """:func:`play`'s episodes, in the order of ``jobs``."""
    out: list[Any] = [None] * len(jobs)

    def done(i: int, episode: Any) -> None:
        out[i] = episode

    play_clis(model, jobs, done, greedy=greedy, **kwargs)
    return out
