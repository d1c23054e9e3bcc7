"""C: what part of the history the model sees at each call, and the training segments it implies.

The agent loop keeps the full history and asks ``view(history)`` before every model call.
A view is always ``prefix + history[start:]``; while successive views extend each other they
form one *segment* (one training sequence). When the view stops being an extension (a window
slides, a compaction happens) a new segment starts, and ``segments`` lists them so a trainer
can give every segment the rollout's reward, group and advantage.

A *turn* is one assistant message plus the tool/user messages after it; the *head* (system
and task messages, everything before the first assistant message) is always kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from hscale.errors import HscaleError
from hscale.harness._types import Message, ParseError, ToolCall
from hscale.harness.components._registry import register

Parser = Callable[[str], ToolCall | ParseError | None]

WORDS = (
    "you see the whole history.",
    "you see the last turns.",
    "old turns become a short summary.",
    "summary: you read wrote listed the files searched computed",
    "made a bad call replied took called",
)


@dataclass(frozen=True)
class Segment:
    """Model calls that saw one growing sequence ``prefix + history[start:end]``.

    ``first`` is the history length at the segment's first call: assistant messages at or
    after it were generated inside this segment (train on them); earlier ones are context.
    """

    prefix: tuple[Message, ...]
    start: int
    first: int
    end: int

    def messages(self, history: Sequence[Message]) -> list[Message]:
        """The segment's sequence, without trailing messages no model call of it produced."""
        out = [*self.prefix, *history[self.start:self.end]]
        while len(out) > len(self.prefix) and out[-1].role != "assistant":
            out.pop()
        return out

    def trainable(self, history: Sequence[Message]) -> list[bool]:
        """Per message of :meth:`messages`: an assistant message generated in this segment."""
        n = len(self.messages(history)) - len(self.prefix)
        return [False] * len(self.prefix) + [
            history[i].role == "assistant" and i >= self.first
            for i in range(self.start, self.start + n)
        ]


def head_end(history: Sequence[Message]) -> int:
    """Index of the first assistant message (the head is everything before it)."""
    return next((i for i, m in enumerate(history) if m.role == "assistant"), len(history))


def turn_starts(history: Sequence[Message], since: int = 0) -> list[int]:
    """Indices of the assistant messages at or after ``since``: where turns begin."""
    return [i for i in range(since, len(history)) if history[i].role == "assistant"]


@dataclass
class Context:
    """Base class: subclasses pick ``(prefix, start)``; this class records the segments."""

    _segments: list[Segment] = field(default_factory=list, init=False, repr=False, compare=False)
    _seen: int = field(default=0, init=False, repr=False, compare=False)

    def describe(self) -> str:
        raise NotImplementedError

    def select(self, history: Sequence[Message],
               parse: Parser | None) -> tuple[tuple[Message, ...], int]:
        raise NotImplementedError

    def start(self) -> None:
        """Forget the previous episode (called by the loop before an episode's first view)."""
        self._segments = []
        self._seen = 0

    def view(self, history: Sequence[Message], parse: Parser | None = None) -> list[Message]:
        """What the model sees next; ``parse`` reads tool calls (compaction summaries use it)."""
        if len(history) < self._seen:
            self.start()
        self._seen = len(history)
        prefix, start = self.select(history, parse)
        n = len(history)
        if self._segments:
            last = self._segments[-1]
            self._segments[-1] = replace(last, end=n)
            if last.prefix == prefix and last.start == start:
                return [*prefix, *history[start:]]
        self._segments.append(Segment(prefix, start, n, n))
        return [*prefix, *history[start:]]

    @property
    def segments(self) -> list[Segment]:
        """Segments so far; the last one ends at the latest view (see :meth:`closed`)."""
        return list(self._segments)

    def segment_messages(self, history: Sequence[Message]) -> list[list[Message]]:
        """Each segment's message sequence; the last one extended to the end of ``history``."""
        return [s.messages(history) for s in self.closed(history)]

    def closed(self, history: Sequence[Message]) -> list[Segment]:
        """Segments with the last one extended to the end of the finished ``history``."""
        segs = self.segments
        if segs:
            segs[-1] = replace(segs[-1], end=len(history))
        return segs


@register("context", "full")
@dataclass
class Full(Context):
    """Everything, always: one segment per episode."""

    def describe(self) -> str:
        return "you see the whole history."

    def select(self, history: Sequence[Message],
               parse: Parser | None) -> tuple[tuple[Message, ...], int]:
        return (), 0


@register("context", "window")
@dataclass
class Window(Context):
    """The head plus the last ``k`` turns; older turns drop out silently."""

    k: int = 2

    def __post_init__(self) -> None:
        if self.k < 1:
            raise HscaleError(f"window k must be at least 1, got {self.k}")

    def describe(self) -> str:
        return f"you see the last {self.k} turns."

    def select(self, history: Sequence[Message],
               parse: Parser | None) -> tuple[tuple[Message, ...], int]:
        head = head_end(history)
        turns = turn_starts(history, head)
        start = turns[-self.k] if len(turns) > self.k else head
        return tuple(history[:head]), start


@register("context", "compact")
@dataclass
class Compact(Context):
    """When more than ``max_turns`` turns are visible, all but the last ``keep`` become a summary.

    The summary is one user message built deterministically from the summarised tool calls
    (``summary: you read a.txt, you wrote out.txt.``); it covers every turn cut so far.
    """

    max_turns: int = 2
    keep: int = 1
    _cut: int | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0 <= self.keep < self.max_turns:
            raise HscaleError(
                f"compact needs 0 <= keep < max_turns, got keep={self.keep}, "
                f"max_turns={self.max_turns}",
            )

    def describe(self) -> str:
        return "old turns become a short summary."

    def start(self) -> None:
        super().start()
        self._cut = None

    def select(self, history: Sequence[Message],
               parse: Parser | None) -> tuple[tuple[Message, ...], int]:
        head = head_end(history)
        cut = head if self._cut is None else self._cut
        visible = turn_starts(history, cut)
        if len(visible) > self.max_turns:
            cut = visible[-self.keep] if self.keep else len(history)
        self._cut = cut
        if cut <= head:
            return tuple(history[:head]), head
        summary = Message("user", summarize(history[head:cut], parse))
        return (*history[:head], summary), cut


def summarize(turns: Sequence[Message], parse: Parser | None = None) -> str:
    """``summary: you read a.txt, you wrote out.txt.``: one phrase per assistant message."""
    phrases = [_phrase(m.content, parse) for m in turns if m.role == "assistant"]
    return "summary: " + ", ".join(phrases) + "."


def _phrase(text: str, parse: Parser | None) -> str:
    if parse is None:
        return "you took a turn"
    call = parse(text)
    if call is None:
        return "you replied"
    if isinstance(call, ParseError):
        return "you made a bad call"
    arg = next(iter(call.args.values()), "")
    verbs = {"read": "you read", "write": "you wrote", "search": "you searched",
             "calc": "you computed", "list": "you listed the files"}
    return f"{verbs.get(call.name, 'you called ' + call.name)} {arg}".strip()
