"""An episode's behaviour counts (hscale.harness._behaviour), the same whichever driver
carried them: the embedded evaluator's eval row, and veRL's reward extras read back from
its dump."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from hscale.contracts import BEHAVIOUR, DumpedEpisode, Outcome, reward_extras, tag_truth
from hscale.harness import ToolCall, ToolResult, behaviour
from hscale.harness.verl_agent_loop import wire_behaviour

OK, ERR = ToolResult(True, "fine"), ToolResult(False, error="no such file")


def _episode(*calls):
    return SimpleNamespace(tool_calls=list(calls))


@pytest.mark.parametrize(("calls", "want"), [
    # looked first, one error, a retry of the same call that then worked
    ([(ToolCall("list"), OK), (ToolCall("read", {"path": "a"}), ERR),
      (ToolCall("read", {"path": "a"}), OK), (ToolCall("write", {"path": "b", "text": "x"}), OK)],
     {"tool_calls": 4, "tool_errors": 1, "recovered": 1, "repeats": 1, "looked_first": 1}),
    # acted first, failed and never recovered
    ([(ToolCall("calc", {"expr": "1/0"}), ERR), (ToolCall("calc", {"expr": "1/0"}), ERR)],
     {"tool_calls": 2, "tool_errors": 2, "recovered": 0, "repeats": 1, "looked_first": 0}),
    # no error: nothing to recover from; no call: nothing looked at first
    ([(ToolCall("search", {"word": "x"}), OK)],
     {"tool_calls": 1, "tool_errors": 0, "recovered": math.nan, "repeats": 0,
      "looked_first": 1}),
    ([], {"tool_calls": 0, "tool_errors": 0, "recovered": math.nan, "repeats": 0,
          "looked_first": math.nan}),
])
def test_counts_and_their_trip_through_verls_dump(calls, want):
    found = behaviour(_episode(*calls))
    assert set(found) == set(BEHAVIOUR)
    for key, value in want.items():
        assert found[key] == pytest.approx(value, nan_ok=True), key
    wired = reward_extras(Outcome(1.0, True, 1, behaviour=wire_behaviour(
        _episode(*calls), "S0-T0-O0-C0-W0")))
    assert all(isinstance(v, float) and not math.isnan(v) for v in wired.values())
    back = _dumped(wired).outcome.behaviour  # the dump import: the same numbers, NaN where NaN
    assert back == pytest.approx(found, nan_ok=True)


def _dumped(extras: dict) -> DumpedEpisode:
    """An episode as veRL dumps it with these reward extras, read back."""
    rec = {"score": 1.0, "step": 0, "gts": tag_truth("{}", 0), **extras}
    return DumpedEpisode.read(rec, "dump:1", 1)


def test_a_black_box_clis_calls_are_not_counted():
    wired = reward_extras(Outcome(1.0, True, 1, behaviour=wire_behaviour(
        _episode((ToolCall("list"), OK)), "bb/codex")))
    assert all(math.isnan(v) for v in _dumped(wired).outcome.behaviour.values())
    # an older loop's dump
    assert all(math.isnan(v) for v in _dumped({}).outcome.behaviour.values())
