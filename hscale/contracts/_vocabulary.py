"""The words the file contracts share: evaluation settings, decodings, the base model's arm,
the black-box harness prefix and the behaviour columns an evaluated episode carries."""

from __future__ import annotations

import math

# ``pool``: a rescue arm's base harness and siblings on the router's validation tasks (the
# training split, never the held-out eval tasks), for the pool properties, not for Pass@1
POOL_SETTING = "pool"
# ``routed``: Rank-1 routing at evaluation (the profiles router): each held-out task under the
# one sibling its judges put first
ROUTED_SETTING = "routed"
# ``neighbours``: the base harness's distance-1 neighbours (``evaluation.neighbours``)
SETTINGS = ("base", "in_space", "out_of_space", "neighbours", POOL_SETTING, ROUTED_SETTING)
# the arm of each seed's reference run: the starting model evaluated at step 0, no training
BASE_MODEL_ARM = "base-model"
DECODINGS = ("sampled", "greedy")

# A harness label naming a real agent CLI (hscale.harness._blackbox: ``bb/claude-code``); the
# one place the prefix is spelled
BLACKBOX_PREFIX = "bb/"


def is_blackbox(label: str) -> bool:
    """Whether a harness label names a black-box CLI rather than one of hscale's harnesses."""
    return str(label).startswith(BLACKBOX_PREFIX)


def blackbox_name(label: str) -> str:
    """A black-box label without its prefix (``claude-code``), as the papers name it."""
    return str(label).removeprefix(BLACKBOX_PREFIX)


# What an evaluated episode's trajectory did (hscale.harness._behaviour counts them): the
# counts, then the six capabilities an LLM judge scores 1-5 when asked for
# (hscale.harness._capabilities); NaN where not observed
BEHAVIOUR_COUNTS = ("tool_calls", "tool_errors", "recovered", "repeats", "looked_first")
CAPABILITIES = ("instruction_following", "interface_handling", "observation_reading",
                "state_tracking", "workflow_compliance", "error_recovery")
JUDGED = tuple(f"judged_{c}" for c in CAPABILITIES)
BEHAVIOUR = (*BEHAVIOUR_COUNTS, *JUDGED)
# what an episode cost (hscale.harness._transcript.cost; NaN where a driver cannot count it)
COST = ("model_calls", "prompt_tokens", "completion_tokens")


def unobserved() -> dict[str, float]:
    """Every behaviour column NaN: a trajectory not observed (a black-box CLI's own)."""
    return dict.fromkeys(BEHAVIOUR, math.nan)
