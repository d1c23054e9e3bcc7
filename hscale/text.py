"""Text from outside hscale (a black-box CLI's output, a model's reply, a reward script's
error, a value in a shared run folder) made safe to show: on a terminal, where an escape
sequence would act (retitle the window, clear the screen, write the clipboard through OSC
52), and in a page, where a control character is noise.

:func:`printable` is for terminals: escape sequences are removed and every other control
character becomes ``?``. :func:`visible` is for pages: each control character becomes its
Unicode picture (ESC shows as ␛), so a reader sees that something was there.
"""

from __future__ import annotations

import re

# ESC and what follows it: CSI (ESC [ ... final), OSC/DCS/SOS/PM/APC strings (ESC ] ... BEL
# or ST; unterminated: to the end), or a two-character sequence (ESC 7, ESC c)
_SEQUENCE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?"
                       r"|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"
                       r"|[ -~]?)"
                       r"|\x9b[0-?]*[ -/]*[@-~]?"  # the 8-bit CSI
                       r"|[\x90\x9d\x9e\x9f][^\x07\x9c\x1b]*(?:\x07|\x9c)?")  # 8-bit strings
# C0 (but tab and newline), DEL, C1, and the bidirectional overrides that reorder what a
# reader sees (U+202A-U+202E, U+2066-U+2069)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: object) -> str:
    """``text`` with its escape sequences removed and other control characters as ``?``:
    what can be printed to a terminal as it is. Tab and newline stay."""
    value = str(text)
    if not _CONTROL.search(value):
        return value
    return _CONTROL.sub("?", _SEQUENCE.sub("", value))


def visible(text: object) -> str:
    """``text`` with each control character but tab and newline shown as its Unicode
    picture (U+2400 + code; DEL as ␡, C1 and bidi overrides as ␦): for a page."""
    value = str(text)
    if not _CONTROL.search(value):
        return value
    return _CONTROL.sub(_picture, value)


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    return "\u2421" if code == 0x7F else "\u2426"
