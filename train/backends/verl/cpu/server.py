"""The model server behind the ``hscale_hf`` rollout (hscale.train.backends.verl.cpu.rollout): a
Hugging Face causal LM (``transformers``, float32 on the CPU) in a Ray actor, answering
veRL's token-in, token-out ``generate`` with a ``TokenOutput`` (token ids, their log-probs,
a stop reason), as veRL's ``LLMServerClient`` and agent loops expect of vLLM's server.

Requests run one at a time. A log-prob is the token's under the distribution it was sampled
from before top-p/top-k truncation (``log_softmax(logits / temperature)``; raw logits when
greedy), which is what veRL's actor recomputes as ``old_log_prob``.

This module imports neither veRL nor torch at import time: a fresh Ray worker unpickles
:class:`HFServer` from here, and veRL's import of the CPU plugin must not find this module
half-imported.
"""

from __future__ import annotations

import asyncio
import math
import threading
from typing import Any

from hscale.train.backends.verl.cpu import ROLLOUT


class HFServer:
    """A Hugging Face causal LM answering veRL's token-in, token-out ``generate``; the control
    calls veRL makes on a rollout server (sleep, wake_up, caches, aborts, profiling) are
    accepted and do nothing: the model stays in memory and there is no KV cache to keep."""

    def __init__(self, config: Any, model_config: Any, replica_rank: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM
        from verl.utils.config import omega_conf_to_dataclass

        self.config = omega_conf_to_dataclass(config)
        self.model_config = model_config
        path = _model_path(model_config)
        self.replica_rank = replica_rank
        self.global_steps: int | None = None
        self.model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32)
        self.model.eval()
        self.stop_ids = _stop_ids(self.model, path)
        self._lock = threading.Lock()  # one forward pass at a time
        self._aborted: set[str] = set()
        self._abort_all = False
        self.requests = 0  # served generate calls (tests read it)

    # --- generation -----------------------------------------------------------------------
    async def generate(self, prompt_ids: list[int], sampling_params: dict[str, Any],
                       request_id: str, image_data: Any = None, video_data: Any = None,
                       **_: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        if image_data is not None or video_data is not None:
            raise ValueError(f"{ROLLOUT}: text only (no image or video inputs)")
        params = dict(sampling_params)
        prompt = [int(t) for t in prompt_ids]
        room = int(self.config.max_model_len or (self.config.prompt_length
                                                 + self.config.response_length)) - len(prompt)
        if room < 1:
            raise ValueError(f"prompt of {len(prompt)} tokens leaves no room to generate "
                             f"within max_model_len={self.config.max_model_len}")
        wanted = params.pop("max_tokens", params.pop("max_new_tokens", None))
        if wanted is None:
            wanted = min(self.config.response_length, self.config.prompt_length
                         + self.config.response_length - len(prompt))
        limit = max(1, min(int(wanted), room))
        self.requests += 1
        tokens, logprobs, stop = await asyncio.to_thread(self._sample, prompt, params, limit,
                                                         request_id)
        return TokenOutput(token_ids=tokens,
                           log_probs=logprobs if params.get("logprobs") else None,
                           stop_reason=stop, num_preempted=0,
                           extra_fields={"global_steps": self.global_steps})

    def _sample(self, prompt: list[int], params: dict[str, Any], limit: int, request_id: str
                ) -> tuple[list[int], list[float], str]:
        import torch

        temperature = float(params.get("temperature", 1.0) or 0.0)
        top_p, top_k = float(params.get("top_p", 1.0) or 1.0), int(params.get("top_k", -1) or -1)
        ignore_eos = bool(params.get("ignore_eos", False))
        generator = None
        if params.get("seed") is not None:
            generator = torch.Generator().manual_seed(int(params["seed"]))
        tokens: list[int] = []
        logprobs: list[float] = []
        with self._lock, torch.inference_mode():
            out = self.model(input_ids=torch.tensor([prompt]), use_cache=True)
            for _ in range(limit):
                if self._abort_all or request_id in self._aborted:
                    self._aborted.discard(request_id)
                    return tokens, logprobs, "aborted"
                logits = out.logits[0, -1].float()
                token, logprob = _pick(logits, temperature, top_p, top_k, generator)
                tokens.append(token)
                logprobs.append(logprob)
                if token in self.stop_ids and not ignore_eos:
                    break
                out = self.model(input_ids=torch.tensor([[token]]),
                                 past_key_values=out.past_key_values, use_cache=True)
        return tokens, logprobs, "completed"

    # --- weights --------------------------------------------------------------------------
    def load_weights(self, named: list[tuple[str, Any]], global_steps: int | None = None
                     ) -> int:
        """Copy the trainer's tensors (Hugging Face names) into the model; the count copied."""
        import torch

        own = dict(self.model.named_parameters())
        own.update(dict(self.model.named_buffers()))
        copied = 0
        with self._lock, torch.no_grad():
            for name, tensor in named:
                target = own.get(name)
                if target is None:
                    target = own.get(name.removeprefix("_orig_mod."))
                if target is None:
                    continue
                target.copy_(tensor.to(target.dtype).view_as(target))
                copied += 1
        if self.model.config.tie_word_embeddings:
            self.model.tie_weights()
        if global_steps is not None:
            self.global_steps = global_steps
        return copied

    def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps

    def stats(self) -> dict[str, Any]:
        return {"requests": self.requests, "global_steps": self.global_steps,
                "checksum": float(sum(p.double().sum() for p in self.model.parameters()))}

    # --- control calls veRL makes on a server: nothing to free on CPU ------------------------
    async def wake_up(self, tags: list[str] | None = None) -> None:
        return None

    async def sleep(self) -> None:
        return None

    async def clear_kv_cache(self) -> None:
        return None

    async def release_kv_cache(self) -> None:
        return None

    async def resume_kv_cache(self) -> None:
        return None

    async def wait_for_requests_to_drain(self) -> None:
        return None

    async def abort_all_requests(self, reject_request: bool = False, **_: Any) -> dict[str, Any]:
        self._abort_all = True
        await asyncio.to_thread(self._lock.acquire)  # the running request has stopped
        self._lock.release()
        self._abort_all = bool(reject_request)  # True: refuse requests until resumed
        return {"aborted_count": 0, "request_ids": []}

    async def abort_request(self, request_id: str, **_: Any) -> dict[str, Any]:
        self._aborted.add(request_id)
        return {"aborted": True, "request_id": request_id}

    async def resume_generation(self) -> None:
        self._abort_all = False

    async def start_profile(self, **_: Any) -> None:
        return None

    async def stop_profile(self) -> None:
        return None


def _pick(logits: Any, temperature: float, top_p: float, top_k: int, generator: Any
          ) -> tuple[int, float]:
    """One token from ``logits`` and its log-prob (see the module docstring)."""
    import torch

    if temperature <= 0.0:
        token = int(torch.argmax(logits))
        return token, float(torch.log_softmax(logits, -1)[token])
    scaled = torch.log_softmax(logits / temperature, -1)
    kept = scaled.clone()
    if 0 < top_k < kept.numel():
        kept[kept < torch.topk(kept, top_k).values[-1]] = -math.inf
    if top_p < 1.0:
        order = torch.argsort(kept, descending=True)
        cumulative = torch.cumsum(torch.softmax(kept[order], -1), -1)
        drop = cumulative - torch.softmax(kept[order], -1) > top_p
        kept[order[drop]] = -math.inf
    token = int(torch.multinomial(torch.softmax(kept, -1), 1, generator=generator))
    return token, float(scaled[token])


def _model_path(model_config: Any) -> str:
    get = model_config.get if hasattr(model_config, "get") else (
        lambda k, d=None: getattr(model_config, k, d))
    return str(get("local_path", None) or get("path"))


def _stop_ids(model: Any, path: str) -> set[int]:
    """Token ids that end a turn: the generation config's and the tokenizer's end tokens."""
    ids: set[int] = set()
    for source in (model.generation_config, model.config):
        eos = getattr(source, "eos_token_id", None)
        ids.update(eos if isinstance(eos, list) else [eos] if eos is not None else [])
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(path)
        if tok.eos_token_id is not None:
            ids.add(int(tok.eos_token_id))
    except (OSError, ValueError):
        pass
    return ids


__all__ = ["HFServer"]
