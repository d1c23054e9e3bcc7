"""A character tokenizer with a ChatML template: what tiny stand-in models carry (veRL's
config checks when the real model is not on this machine, the GPU smoke run's random model,
tests). Nothing to download; every printable character is a token."""

from __future__ import annotations

import string
from typing import Any

CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                 "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}"
                 "<|im_start|>assistant\n{% endif %}")


def char_chat_tokenizer() -> Any:
    """A transformers fast tokenizer: one token per printable character, ChatML specials,
    ``<|im_end|>`` ending a turn."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = {c: i for i, c in enumerate(dict.fromkeys(["<unk>", *string.printable]))}
    tok = Tokenizer(models.WordLevel(chars, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens(["<|im_start|>", "<|im_end|>", "<pad>"])
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                 eos_token="<|im_end|>")
    hf.chat_template = CHAT_TEMPLATE
    return hf


__all__ = ["CHAT_TEMPLATE", "char_chat_tokenizer"]
