"""A Hugging Face model folder as a ChatModel: its own chat template, transformers' ``generate``
with a KV cache, many conversations per forward pass.

Batching is where the speed is on a CPU: a 135M model decodes 32 rows in little more time
than one, so ``generate`` runs every conversation of a call together, in sub-batches of
``max_batch``, greedy and sampled rows together. The rows' common prefix (the harness's
system prompt, most of a first turn) is prefilled once per batch, not once per row; the rest
is padded after it. Sampling is plain: temperature 1, no top-k or top-p, whatever the
folder's generation_config says, so log-probs are the policy's own. Each sampled row draws
with a generator of its own (the Gumbel-max trick on top of greedy search), so with one seed
per conversation its tokens do not depend on what shares its batch.

A prompt that leaves no room for ``max_new_tokens`` in the model's context loses its oldest
messages after the system message, whole, until it fits (the harness's context policy is
meant to prevent this; cutting inside a message would break the template). If the system
message and the last message alone do not fit, that conversation gets an empty Generation
with no tokens (finish reason ``length``), as the embedded sampler ends such an episode, and
the rest of the batch runs.

``hscale serve`` decodes such a model step by step instead (``continuous``: requests join
and leave between steps, prompts reuse cached prefixes; hscale.train.serving._steps), picking
tokens as ``generate`` does. Attention is sdpa reading grouped key/value heads in place.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError, reason
from hscale.harness import Generation, Message
from hscale.train.lm._base import (
    MAX_NEW_TOKENS,
    chat_dicts,
    common_prefix,
    flags,
    gumbel,
    row_generator,
    row_seeds,
)
from hscale.train.spec import read_config

TURN_END = "<|im_end|>"  # ChatML's end of turn: a stop token wherever the vocabulary has it
MIN_SHARED = 16  # a common prompt prefix at least this long is prefilled once per batch
GROUPED = "hscale_sdpa"  # the attention _grouped_attention registers


def quiet_threads() -> None:
    """Before torch is first imported: idle OpenMP threads sleep instead of spinning, or two
    processes' threads on shared cores slow each other down several times over."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def renders_tools(template: Any) -> bool:
    """Whether a tokenizer's chat template (a string, or named templates) renders ``tools``
    (Qwen, Hermes, Llama 3.x...): such a model gets a request's tools through it."""
    return "tools" in (template if isinstance(template, str) else json.dumps(template or ""))


class HFChat:
    """A causal LM and its tokenizer, loaded from a local folder (never the network)."""

    def __init__(self, folder: str | Path, device: str | None = None,
                 dtype: Any = "float32", max_batch: int = 32) -> None:
        quiet_threads()
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
        from transformers.utils import logging as hf_logging

        folder = Path(folder).expanduser()
        if not (folder / "config.json").is_file():
            raise HscaleError(f"{folder}: not a Hugging Face model folder (no config.json)",
                              "give a folder written by save_pretrained or 'hscale model "
                              "import'")
        read_config(folder)
        self.folder, self.name, self.max_batch = folder, folder.resolve().name, max_batch
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
        try:
            self.tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        except Exception as exc:  # transformers' errors are of any type
            raise HscaleError(f"{folder}: its tokenizer does not load ({reason(exc)})",
                              "save the model's tokenizer there with save_pretrained") from None
        if self.tok.chat_template is None:
            raise HscaleError(f"{folder}: the tokenizer has no chat template",
                              "use an instruct model's folder")
        hf_logging.disable_progress_bar()  # hscale says its own progress, on a line
        try:
            self.model = AutoModelForCausalLM.from_pretrained(
                str(folder), local_files_only=True, dtype=dtype).to(self.device).eval()
        except Exception as exc:
            raise HscaleError(f"{folder}: the model does not load ({reason(exc)})",
                              "save the model there with save_pretrained, or import it "
                              "again") from None
        _grouped_attention(self.model)
        # a template that renders ``tools`` is given a request's tools and calls itself
        # (hscale.train.serving._engine); else hscale's tool prompt
        self.template_tools = renders_tools(self.tok.chat_template)
        self.eos = self._stop_ids()
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.eos[0]
        config = self.model.config
        limit = getattr(config, "max_position_embeddings", None) or self.tok.model_max_length
        self.context = int(min(limit, 1 << 20))
        # generate's settings are ours, not the folder's (no top-k, penalties or length caps)
        self.model.generation_config = GenerationConfig(
            eos_token_id=self.eos, pad_token_id=self.pad,
            bos_token_id=getattr(config, "bos_token_id", None))

    def _stop_ids(self) -> list[int]:
        found = self.model.generation_config.eos_token_id
        ids = list(found) if isinstance(found, list | tuple) else [found]
        ids.append(self.tok.eos_token_id)
        end = self.tok.convert_tokens_to_ids(TURN_END) if TURN_END in self.tok.get_vocab() \
            else None
        ids.append(end)
        out = list(dict.fromkeys(i for i in ids if i is not None))
        if not out:
            raise HscaleError(f"{self.folder}: no end-of-turn token", "set eos_token")
        return out

    @property
    def continuous(self) -> bool:
        """Whether ``hscale serve`` may decode it step by step, rows joining and leaving
        between steps (hscale.train.serving._steps): a decoder whose every layer attends to
        all earlier tokens, so its cache is plain keys and values a row."""
        config = self.model.config.get_text_config(decoder=True)
        kinds = getattr(config, "layer_types", None)  # else every layer slides, if any does
        full = set(kinds) == {"full_attention"} if kinds else \
            getattr(config, "sliding_window", None) is None
        return full and not self.model.config.is_encoder_decoder

    def batched(self, max_batch: int) -> HFChat:
        """The same loaded model, up to ``max_batch`` conversations per forward pass."""
        other = copy.copy(self)
        other.max_batch = max_batch
        return other

    def one_at_a_time(self) -> HFChat:
        """The same loaded model, one conversation per forward pass (for comparisons)."""
        return self.batched(1)

    # --- what the model sees ---------------------------------------------------------
    def render(self, messages: Sequence[Message]) -> str:
        return self.tok.apply_chat_template(chat_dicts(messages), tokenize=False,
                                            add_generation_prompt=True)

    def _ids(self, messages: Sequence[Message]) -> list[int]:
        return self.tok.encode(self.render(messages), add_special_tokens=False)

    def prompt_tokens(self, messages: Sequence[Message]) -> int:
        """How many tokens the prompt of ``messages`` is (before any dropped messages)."""
        return len(self._ids(messages))

    def token_text(self, token_id: int) -> str:
        return self.tok.decode([token_id])

    def prompt_ids(self, messages: Sequence[Message], budget: int) -> list[int] | None:
        """The prompt's ids within ``budget`` tokens: oldest messages after the system
        message dropped, whole, until it fits; None if it cannot."""
        ids = self._ids(messages)
        if len(ids) <= budget:
            return ids
        head = [m for m in messages[:1] if m.role == "system"]
        rest = list(messages[len(head):])
        while len(rest) > 1:
            rest.pop(0)
            try:
                ids = self._ids([*head, *rest])
            except Exception:  # a template that wants another turn order: drop one more
                continue
            if len(ids) <= budget:
                return ids
        return None

    def template_ids(self, chat: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
                     ) -> list[int]:
        """The prompt of a chat in the template's own dicts (assistant ``tool_calls``,
        ``tool`` turns) with ``tools`` (OpenAI function specs), rendered by the template."""
        text = self.tok.apply_chat_template(list(chat), tools=list(tools) or None,
                                            tokenize=False, add_generation_prompt=True)
        return self.tok.encode(text, add_special_tokens=False)

    # --- generation ------------------------------------------------------------------
    def generate(self, conversations: Sequence[Sequence[Message]],
                 greedy: bool | Sequence[bool] = True, max_new_tokens: int = MAX_NEW_TOKENS,
                 seed: int | Sequence[int] | None = None) -> list[Generation]:
        budget = self._budget(max_new_tokens)
        return self.generate_ids([self.prompt_ids(c, budget) for c in conversations], greedy,
                                 max_new_tokens, seed)

    def _budget(self, max_new_tokens: int) -> int:
        if max_new_tokens < 1:
            raise HscaleError(f"max_new_tokens is {max_new_tokens}", "ask for at least 1")
        budget = self.context - max_new_tokens
        if budget < 1:
            raise HscaleError(f"max_new_tokens {max_new_tokens} fills {self.name}'s context "
                              f"of {self.context} tokens", "ask for fewer new tokens")
        return budget

    def generate_ids(self, prompts: Sequence[list[int] | None],
                     greedy: bool | Sequence[bool] = True, max_new_tokens: int = MAX_NEW_TOKENS,
                     seed: int | Sequence[int] | None = None) -> list[Generation]:
        """A turn after each prompt given as ids; a prompt that is None, or longer than
        the context leaves room for, gets an empty Generation."""
        budget = self._budget(max_new_tokens)
        argmax = flags(greedy, len(prompts))
        seeds = row_seeds(seed, len(prompts))
        prompts = [p if p is not None and len(p) <= budget else None for p in prompts]
        out = [Generation("", (), ())] * len(prompts)  # kept where a prompt cannot fit
        rows = sorted((i for i, p in enumerate(prompts) if p is not None),
                      key=lambda i: len(prompts[i]))
        for start in range(0, len(rows), self.max_batch):
            chunk = rows[start:start + self.max_batch]
            draws = [None if argmax[i] else row_generator(None if seeds is None else seeds[i])
                     for i in chunk]
            for i, gen in zip(chunk, self._run([prompts[i] for i in chunk], draws,
                                               max_new_tokens), strict=True):
                out[i] = gen
        return out

    def _run(self, prompts: list[list[int]], draws: list[Any], max_new: int
             ) -> list[Generation]:
        """One batch through ``generate``; each row's ids up to its end token. A row with a
        generator in ``draws`` samples (Gumbel-max: the argmax of its log-probs plus noise of
        its own, a draw from the softmax that no other row's presence changes), a row with
        None is greedy. The prompts' common prefix (a harness's system prompt) is prefilled
        once and shared; the rest is padded in the middle: ``prefix, pads, own tokens``,
        positions counting real tokens."""
        import torch

        shared = common_prefix(prompts) if len(prompts) > 1 else 0
        shared = shared if shared >= MIN_SHARED else 0
        tails = [p[shared:] for p in prompts]
        width = shared + max(len(t) for t in tails)
        ids = torch.tensor([p[:shared] + [self.pad] * (width - len(p)) + t
                            for p, t in zip(prompts, tails, strict=True)], device=self.device)
        mask = torch.tensor([[1] * shared + [0] * (width - len(p)) + [1] * len(t)
                             for p, t in zip(prompts, tails, strict=True)], device=self.device)
        recorder = _LogProbs()
        devices = [] if self.device.type != "cuda" else [
            torch.cuda.current_device() if self.device.index is None else self.device.index]
        with torch.inference_mode(), torch.random.fork_rng(devices, device_type="cuda"):
            cache = self._prefill(prompts[0][:shared], len(prompts)) if shared else None
            sequences = self.model.generate(
                input_ids=ids, attention_mask=mask, max_new_tokens=max_new, use_cache=True,
                past_key_values=cache, logits_processor=_processors(recorder, draws),
                do_sample=False)
        new = sequences[:, width:]
        logprobs = recorder.finish(new).tolist()
        out = []
        stops = set(self.eos)
        for row, lps, prompt in zip(new.tolist(), logprobs, prompts, strict=True):
            end = next((k for k, t in enumerate(row) if t in stops), None)
            kept = row if end is None else row[:end]
            text = self.tok.decode(kept, skip_special_tokens=True)
            # the end token's log-prob is kept too when the model chose to stop
            out.append(Generation(text, tuple(kept),
                                  tuple(lps[:len(kept) + (end is not None)]), tuple(prompt)))
        return out

    def _prefill(self, prefix: list[int], rows: int) -> Any:
        """The KV cache of ``prefix``, computed once and repeated for ``rows`` rows."""
        import torch
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        self.model(input_ids=torch.tensor([prefix], device=self.device), past_key_values=cache,
                   use_cache=True, logits_to_keep=1)
        cache.batch_repeat_interleave(rows)
        return cache


def _grouped_attention(model: Any) -> None:
    """Give an sdpa model attention that reads grouped key/value heads in place: with a mask
    (any padded batch) transformers' sdpa path repeats every key and value once per query
    head first, on a CPU many times the attention's own cost; the kernel's ``enable_gqa``
    gives the same numbers without the copies."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    if getattr(model.config, "_attn_implementation", None) != "sdpa":
        return
    AttentionInterface.register(GROUPED, _grouped_sdpa)
    AttentionMaskInterface.register(GROUPED, sdpa_mask)
    with contextlib.suppress(ValueError, NotImplementedError):  # it keeps its own attention
        model.set_attn_implementation(GROUPED)


def _grouped_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                  dropout: float = 0.0, scaling: float | None = None,
                  is_causal: bool | None = None, **kwargs: Any) -> tuple[Any, None]:
    """transformers' sdpa attention, grouped heads passed as they are (``enable_gqa``)."""
    import torch

    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=bool(query.shape[2] > 1 and attention_mask is None and causal),
        enable_gqa=getattr(module, "num_key_value_groups", 1) > 1)
    return out.transpose(1, 2).contiguous(), None


class _LogProbs:
    """Each generated token's log-probability under the distribution it was drawn from,
    recorded one step late (a logits processor sees the chosen token at the next step), so
    only one step's distribution is held at a time, not batch x steps x vocabulary."""

    def __init__(self) -> None:
        self.prev: Any = None
        self.steps: list[Any] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self.prev is not None:
            self.steps.append(self.prev.gather(1, input_ids[:, -1:])[:, 0])
        self.prev = torch.log_softmax(scores.float(), dim=-1)
        return scores

    def finish(self, new: Any) -> Any:
        import torch

        if self.prev is not None and len(self.steps) < new.shape[1]:
            self.steps.append(self.prev.gather(1, new[:, len(self.steps):][:, :1])[:, 0])
        self.prev = None
        return torch.stack(self.steps, 1).cpu() if self.steps else new.new_zeros(
            (new.shape[0], 0), dtype=torch.float32).cpu()


def _processors(recorder: _LogProbs, draws: list[Any]) -> Any:
    """Record each step's log-probs, then add each sampling row's Gumbel noise (temperature 1,
    no top-k or top-p: the policy's own distribution)."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList

    class Record(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            return recorder(input_ids, scores)

    class Gumbel(LogitsProcessor):
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            scores = torch.log_softmax(scores.float(), dim=-1)
            for i, generator in enumerate(draws):
                if generator is not None:
                    scores[i] += gumbel(generator, scores.shape[1], scores.device)
            return scores

    found = [Record()]
    if any(d is not None for d in draws):
        found.append(Gumbel())
    return LogitsProcessorList(found)


__all__ = ["HFChat", "quiet_threads"]
