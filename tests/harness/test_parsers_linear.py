"""Parsers of model output take linear time: a hostile 100 KB turn costs milliseconds.

Before, "<" + 100,000 spaces or 100,000 newlines cost 50-100 s per parse (overlapping ``\\s*``
quantifiers), and the compact context re-parses old turns at every model call.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

import pytest

# internal: concrete tool parsers (registered by name)
import hscale.harness.components._tool_interface as tool_interface
from hscale.errors import HscaleError
from hscale.harness import Message, ParseError, ToolCall
from hscale.harness.components import MSG_LONG, available, get

# internal: concrete context components (registered by name)
from hscale.harness.components._context import Compact, summarize

# internal: concrete tool parsers (registered by name)
from hscale.harness.components._tool_interface import MAX_PARSE_CHARS
from tests.harness.helpers import hostile_turns, out_of_vocabulary

N = 100_000  # characters of an adversarial turn
# The bound for one hostile turn (best of 3 calls, so other load cannot fail it: the
# worst measures about 3 ms; backtracking cost 50-100 s). benchmarks/parsers.py measures it.
TURN_SECONDS = 0.05
# A looser guard where a mean over many calls is timed.
GUARD_SECONDS = 0.5
SHAPES = hostile_turns(N)
INTERFACES = available("tool_interface")


def _parsers() -> dict[str, Callable[[str], object]]:
    """Every parser of model text, and the observation parsers (model text may reach them)."""
    out: dict[str, Callable[[str], object]] = {}
    for name in INTERFACES:
        parse = get(name).parse
        out[name] = parse
        out[f"summary/{name}"] = lambda text, p=parse: summarize(
            [Message("assistant", text)], p)
    for name in available("observation"):
        out[name] = get(name).parse
    return out


def _slowest(parsers: dict[str, Callable[[str], object]], repeats: int = 3
             ) -> tuple[float, str]:
    """The slowest (best of ``repeats``) parse over every parser and shape, and its name."""
    worst = (0.0, "")
    for pname, parse in parsers.items():
        for sname, text in SHAPES.items():
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                with contextlib.suppress(HscaleError):  # an observation parser may refuse
                    parse(text)
                best = min(best, time.perf_counter() - start)
            worst = max(worst, (best, f"{pname} on {sname}"))
    return worst


def test_every_parser_reads_a_hostile_100kb_turn_in_under_50_ms():
    assert all(len(text) > 99_000 for text in SHAPES.values())
    seconds, where = _slowest(_parsers())
    assert seconds < TURN_SECONDS, f"{where}: {seconds:.3f} s"


def test_the_patterns_are_linear_even_without_the_length_bound(monkeypatch):
    monkeypatch.setattr(tool_interface, "MAX_PARSE_CHARS", 10 * N)
    seconds, where = _slowest({n: get(n).parse for n in INTERFACES}, repeats=1)
    assert seconds < 4 * GUARD_SECONDS, f"{where}: {seconds:.3f} s"  # was 50-100 s


def test_the_compact_context_stays_fast_on_hostile_turns():
    for name in INTERFACES:
        context, parse = Compact(max_turns=2, keep=1), get(name).parse
        history = [Message("system", "s"), Message("user", "u")]
        start = time.perf_counter()
        for text in list(SHAPES.values())[:12]:
            history += [Message("assistant", text), Message("tool", "error: x")]
            context.view(history, parse)
        per_view = (time.perf_counter() - start) / 12
        assert per_view < GUARD_SECONDS, f"{name}: {per_view:.3f} s a view"


@pytest.mark.parametrize("name", INTERFACES)
def test_a_call_followed_by_long_prose_still_parses(name):
    iface = get(name)
    call = ToolCall("read", {"path": "a.txt"})
    assert iface.parse(iface.format_call(call) + "\n\n" + "so it goes. " * 4000) in (
        call, ParseError(MSG_LONG))  # text after the call: only action lines run to the end
    assert iface.parse("the answer is plum . " * 2000) is None  # a long final answer


@pytest.mark.parametrize("name", ["tool_interface/action_lines", "tool_interface/shell"])
def test_a_call_running_past_the_bound_is_refused_not_cut(name):
    iface = get(name)
    text = iface.format_call(ToolCall("write", {"path": "a.txt", "text": "x" * MAX_PARSE_CHARS}))
    assert iface.parse(text) == ParseError(MSG_LONG)
    assert out_of_vocabulary(MSG_LONG) == []
