"""The words the file contracts share, typed: evaluation settings, decodings, how an episode
ended and whose failure its error is, what a comparison found; the base model's arm, the
black-box harness prefix and the behaviour columns an evaluated episode carries. Every module
compares against these members, never the words spelled again."""

from __future__ import annotations

import math
from enum import StrEnum


class Setting(StrEnum):
    """An evaluation setting: which harnesses a checkpoint is evaluated under. Its ``label``
    is how a report names it, its ``order`` where a table puts it; how a spec builds each
    one's harnesses is hscale.train.planning's (``SETTING_BUILDERS``)."""

    BASE = "base"  # the base harness alone
    IN_SPACE = "in_space"  # a held-out set of the factor space's harnesses
    OUT_OF_SPACE = "out_of_space"  # harnesses outside the space (presets, black-box CLIs)
    NEIGHBOURS = "neighbours"  # the base harness's distance-1 neighbours
    # a rescue arm's base harness and siblings on the router's validation tasks (the
    # training split, never the held-out eval tasks), for the pool's properties, not Pass@1
    POOL = "pool"
    # Rank-1 routing (the profiles router): each held-out task under the one sibling its
    # judges put first
    ROUTED = "routed"

    @property
    def label(self) -> str:
        return _SETTING_LABELS[self]

    @property
    def order(self) -> int:
        """Where tables put it: in-space, out-of-space, base, neighbours, then the rest."""
        return _SETTING_ORDER.index(self)

    @property
    def reported(self) -> bool:
        """Whether its rows are Pass@1 of held-out tasks (the pool's are not; routing's are
        reported apart)."""
        return self not in (Setting.POOL, Setting.ROUTED)


_SETTING_LABELS = {Setting.BASE: "base harness", Setting.IN_SPACE: "in-space",
                   Setting.OUT_OF_SPACE: "out-of-space",
                   Setting.NEIGHBOURS: "distance-1 neighbours", Setting.POOL: "pool",
                   Setting.ROUTED: "Rank-1 routing"}
_SETTING_ORDER = (Setting.IN_SPACE, Setting.OUT_OF_SPACE, Setting.BASE, Setting.NEIGHBOURS,
                  Setting.POOL, Setting.ROUTED)
POOL_SETTING = Setting.POOL
ROUTED_SETTING = Setting.ROUTED
SETTINGS = tuple(Setting)
# the settings Pass@1 is reported and compared in, in the papers' order
HEADLINE_SETTINGS = (Setting.IN_SPACE, Setting.OUT_OF_SPACE, Setting.BASE)


class Decoding(StrEnum):
    """How an evaluated episode sampled: the independent sampled runs, or an extra greedy
    pass (deterministic, recorded as run 0)."""

    SAMPLED = "sampled"
    GREEDY = "greedy"


DECODINGS = tuple(Decoding)


class Termination(StrEnum):
    """How an episode ended (eval.parquet's ``termination``; empty where not seen)."""

    ANSWER = "answer"  # the workflow accepted a final answer
    MAX_TURNS = "max_turns"  # the turn limit came first
    LENGTH = "length"  # the driver's token budget ran out
    POLICY_ERROR = "policy_error"  # the policy raised
    TIMEOUT = "timeout"  # a black-box CLI ran past its time
    ERROR = "error"  # a black-box CLI failed (an error exit, or it never asked the model)


class ErrorKind(StrEnum):
    """Whose failure an episode's error line is (``"kind: text"``; several joined by
    ``"; "``): the checker's (the episode scored 0 whatever the policy did), a black-box
    CLI's own, or the policy's."""

    CHECKER = "checker"
    CLI = "cli"
    POLICY = "policy"

    def line(self, text: str) -> str:
        """``text`` as an error line of this kind."""
        return f"{self.value}: {text}"


ERROR_SEPARATOR = "; "


def errors_of(error: str) -> dict[ErrorKind, str]:
    """The kinds of failure an error string holds, each with its first line's text (a line
    of no known kind is the policy's)."""
    out: dict[ErrorKind, str] = {}
    for part in str(error or "").split(ERROR_SEPARATOR):
        if not part:
            continue
        kind, sep, text = part.partition(": ")
        if sep and kind in ErrorKind.__members__.values():
            out.setdefault(ErrorKind(kind), text)
        else:
            out.setdefault(ErrorKind.POLICY, part)
    return out


def join_errors(*lines: str) -> str:
    """Error lines as one error string (empty ones dropped)."""
    return ERROR_SEPARATOR.join(line for line in lines if line)


class Finding(StrEnum):
    """What a comparison found (the report's verdicts, its CSV's ``verdict`` column): the
    interval leaves out 0 in the papers' direction or against it, or (without a paper
    direction) higher or lower; or it holds 0."""

    REPRODUCES = "reproduces"
    OPPOSITE = "opposite"
    HIGHER = "higher"
    LOWER = "lower"
    NOT_RESOLVED = "not resolved"


class PaperFit(StrEnum):
    """Where the papers' differences lie against a comparison's interval."""

    CONSISTENT = "consistent"  # all inside it
    ABOVE = "above"
    BELOW = "below"
    MIXED = "mixed"  # some inside, some outside
    NONE = ""  # no paper number, or no interval to hold it against


# the arm of each seed's reference run: the starting model evaluated at step 0, no training
BASE_MODEL_ARM = "base-model"

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
