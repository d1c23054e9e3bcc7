"""A tiny random Qwen2 model folder that veRL's CPU path can train in seconds: nothing to
download, every byte a token.

Its tokenizer is byte-level (GPT-2's byte-to-unicode alphabet, no merges) with ChatML
specials, because veRL loads tokenizers with ``AutoTokenizer``, which under transformers 5
rebuilds a ``qwen2`` folder's tokenizer as ``Qwen2Tokenizer`` (byte-level BPE) whatever
``tokenizer_config.json`` names: a plain character vocabulary (hscale.train.lm._tiny) then loses
every whitespace character, and veRL's Qwen token builder refuses it ("Expected Qwen newline
to tokenize to one token").
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from hscale.train.lm import CHAT_TEMPLATE

SPECIALS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")


@cache
def _byte_alphabet() -> tuple[str, ...]:
    """GPT-2's 256 printable stand-ins for bytes, in byte order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return tuple(out[b] for b in range(256))


def byte_chat_tokenizer() -> Any:
    """A fast tokenizer with one token per byte and ChatML specials (``<|im_end|>`` ends a
    turn, ``<|endoftext|>`` pads)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(_byte_alphabet())}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(SPECIALS))
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                 pad_token="<|endoftext|>")
    hf.chat_template = CHAT_TEMPLATE
    return hf


def tiny_model(folder: str | Path, *, hidden: int = 64, layers: int = 2, seed: int = 0
               ) -> Path:
    """Write a random Qwen2 causal LM (about 100k parameters at the defaults, float32) and
    its byte tokenizer to ``folder``; the folder."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    hf = byte_chat_tokenizer()
    hf.save_pretrained(folder)
    config = Qwen2Config(vocab_size=len(hf), hidden_size=hidden, intermediate_size=2 * hidden,
                         num_hidden_layers=layers, num_attention_heads=4,
                         num_key_value_heads=2, max_position_embeddings=32768,
                         tie_word_embeddings=True, rope_theta=10000.0,
                         eos_token_id=hf.eos_token_id, pad_token_id=hf.pad_token_id,
                         bos_token_id=None)
    torch.manual_seed(seed)
    Qwen2ForCausalLM(config).save_pretrained(folder)
    return folder


__all__ = ["byte_chat_tokenizer", "tiny_model"]
