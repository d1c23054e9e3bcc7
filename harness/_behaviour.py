"""What an episode's trajectory did, beyond its reward: counts from its tool calls, the same
on every driver (the embedded evaluator's rows and veRL's dumps both carry them), so the
report can say how often an arm looked before acting, repeated itself or recovered from an
error. Frequencies describe behaviour, not correctness.

- ``tool_calls``: the calls made; ``tool_errors``: the calls whose result was an error;
- ``recovered``: 1 when a call after the first error succeeded (0 when none did; NaN when
  no call failed: nothing to recover from);
- ``repeats``: calls identical to the one just before (same tool, same arguments);
- ``looked_first``: 1 when the first call only looked (list, read, search) before any
  write, run or calculation (NaN when no tool was called);
- ``judged_*``: the six capabilities an LLM judge scores 1-5 when asked for
  (:mod:`hscale.harness._capabilities`), NaN otherwise.
"""

from __future__ import annotations

import math
from typing import Any

from hscale.contracts import BEHAVIOUR, BEHAVIOUR_COUNTS, unobserved  # noqa: F401 (the columns)
from hscale.harness._capabilities import judged

LOOKUPS = ("list", "read", "search")


def behaviour(episode: Any) -> dict[str, float]:
    """The counts of one episode (an hscale.harness._engine.Episode)."""
    calls = list(episode.tool_calls)
    ok = [bool(result.ok) for _, result in calls]
    first_error = next((i for i, good in enumerate(ok) if not good), None)
    repeats = sum(1 for (a, _), (b, _) in zip(calls, calls[1:], strict=False)
                  if a.name == b.name and dict(a.args) == dict(b.args))
    return {"tool_calls": float(len(calls)), "tool_errors": float(ok.count(False)),
            "recovered": (math.nan if first_error is None
                          else float(any(ok[first_error + 1:]))),
            "repeats": float(repeats),
            "looked_first": float(calls[0][0].name in LOOKUPS) if calls else math.nan,
            **judged(episode)}

