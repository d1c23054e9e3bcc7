"""The built-in world's closed vocabulary and its word-level tokenizer.

Every text a harness shows the model or expects from it in the built-in world (prompts, tool
syntax, observations, task files) is made of these tokens, so a word-level tokenizer covers
it exactly and a small model can learn on a CPU. Each module that writes text declares its
words in a module-level ``WORDS`` tuple; this module gathers them.
"""

from __future__ import annotations

import importlib
import re
from functools import cache

from hscale.harness.components import BUILTIN_MODULES

# Punctuation runs that the tool syntaxes and observation formats repeat on every turn, each
# one token (as a BPE tokenizer would learn them), so a JSON call costs what a word call does.
MERGES = (
    "<tool_call>", "</tool_call>", '": {"', '": {}', '": "', '", "', '": [', '": ', '"}}', '"}',
    '{"', '["', '"]', '", ', '="', '">', '"/>', '("', '")', '"""', "</", "/>", "```", "###",
)
# A token is a merged punctuation run, an escaped newline (inside JSON strings), a run of
# letters/digits/underscores, or a single other visible character.
_TOKEN = re.compile("|".join(re.escape(m) for m in sorted(MERGES, key=len, reverse=True))
                    + r"|\\n|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")

PUNCTUATION = tuple("{}[]()<>\"'`:;,.=+-*/#|_!?@$%&^~\\")
NUMBERS = tuple(str(i) for i in range(1000))
SPECIAL = ("<pad>", "<unk>", "<bos>", "<eos>", "<nl>")
ESCAPES = ("\\n",)

# Modules that declare WORDS: every built-in component module, the world and the policies.
WORD_MODULES = ("hscale.harness._world", "hscale.harness._env", *BUILTIN_MODULES,
                "hscale.harness._policies")


def tokenize(text: str) -> list[str]:
    """Word-level tokens; a newline is its own token so layout survives a round trip."""
    out: list[str] = []
    for i, line in enumerate(text.split("\n")):
        if i:
            out.append("<nl>")
        out.extend(_TOKEN.findall(line))
    return out


@cache
def vocabulary() -> tuple[str, ...]:
    """Every token of the built-in world, specials first, then sorted."""
    words: set[str] = set(PUNCTUATION) | set(NUMBERS) | set(ESCAPES) | set(MERGES)
    for name in WORD_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        for word in getattr(module, "WORDS", ()):
            words.update(tokenize(word))
    words.difference_update(SPECIAL)
    return SPECIAL + tuple(sorted(words))
