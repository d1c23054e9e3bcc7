"""The base model: a documented warm start, built once and cached by content hash.

Like an instruct model before RL, the base policy is trained by supervised learning on
*imperfect* demonstrations (``hscale.harness._policies.demonstrations``) spread over all 243
configurations and, at a smaller share, the out-of-space harnesses. The demonstrator's
mistakes depend on surface form (its habits: a call syntax used where another is asked for,
a misread observation field, a step skipped under one workflow), so the base model's greedy
behaviour is wrong under some realizations and RL has something to learn beyond sharpening.

The checkpoint is keyed by a content hash of the preset, the vocabulary, a fingerprint of the
demonstrations themselves and the architecture version, so it follows what shapes the model
and not how the code is written. It is looked up (hscale.train.policy._lookup) in
``$HSCALE_CACHE/models`` (default ``~/.cache/hscale``), then shipped in
``train/embedded/data/`` when its recorded hash matches, else it is trained (``hscale model
build NAME`` does exactly this, and is how the shipped file was made). Every arm of every
experiment using the preset shares it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import torch

from hscale.files import reads_as, refuse_foreign_file
from hscale.harness import tokenizer
from hscale.train.policy._lookup import available, base_model_path, content_hash
from hscale.train.policy._model import ModelConfig, TinyGPT, load, save
from hscale.train.policy._sequences import Sequences, sequences, token_logprobs
from hscale.train.spec import preset


def base_model(name: str, progress: Callable[[int, int], None] | None = None) -> TinyGPT:
    """The base model of preset ``name``: cached, shipped, or trained now and cached."""
    path = available(name) or build(name, progress)
    return load(path, tokenizer().fingerprint)


def build(name: str, progress: Callable[[int, int], None] | None = None,
          out: Path | None = None) -> Path:
    """Train the base model and save it (to the cache, or ``out``) with its content hash. An
    ``out`` that exists must be an hscale checkpoint: nothing else is ever overwritten."""
    if out is not None:
        check_out(out)
    model = warm_start(name, progress)
    path = out or base_model_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    save(model, path, tokenizer().fingerprint, content_hash=content_hash(name))
    return path


def check_out(out: Path) -> None:
    """Refuse an ``--out`` that is a folder or a file other than an hscale checkpoint."""
    refuse_foreign_file(out, reads_as(load), "an hscale checkpoint",
                        "give a new file path for --out (nothing was changed)",
                        name=f"--out {out}")


def warm_start(name: str, progress: Callable[[int, int], None] | None = None) -> TinyGPT:
    """Supervised learning on the demonstrations (token-mean cross-entropy on model turns)."""
    from hscale.harness import demonstrations

    cfg, ws = preset(name)["model"], preset(name)["warm_start"]
    tok = tokenizer()
    torch.manual_seed(ws["seed"])
    model = TinyGPT(ModelConfig(vocab_size=len(tok), **cfg))
    episodes = demonstrations(ws["episodes"], seed=ws["seed"])
    data = sequences(tok, episodes, cfg["max_positions"])
    opt = torch.optim.AdamW(model.parameters(), lr=ws["lr"], weight_decay=0.01,
                            betas=(0.9, 0.95))
    schedule = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, ws))
    gen = torch.Generator().manual_seed(ws["seed"])
    # batches of similar length (a random window of the length-sorted data) waste little on
    # padding; the window's start is random, so every sequence is seen
    by_length = torch.argsort((data.ids != tok.pad).sum(1))
    model.train()
    for step in range(ws["steps"]):
        start = int(torch.randint(max(len(data) - ws["batch"], 0) + 1, (1,), generator=gen))
        rows = by_length[start:start + ws["batch"]]
        loss = sft_loss(model, data.select(rows))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        if progress is not None:
            progress(step + 1, ws["steps"])
    model.eval()
    return model


def sft_loss(model: TinyGPT, batch: Sequences) -> torch.Tensor:
    logp, _, _ = token_logprobs(model, batch)
    return -logp.mean()


def _lr_factor(step: int, ws: dict) -> float:
    if step < ws["warmup"]:
        return (step + 1) / ws["warmup"]
    frac = (step - ws["warmup"]) / max(ws["steps"] - ws["warmup"], 1)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

