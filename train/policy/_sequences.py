"""Episodes -> padded training sequences: one per context segment, loss on the model's tokens.

A context-compacted or windowed rollout yields several segments; each becomes its own
sequence and carries the rollout's index, so it inherits the rollout's reward, group and
advantage. Assistant turns are encoded with the ids the sampler drew (never re-tokenized),
and only turns generated inside a segment count in its loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from hscale.harness import Episode, WordTokenizer


@dataclass
class Sequences:
    """``ids`` (N, T) right-padded; ``mask`` (N, T-1) marks predicted positions that train;
    ``rollout_logp`` (N, T-1) is the sampler's log-prob there (NaN where it has none);
    ``owner`` (N,) is the index of the episode each sequence came from."""

    ids: torch.Tensor
    mask: torch.Tensor
    rollout_logp: torch.Tensor
    owner: torch.Tensor

    def __len__(self) -> int:
        return self.ids.shape[0]

    def select(self, rows: torch.Tensor) -> Sequences:
        trained = self.mask[rows].any(dim=0).nonzero()
        used = int(trained.max()) + 2 if len(trained) else 1
        return Sequences(self.ids[rows, :used], self.mask[rows, :used - 1],
                         self.rollout_logp[rows, :used - 1], self.owner[rows])


def episode_sequences(tok: WordTokenizer, episode: Episode
                      ) -> list[tuple[list[int], list[bool], list[float]]]:
    """(ids, trainable-per-token, rollout log-prob per token) for each segment."""
    own = {}
    turns = [m for m in episode.messages if m.role == "assistant"]
    for message, gen in zip(turns, episode.generations, strict=False):
        ids = gen.token_ids if gen.token_ids is not None else tok.encode(gen.text)
        lps = gen.logprobs if gen.logprobs is not None else (float("nan"),) * len(ids)
        own[id(message)] = (ids, lps)
    out = []
    for segment in episode.segments:
        messages = segment.messages(episode.messages)
        flags = segment.trainable(episode.messages)
        ids: list[int] = []
        train: list[bool] = []
        logps: list[float] = []
        for message, trainable in zip(messages, flags, strict=True):
            body, lps = own.get(id(message), (None, None))
            if body is None:
                body = tok.encode(message.content)
                lps = (float("nan"),) * len(body)
            # the end-of-turn token trains only if the model chose it (not when a turn was cut)
            generated = id(message) in own
            chose_end = not generated or len(lps) > len(body)
            end = lps[len(body)] if generated and chose_end else float("nan")
            ids += [tok.role[message.role], *body, tok.eos]
            train += [False] + [trainable] * len(body) + [trainable and chose_end]
            logps += [float("nan"), *lps[:len(body)], end]
        if any(train):
            out.append((ids, train, logps))
    return out


def sequences(tok: WordTokenizer, episodes: Sequence[Episode], max_len: int) -> Sequences:
    """Every segment of every episode, cut to ``max_len`` tokens, as padded tensors."""
    rows = []
    for owner, episode in enumerate(episodes):
        for ids, train, logps in episode_sequences(tok, episode):
            rows.append((ids[:max_len], train[:max_len], logps[:max_len], owner))
    width = max((len(r[0]) for r in rows), default=2)
    n = len(rows)
    ids = torch.full((n, width), tok.pad, dtype=torch.long)
    mask = torch.zeros((n, width - 1), dtype=torch.bool)
    logp = torch.full((n, width - 1), float("nan"))
    if rows:  # each table filled by one write of its rows' values, in row-major order
        lengths = torch.tensor([len(r[0]) for r in rows])
        ids[torch.arange(width) < lengths[:, None]] = torch.tensor(
            [t for r in rows for t in r[0]], dtype=torch.long)
        # position j predicts token j+1
        predicted = torch.arange(width - 1) < lengths[:, None] - 1
        mask[predicted] = torch.tensor([f for r in rows for f in r[1][1:]], dtype=torch.bool)
        logp[predicted] = torch.tensor([v for r in rows for v in r[2][1:]],
                                       dtype=torch.float32)
    owner = torch.tensor([r[3] for r in rows], dtype=torch.long)
    return Sequences(ids, mask, logp, owner)


def banned(tok: WordTokenizer) -> torch.Tensor:
    """-inf on ids a model turn never contains (pad, bos, unk, role markers), 0 elsewhere.

    The sampler draws from, and the trainer scores, this same restricted distribution."""
    ban = torch.zeros(len(tok))
    ban[[tok.pad, tok.bos, tok.unk, *tok.role.values()]] = float("-inf")
    return ban


def token_logprobs(model, seqs: Sequences, with_values: bool = False,
                   with_entropy: bool = False):
    """Log-probs (K,) of the K trained tokens, and when asked their distribution's entropy
    (K,) and the values (N, T-1); K = ``seqs.mask.sum()``, in row-major order."""
    hidden = model.hidden(seqs.ids[:, :-1])
    picked = hidden[seqs.mask]
    logits = model.logits(picked).float() + _ban(model.cfg.vocab_size)
    logp_all = torch.log_softmax(logits, dim=-1)
    targets = seqs.ids[:, 1:][seqs.mask]
    logp = logp_all.gather(1, targets[:, None])[:, 0]
    entropy = None
    if with_entropy:
        with torch.no_grad():
            entropy = -(logp_all.exp() * torch.nan_to_num(logp_all, neginf=0.0)).sum(-1)
    values = model.values(hidden) if with_values else None
    return logp, entropy, values


def _ban(vocab_size: int) -> torch.Tensor:
    from hscale.harness import tokenizer

    tok = tokenizer()
    return banned(tok) if len(tok) == vocab_size else torch.zeros(vocab_size)
