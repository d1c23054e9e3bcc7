"""Whether a benchmark's prompts fit the model's context, checked at planning.

A task whose first model view (system prompt, task message) is longer than the model's
context ends its episode before the first turn and scores 0, however good the policy; a
prompt made mostly of words the embedded policy's closed vocabulary lacks reads as
``<unk>``. Both look like a weak policy in the results, so planning counts them and warns
with the numbers. The embedded presets are measured exactly (their word tokenizer, their
positions); a Hugging Face model with its tokenizer and config where this machine has them;
anything else (an endpoint, a model not downloaded) is not measured.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError

WARN_UNKNOWN = 0.05  # share of <unk> prompt tokens above which the embedded policy is warned


@dataclass(frozen=True)
class Fit:
    """Prompts measured, how many are longer than the context, the longest, the context, and
    (embedded policy) the share of prompt tokens outside the vocabulary."""

    tasks: int
    too_long: int
    longest: int
    context: int
    unknown: float | None = None

    def notes(self, what: str) -> list[str]:
        out = []
        if self.too_long:
            out.append(f"{what}: {self.too_long} of {self.tasks} prompts do not fit the "
                       f"model's {self.context}-token context (the longest {self.longest} "
                       "tokens): those episodes end before a turn and score 0; use a model "
                       "with a longer context, or leave those tasks out")
        if self.unknown is not None and self.unknown > WARN_UNKNOWN:
            out.append(f"{what}: {100 * self.unknown:.0f}% of the prompts' tokens are outside "
                       "the embedded policy's vocabulary (it reads them as <unk>); it was "
                       "made for the builtin world: use a Hugging Face model for these tasks")
        return out


def context_fit(model: str, tasks: Sequence[Any], harness: Any) -> Fit | None:
    """``tasks``' first views under ``harness`` (a Harness) measured against ``model``
    (None: no way to measure this model here)."""
    measured = _measurer(model)
    if measured is None or not tasks:
        return None
    count, context, unk = measured
    template = harness
    lengths, unknown, total = [], 0, 0
    for task in tasks:
        view = template.fresh().start(task.user_query, task.tools)
        n, bad = count(view)
        lengths.append(n)
        unknown, total = unknown + bad, total + n
    return Fit(len(lengths), sum(n > context for n in lengths), max(lengths), context,
               unknown / total if unk and total else None)


def _measurer(model: str) -> tuple[Any, int, bool] | None:
    """(count(messages) -> (tokens, unknown tokens), context, counts unknown) for ``model``."""
    from hscale.train.spec import PRESETS

    if model in PRESETS:
        from hscale.harness import tokenizer

        tok = tokenizer()

        def embedded(messages: list) -> tuple[int, int]:
            ids = tok.encode_chat(messages)
            return len(ids), sum(i == tok.unk for i in ids)

        return embedded, int(PRESETS[model]["model"]["max_positions"]), True
    return _hf_measurer(model)


def _hf_measurer(model: str) -> tuple[Any, int, bool] | None:
    from hscale.train.planning._token_budget import _tokenizer, exact_counter

    tokenizer = _tokenizer(model)
    if tokenizer is None:
        return None
    stated = getattr(tokenizer, "model_max_length", None)  # a huge number when unset
    context = _config_context(model) or (stated if isinstance(stated, int) and
                                         stated < 1 << 24 else None)
    if context is None:
        return None
    count = exact_counter(tokenizer)

    def hf(messages: list) -> tuple[int, int]:
        return count([{"role": m.role, "content": m.content} for m in messages], True), 0

    return hf, int(context), False


def _config_context(model: str) -> int | None:
    """max_position_embeddings (or n_positions) from the model folder's config.json."""
    from hscale.train.spec import read_config, resolve_model

    try:
        config = read_config(Path(resolve_model(model)))
    except HscaleError:  # not a local folder, or no config: nothing to measure against
        return None
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = config.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return None


__all__ = ["Fit", "context_fit"]
