"""A lossless word-level tokenizer over the built-in world's closed vocabulary.

Each word has two ids: bare (glued to what precedes it) and spaced (``▁word``, one space
before it), so ``decode(encode(text)) == text`` for any text of the built-in world: a JSON
call keeps its exact spacing and the harness's parser reads what the model wrote. Extra
spaces are ``<sp>`` tokens and newlines ``<nl>``. Numbers are spelled in digits (the first one
carries the space), so the vocabulary stays small (~740 ids) and cheap to sample from.
A chat is rendered as ``<role> content <eos>`` per message; role markers are the only template.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache, lru_cache

from hscale.harness._types import Message
from hscale.harness._vocab import _TOKEN, SPECIAL, vocabulary

SPACE = "▁"
ROLES = ("<system>", "<user>", "<assistant>", "<tool>")
EXTRA = ("<sp>", *ROLES)


class WordTokenizer:
    """ids <-> text for the closed vocabulary; unknown words become ``<unk>``."""

    def __init__(self, words: Sequence[str] | None = None) -> None:
        words = [w for w in (words or vocabulary())
                 if w not in SPECIAL and not (w.isdigit() and len(w) > 1)]
        self.tokens: tuple[str, ...] = (*SPECIAL, *EXTRA, *words, *(SPACE + w for w in words))
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.pad, self.unk, self.bos, self.eos, self.nl = (self.ids[t] for t in SPECIAL)
        self.sp = self.ids["<sp>"]
        self.role = {r[1:-1]: self.ids[r] for r in ROLES}
        self._encode = lru_cache(maxsize=65536)(self._encode_uncached)

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def fingerprint(self) -> str:
        """A hash of the token list: a checkpoint is only valid with the same vocabulary."""
        return hashlib.sha256("\n".join(self.tokens).encode()).hexdigest()[:16]

    def encode(self, text: str) -> tuple[int, ...]:
        return self._encode(text)

    def _encode_uncached(self, text: str) -> tuple[int, ...]:
        out: list[int] = []
        for i, line in enumerate(text.split("\n")):
            if i:
                out.append(self.nl)
            end = 0
            for match in _TOKEN.finditer(line):
                gap = match.start() - end
                out.extend([self.sp] * max(gap - 1, 0))
                word = match.group()
                if word.isdigit() and len(word) > 1:
                    out.append(self.ids[(SPACE if gap else "") + word[0]])
                    out.extend(self.ids[d] for d in word[1:])
                else:
                    out.append(self.ids.get((SPACE if gap else "") + word, self.unk))
                end = match.end()
            out.extend([self.sp] * (len(line) - end))
        return tuple(out)

    def decode(self, ids: Sequence[int]) -> str:
        parts = []
        for i in ids:
            token = self.tokens[i]
            if token == "<nl>":
                parts.append("\n")
            elif token == "<sp>":
                parts.append(" ")
            elif token.startswith(SPACE):
                parts.append(" " + token[1:])
            elif token in SPECIAL or token in ROLES:
                continue
            else:
                parts.append(token)
        return "".join(parts)

    def encode_message(self, message: Message, content_ids: Sequence[int] | None = None
                       ) -> list[int]:
        """``<role> content <eos>``; ``content_ids`` replaces the content (a model's own ids)."""
        body = self.encode(message.content) if content_ids is None else content_ids
        return [self.role[message.role], *body, self.eos]

    def encode_chat(self, messages: Sequence[Message]) -> list[int]:
        out: list[int] = []
        for message in messages:
            out.extend(self.encode_message(message))
        return out


@cache
def tokenizer() -> WordTokenizer:
    """The built-in world's tokenizer (built once per process)."""
    return WordTokenizer()
