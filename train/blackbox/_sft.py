"""Black-box SFT: a Hugging Face policy fine-tuned on a teacher's solved trajectories through
a black-box harness (hscale.train.blackbox._trajectories, collected by ``hscale collect``).

Each model call of a solved episode is shown to the student as ``hscale serve`` would show
it: the call's turns and tools through the student's chat template where it renders tools,
else through hscale's tool prompt; then the teacher's reply in the same convention (its
text, its calls as the template's ``tool_calls`` or as ``<tool_call>`` JSON) and the end of
the turn. The loss is on the reply's tokens only. LoRA (peft) by default, merged into the
saved weights so the result is an ordinary model folder that ``hscale evaluate`` and
``hscale serve`` take; ``lora_rank: 0`` trains every weight.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hscale.errors import HscaleError
from hscale.files import atomic_write_text
from hscale.train.blackbox._trajectories import Sample
from hscale.train.serving import Call, Turn, template_chat, tools_of_record, turns_of

RESULT = "sft.json"  # the fine-tune's settings and losses, beside the weights


@dataclass(frozen=True)
class SFTSettings:
    """``steps`` optimizer steps of ``batch`` examples at learning rate ``lr``; LoRA of
    rank ``lora_rank`` on every linear layer (0: full fine-tuning); an example longer than
    ``max_tokens`` is left out (counted), not cut."""

    steps: int = 20
    batch: int = 4
    lr: float = 2e-4
    lora_rank: int = 8
    max_tokens: int = 4096
    seed: int = 0
    keep: str = "solved"  # or "all": unsolved episodes' calls are examples too


def examples(tok: Any, calls: Sequence[Sample], template_tools: bool, max_tokens: int,
             keep: str = "solved") -> tuple[list[tuple[list[int], int]], int]:
    """(ids, where the reply starts) for each call of a solved episode, and how many were
    left out (unsolved, too long, or a template that does not extend its own prompt)."""
    out, left = [], 0
    for sample in calls:
        if keep == "solved" and sample.reward < 1.0:
            left += 1
            continue
        turns, tools = turns_of(sample.messages), tools_of_record(sample.tool_specs)
        reply = Turn("assistant", sample.reply, tuple(
            Call(c["id"], c["name"], c.get("arguments") or "{}")
            for c in json.loads(sample.tool_calls or "[]")))
        prompt, full = _texts(tok, turns, reply, tools, template_tools)
        if not full.startswith(prompt):
            left += 1
            continue
        head = tok.encode(prompt, add_special_tokens=False)
        ids = head + tok.encode(full[len(prompt):], add_special_tokens=False)
        if len(ids) > max_tokens or len(ids) == len(head):
            left += 1
            continue
        out.append((ids, len(head)))
    return out, left


def _texts(tok: Any, turns: list[Turn], reply: Turn, tools: list, template_tools: bool
           ) -> tuple[str, str]:
    """The prompt as served (with the generation prompt) and the same with the reply."""
    chat, specs = template_chat([*turns, reply], tools, "auto", template_tools)
    return tuple(tok.apply_chat_template(dicts, tools=specs or None, tokenize=False,
                                         add_generation_prompt=more)
                 for dicts, more in ((chat[:-1], True), (chat, False)))


def fine_tune(folder: str | Path, calls: Sequence[Sample], out: str | Path,
              settings: SFTSettings = SFTSettings(),
              progress: Callable[[int, int], None] | None = None,
              extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Fine-tune the model in ``folder`` on ``calls``; the merged weights, the tokenizer and
    ``sft.json`` (settings, examples, the loss of every step, seconds a step) go to ``out``.
    Returns what ``sft.json`` holds."""
    import torch

    from hscale.train.lm import HFChat

    chat = HFChat(folder)  # a GPU where there is one
    data, left = examples(chat.tok, calls, chat.template_tools, settings.max_tokens,
                          settings.keep)
    if not data:
        raise HscaleError(f"no example to fine-tune on ({len(calls)} calls, {left} left out: "
                          "unsolved, or longer than max_tokens)",
                          "collect more episodes, or raise max_tokens")
    torch.manual_seed(settings.seed)
    model = _trainable(chat.model, settings.lora_rank)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=settings.lr)
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(settings.seed))
    losses, began = [], time.perf_counter()
    for step in range(settings.steps):
        picked = [data[int(order[(step * settings.batch + k) % len(data)])]
                  for k in range(min(settings.batch, len(data)))]
        ids, mask, labels = (t.to(chat.device) for t in _batch(picked, chat.pad))
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        if progress is not None:
            progress(step + 1, settings.steps)
    seconds = (time.perf_counter() - began) / max(settings.steps, 1)
    model.eval()
    merged = model.merge_and_unload() if settings.lora_rank > 0 else model
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(out)
    chat.tok.save_pretrained(out)
    result = {"settings": asdict(settings), "base": str(folder), "examples": len(data),
              "left_out": left, "losses": losses, "seconds_per_step": seconds,
              **(extra or {})}
    atomic_write_text(out / RESULT, json.dumps(result, indent=1) + "\n")
    return result


def _trainable(model: Any, rank: int) -> Any:
    if rank <= 0:
        return model
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=0.0,
                                            target_modules="all-linear",
                                            task_type="CAUSAL_LM"))


def _batch(picked: list[tuple[list[int], int]], pad: int) -> tuple[Any, Any, Any]:
    """Right-padded ids, their mask, and labels that are the reply's tokens only."""
    import torch

    width = max(len(ids) for ids, _ in picked)
    ids = torch.full((len(picked), width), pad, dtype=torch.long)
    mask = torch.zeros((len(picked), width), dtype=torch.long)
    labels = torch.full((len(picked), width), -100, dtype=torch.long)
    for i, (row, start) in enumerate(picked):
        ids[i, :len(row)] = torch.tensor(row)
        mask[i, :len(row)] = 1
        labels[i, start:len(row)] = torch.tensor(row[start:])
    return ids, mask, labels
