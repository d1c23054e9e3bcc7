"""Token budgets for a veRL run, measured from the harnesses' own episodes.

veRL needs a prompt length (the first model call's context), a response length (the rest of
one trained sequence: the model's turns and the harness's observations) and, for one
optimizer update a step, how many trained sequences (context segments) a rollout can yield.
All three depend on the harness: a verbose system prompt, JSON observations or a full history
make sequences longer; window and compact context make more, shorter ones. So they are
measured by rendering oracle episodes of the built-in world under every harness the
experiment trains or evaluates, with the model's own tokenizer and chat template when this
machine has it, else estimated at 3 characters a token (said so in the notes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from hscale.harness import EPISODE_TURNS
from hscale.train.spec import is_local_path, resolve_model

TASKS_PER_HARNESS = 6
HARNESS_SAMPLE = 40  # at most this many harnesses are rendered (a fixed, spread sample)
MARGIN = 1.25  # budgets leave a quarter above the longest rendered episode
ROUND = 256
# Oracle episodes are the shortest that solve a task; a real model writes longer turns, so
# budgets never go below these (veRL's own defaults, 512 each, cut multi-turn episodes).
PROMPT_FLOOR, RESPONSE_FLOOR = 1024, 2048
CHARS_PER_TOKEN = 3  # the estimate without a tokenizer (conservative for BPE vocabularies)


@dataclass(frozen=True)
class TokenBudget:
    """The longest prompt, response and segment count rendered, and where they came from."""

    prompt: int
    response: int
    segments: int
    episodes: int
    tokenizer: str  # the model's, or "estimate"

    def lengths(self) -> tuple[int, int]:
        """(prompt_length, response_length): the margin, rounded up, at least the floors."""
        return (max(PROMPT_FLOOR, _round(self.prompt * MARGIN)),
                max(RESPONSE_FLOOR, _round(self.response * MARGIN)))


def _round(value: float) -> int:
    return max(ROUND, int(math.ceil(value / ROUND)) * ROUND)


def measure(model: str, labels: Sequence[str], benchmark: Any = None, space: Any = None
            ) -> TokenBudget:
    """Render oracle episodes under ``labels`` (a spread sample of them) and measure them, on
    the training tasks of ``benchmark`` (a manifest's record; default the builtin world's)
    that carry an oracle's solution."""
    return _measure(model, tuple(sorted(set(labels))), benchmark, space)


@cache
def _measure(model: str, labels: tuple[str, ...], benchmark: Any, space: Any) -> TokenBudget:
    from hscale.harness import BuiltinWorld, Oracle, benchmark_of, harness_named, run_episode

    count = _counter(model)
    step = max(1, math.ceil(len(labels) / HARNESS_SAMPLE))
    source = BuiltinWorld() if benchmark is None else benchmark_of(benchmark)
    available = source.available("train")
    n_tasks = TASKS_PER_HARNESS if available is None else min(TASKS_PER_HARNESS, available)
    tasks = [t for t in source.tasks(n_tasks, 0 if benchmark is None else benchmark.seed)
             if t.solution]
    prompt = response = segments = episodes = 0
    for label in labels[::step]:
        harness = harness_named(label, space)
        for task in tasks:
            episode = run_episode(Oracle(task, harness), harness, task, max_turns=EPISODE_TURNS,
                                  score=False)
            episodes += 1
            segments = max(segments, len(episode.segments))
            for segment in episode.segments:
                shown = [{"role": m.role, "content": m.content}
                         for m in segment.messages(episode.messages)]
                trained = segment.trainable(episode.messages)
                first = trained.index(True) if True in trained else len(shown)
                head = count(shown[:first], True)
                prompt = max(prompt, head)
                response = max(response, count(shown, False) - head)
    return TokenBudget(prompt, response, max(segments, 1), episodes,
                  getattr(count, "source", "estimate"))


def _counter(model: str) -> Any:
    """Tokens of a message list under the model's chat template, or the estimate."""
    tokenizer = _tokenizer(model)
    if tokenizer is None:
        def estimate(messages: list[dict[str, str]], prompt: bool) -> int:
            text = sum(len(m["content"]) + len(m["role"]) + 8 for m in messages)
            return math.ceil(text / CHARS_PER_TOKEN)

        return estimate
    exact = exact_counter(tokenizer)
    exact.source = model  # type: ignore[attr-defined]
    return exact


def exact_counter(tokenizer: Any) -> Any:
    """Tokens of a message list (role/content dicts) under ``tokenizer``'s chat template,
    with the generation prompt when ``prompt``."""
    def exact(messages: list[dict[str, str]], prompt: bool) -> int:
        if not messages:
            return 0
        text = tokenizer.apply_chat_template(messages, tokenize=False,
                                             add_generation_prompt=prompt)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return exact


def _tokenizer(model: str) -> Any | None:
    """The model's tokenizer when this machine has it (a local folder or the HF cache)."""
    try:
        path = resolve_model(model)
    except Exception:  # an embedded preset or a bad name: no HF tokenizer to measure with
        return None
    if not _has_tokenizer(path):  # seconds of importing transformers to learn that
        return None
    try:
        from transformers import AutoTokenizer

        kwargs = {} if is_local_path(path) else {"local_files_only": True}
        tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
    except Exception:  # not downloaded here, or no chat template: estimate instead
        return None
    return tokenizer if getattr(tokenizer, "chat_template", None) else None


def _has_tokenizer(path: str) -> bool:
    """Whether a model folder, or the HF cache for a hub name, holds tokenizer files."""
    names = ("tokenizer_config.json", "tokenizer.json")
    if is_local_path(path):
        return any((Path(path) / name).is_file() for name in names)
    from huggingface_hub import try_to_load_from_cache

    return any(isinstance(try_to_load_from_cache(path, name), str) for name in names)


def verl_record(settings: Any, model: str, labels: Sequence[str], benchmark: Any = None,
                space: Any = None) -> tuple[dict[str, Any], list[str]]:
    """The manifest's ``verl`` record from a spec's settings (``hscale.train.spec.VerlSettings``):
    budgets not given are measured; given ones shorter than a rendered episode are warned
    about (the notes, one line each, with the numbers)."""
    budget = measure(model, labels, benchmark, space)
    prompt, response = budget.lengths()
    source = ("by the model's tokenizer" if budget.tokenizer != "estimate"
              else f"estimated at {CHARS_PER_TOKEN} characters a token, no tokenizer here")
    notes = []
    for name, given, longest in (("prompt_length", settings.prompt_length, budget.prompt),
                                 ("response_length", settings.response_length,
                                  budget.response)):
        if given is not None and given < longest:
            notes.append(f"verl.{name}={given} is shorter than the longest of {budget.episodes} "
                         f"rendered oracle episodes ({longest} tokens, {source}): such "
                         "episodes will be cut")
    record = {**settings.model_dump(),
              "prompt_length": settings.prompt_length or prompt,
              "response_length": settings.response_length or response,
              "max_segments": min(EPISODE_TURNS, math.ceil(budget.segments * MARGIN))}
    return record, notes
