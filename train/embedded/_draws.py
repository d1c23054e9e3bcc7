"""What a sampled row draws from: its own stream of uniforms (:class:`Draws`), one a token,
looked up in its distribution by inverse transform (:func:`draw`), and guesses of its next
tokens (:class:`Continuations`), which its draws confirm or not. Each row's numbers are its
own, whatever rows share a call: hscale.train.embedded._sampler's episodes do not depend on
batching."""

from __future__ import annotations

import torch

from hscale.train.lm import row_generator

BLOCK = 16  # sampled tokens' uniforms drawn at once (Draws)
ORDER = 4  # tokens of context that key a continuation (Continuations)


def draw(probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """Tokens drawn from the rows of ``probs`` (S, V) by inverse transform: row i's token is
    the first whose cumulative probability exceeds ``uniform[i]`` (in [0, 1)) times the row's
    total. A row's cumulative sum is its own (the same numbers whatever rows share the call),
    and a token of probability zero is never drawn. One uniform a token instead of Gumbel noise
    over the whole vocabulary: the same distribution for a fraction of the work."""
    cdf = probs.cumsum(dim=-1)
    total = cdf[:, -1:]
    # strictly below the total, so that some token's cumulative sum exceeds it
    at = torch.minimum(uniform[:, None] * total, torch.nextafter(total, torch.zeros_like(total)))
    return torch.searchsorted(cdf, at, right=True)[:, 0]


class Draws:
    """A sampled row's uniforms, one a sampled token, from the row's own generator. Drawn
    :data:`BLOCK` tokens at a time: torch's CPU generator gives the same numbers to one draw
    of k as to k draws of one (a test holds it to that), and the row's generator serves
    nothing else."""

    def __init__(self, seed: int) -> None:
        self.generator = row_generator(seed)
        self.block: list[float] = []
        self.used = 0

    def next(self) -> float:
        (uniform,) = self.ahead(1)
        self.used += 1
        return uniform

    def ahead(self, n: int) -> list[float]:
        """The next ``n`` uniforms, which the next ``n`` calls of :meth:`next` return (the
        stream is the same however far it is read ahead)."""
        while len(self.block) - self.used < n:
            self.block = self.block[self.used:] + torch.rand(
                BLOCK, generator=self.generator).tolist()
            self.used = 0
        return self.block[self.used:self.used + n]


class Continuations:
    """What the policy sampled after each context of :data:`ORDER` tokens, most recently:
    a guess of the tokens a lane samples next, which it feeds with its last token. Any guess
    keeps the episodes as they are (a row keeps a guessed token only where its own draw, from
    the distribution at that position, is that token; the forward call gives a token the
    same numbers whatever else a tick feeds); a good one saves ticks. A policy that is sure
    of itself repeats its turns (the same command after the same observation) across
    rollouts, steps and tasks."""

    def __init__(self, most: int = 1 << 18) -> None:
        self.next: dict[tuple[int, ...], int] = {}
        self.most = most  # contexts kept (a demo run sees about 3,400); then it starts over

    def saw(self, context: list[int], token: int) -> None:
        if len(self.next) >= self.most:
            self.next.clear()
        self.next[tuple(context[-ORDER:])] = token

    def guess(self, context: list[int], size: int, end: int) -> list[int]:
        """Up to ``size`` tokens after ``context``, following what was sampled before (and
        not past an end of turn)."""
        key = tuple(context[-ORDER:])
        out: list[int] = []
        while len(out) < size:
            token = self.next.get(key)
            if token is None:
                break
            out.append(token)
            if token == end:
                break
            key = (*key[1:], token)
        return out
