"""The embedded policy: a small GPT in plain torch, with a KV cache that a batched sampler
can reset row by row.

Plain torch rather than a Hugging Face class: the sampler needs per-row positions and a
per-row validity mask over one shared cache (a row whose context window slid starts again
at position 0 while the others go on), which the HF cache classes do not offer.

Checkpoint format (``save``/``load``): one ``torch.save`` file holding ``config`` (the
ModelConfig fields), ``tokenizer`` (the vocabulary fingerprint), ``state_dict`` and, for base
models, ``content_hash`` (see hscale.train.policy._warmstart).

Batch invariance of :meth:`TinyGPT.step`: a row's hidden states are the same numbers whatever
other rows share the call, however its tokens are split into calls and however long the
cache is. The CPU kernels round by shape, so every product keeps one shape regime: a matrix
product of fewer than :data:`MIN_ROWS` rows takes another kernel (padded up to it), and so
does attention of fewer than :data:`MIN_QUERIES` queries a row (padded); attention reads whole
blocks of :data:`MIN_SLOTS` cache slots and sums the values :data:`VALUE_SLOTS` slots at a
time (a longer product rounds by its length); and a row's keys sit in the slots of their
positions, so which slots it sees never depends on the others.
"""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from hscale.errors import HscaleError, reason
from hscale.files import atomic_write_bytes

MIN_ROWS = 4  # MKL's GEMM rounds otherwise below 4 rows
MIN_QUERIES = 4  # attention of fewer queries a row rounds otherwise (padded)
MIN_SLOTS = 64  # attention reads the cache in whole blocks of this many slots
# The values' weighted sum is one product per this many slots, added in order: a product over
# up to 192 slots gives a row the same numbers whatever zero weights follow its own slots
# (measured on MKL's kernels; 256 does not), so a row's sum does not depend on the longest
# row of its tick. 128 leaves a margin for other CPUs' kernels.
VALUE_SLOTS = 128


def cache_slots(positions: int) -> int:
    """The cache slots that attention over ``positions`` reads: whole blocks of
    :data:`MIN_SLOTS` (the kernel's rounding depends on a block's length)."""
    return -(-positions // MIN_SLOTS) * MIN_SLOTS


@cache
def _arange(n: int) -> torch.Tensor:
    """0, 1, ..., n - 1, made once (a tick's offsets of its tokens, its cache's slots)."""
    return torch.arange(n)


def linear(layer: nn.Linear | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)`` (a Linear, or a weight matrix without bias), with at least
    :data:`MIN_ROWS` rows in the product: the same numbers for a row whatever the others."""
    if x.numel() >= MIN_ROWS * x.shape[-1]:
        return _product(layer, x)
    rows = x.reshape(-1, x.shape[-1])
    out = _product(layer, torch.cat([rows, rows.new_zeros(MIN_ROWS - rows.shape[0],
                                                          rows.shape[1])]))
    return out[:rows.shape[0]].reshape(*x.shape[:-1], out.shape[-1])


def _product(layer: nn.Linear | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """F.linear rather than the module's call: the same numbers, without the module machinery
    (hooks, none here) that a tick of the sampler pays dozens of times."""
    return F.linear(x, layer.weight, layer.bias) if isinstance(layer, nn.Module) \
        else x @ layer.T


def norm(layer: nn.LayerNorm, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)`` through F.layer_norm (the same numbers, as :func:`linear`)."""
    return F.layer_norm(x, layer.normalized_shape, layer.weight, layer.bias, layer.eps)


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    max_positions: int = 512
    mlp_ratio: int = 4


@cache
def _rotation(half: int, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Tables (positions, 2 * half) of ``[cos, cos]`` and ``[-sin, sin]``: :func:`rotary`'s
    factors for both halves of a head at once."""
    freq = 10000.0 ** (-torch.arange(half, dtype=torch.float32) / half)
    angle = torch.arange(positions, dtype=torch.float32)[:, None] * freq
    cos, sin = angle.cos(), angle.sin()
    return torch.cat([cos, cos], dim=-1), torch.cat([-sin, sin], dim=-1)


def rotation(pos: torch.Tensor, head_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`rotary`'s factors at positions ``pos`` (B, T) or (T,), shaped to broadcast
    over heads; looked up once a forward call and shared by every layer."""
    cos_table, sin_table = _rotation(head_dim // 2, 4096)
    cos, sin = cos_table[pos], sin_table[pos]
    if pos.dim() == 2:
        cos, sin = cos[:, None], sin[:, None]
    return cos, sin


def rotary(x: torch.Tensor, rot: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Rotary position embedding of ``x`` (B, H, T, dh) at the positions of ``rot``
    (:func:`rotation`): ``[x1 cos - x2 sin, x1 sin + x2 cos]`` for the halves x1, x2 of a
    head, computed as ``x [cos, cos] + [x2, x1] [-sin, sin]`` (the same numbers: a sign flip
    is exact and a sum does not depend on its order) in four operators instead of nine.

    Attention then depends on relative position, which lets copying (read the file the
    query names) form far sooner than with learned absolute positions."""
    cos, sin = rot
    return x * cos + x.roll(x.shape[-1] // 2, dims=-1) * sin


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_heads = cfg.n_heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, cfg.mlp_ratio * d)
        self.out = nn.Linear(cfg.mlp_ratio * d, d)

    def _heads(self, x: torch.Tensor, rot: tuple[torch.Tensor, torch.Tensor]
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Queries, keys and values (B, H, T, dh); queries and keys rotated in one call
        (elementwise, so the same numbers as two calls, in half the operators)."""
        b, t, d = x.shape
        h = self.n_heads
        qkv = linear(self.qkv, norm(self.ln1, x)).view(b, t, 3 * h, d // h).transpose(1, 2)
        qk = rotary(qkv[:, :2 * h], rot)
        return qk[:, :h], qk[:, h:], qkv[:, 2 * h:]

    def _finish(self, x: torch.Tensor, att: torch.Tensor) -> torch.Tensor:
        """The block's output for tokens ``x`` (..., d) and their attention (..., d, its heads
        side by side): the projection and the MLP, each a residual."""
        x = x + linear(self.proj, att)
        return x + linear(self.out, F.gelu(linear(self.fc, norm(self.ln2, x))))

    def forward(self, x: torch.Tensor, rot: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = self._heads(x, rot)
        return self._finish(x, merged(F.scaled_dot_product_attention(q, k, v, is_causal=True)))

    def step(self, x: torch.Tensor, rot: tuple[torch.Tensor, torch.Tensor],
             cache: tuple[torch.Tensor, torch.Tensor], index: torch.Tensor, mask: torch.Tensor
             ) -> torch.Tensor:
        """Feed ``x`` (B, n) into the cache slots ``index`` (B, H, n, dh: each token's slot,
        the keys' index along dim 2); ``mask`` (B, 1, n, L) says which of the first L slots
        each new token may attend to. Keys are cached already rotated, so a row's restart
        at position 0 needs nothing else."""
        q, k, v = self._heads(x, rot)
        cache[0].scatter_(2, index, k)
        cache[1].scatter_(2, index, v)
        return self._finish(x, merged(attend(q, cache[0], cache[1], mask)))

    def step_packed(self, x: torch.Tensor, rot: tuple[torch.Tensor, torch.Tensor],
                    cache: tuple[torch.Tensor, torch.Tensor], rows: torch.Tensor,
                    cols: torch.Tensor, slots: torch.Tensor, n: int, mask: torch.Tensor
                    ) -> torch.Tensor:
        """:meth:`step` of the T real tokens ``x`` (T, d) of a (B, n) tick whose rows hold
        fewer than n: token t is row ``rows[t]``'s ``cols[t]``-th, at cache slot
        ``slots[t]``. The per-token layers read the T tokens alone; attention reads the
        (B, n) layout, with zero queries for the padding (their output is dropped) and no
        keys written for it (a slot past a token's position is masked)."""
        h = self.n_heads
        t, d = x.shape
        qkv = linear(self.qkv, norm(self.ln1, x)).view(t, 3 * h, d // h)
        qk = rotary(qkv[:, :2 * h], rot)  # (T, 2h, dh)
        cache[0][rows, :, slots] = qk[:, h:]
        cache[1][rows, :, slots] = qkv[:, 2 * h:]
        q = x.new_zeros(mask.shape[0], h, n, d // h)
        q[rows, :, cols] = qk[:, :h]
        return self._finish(x, attend(q, cache[0], cache[1], mask)[rows, :, cols].reshape(t, d))


def merged(att: torch.Tensor) -> torch.Tensor:
    """Attention (B, H, T, dh) as (B, T, H * dh): each token's heads side by side."""
    b, _, t, _ = att.shape
    return att.transpose(1, 2).reshape(b, t, -1)


def attend(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor
           ) -> torch.Tensor:
    """Attention of queries ``q`` (B, H, n, dh) over the first L slots of ``keys`` and
    ``values`` (B, H, >= L, dh) under the additive ``mask`` (B, 1, n, L), computed so that a
    query's result depends on nothing but its row's keys: at least :data:`MIN_QUERIES`
    queries (padded), and the weighted sum of values :data:`VALUE_SLOTS` slots at a time, in
    order (a product over the whole length rounds by the length).

    Three-dimensional ``bmm`` and ``baddbmm`` over (B * H) matrices rather than ``@`` on four
    dimensions, which copies the keys' slice first: the same numbers, in about 0.6 of the time;
    the queries are scaled before the product (by dh ** -0.5, a power of two for the
    models' head widths, so exactly the scaled scores), the mask is added in place, and the
    softmax reads the real queries alone."""
    b, h, n, dh = q.shape
    length = mask.shape[-1]
    q = q * dh ** -0.5
    if n < MIN_QUERIES:  # zero queries, whose scores and weights are never read
        q = F.pad(q, (0, 0, 0, MIN_QUERIES - n))
    m = q.shape[2]
    keys = keys[:, :, :length].reshape(b * h, length, dh)
    values = values[:, :, :length].reshape(b * h, length, dh)
    scores = torch.bmm(q.reshape(b * h, m, dh), keys.transpose(1, 2))
    if n < m:  # the real queries' softmax, over the scores (a product's row depends on
        real = scores[:, :n]  # that row alone, so the padding's weights do not matter)
        real.view(b, h, n, length).add_(mask)
        real.copy_(torch.softmax(real, dim=-1))
        weights = scores
    else:
        scores.view(b, h, m, length).add_(mask)
        weights = torch.softmax(scores, dim=-1)
    out = torch.bmm(weights[..., :VALUE_SLOTS], values[:, :VALUE_SLOTS])
    for start in range(VALUE_SLOTS, length, VALUE_SLOTS):
        block = slice(start, start + VALUE_SLOTS)
        out = torch.baddbmm(out, weights[..., block], values[:, block])
    return out.view(b, h, m, dh)[:, :, :n]


class TinyGPT(nn.Module):
    """Token embeddings, rotary positions, pre-LN blocks, tied unembedding, a value head."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.value_head = nn.Linear(cfg.d_model, 1)
        self.apply(self._init)
        for block in self.blocks:  # scaled residual projections (GPT-2)
            for layer in (block.proj, block.out):
                nn.init.normal_(layer.weight, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02)

    def hidden(self, ids: torch.Tensor) -> torch.Tensor:
        """Final hidden states (B, T, d) of right-padded sequences starting at position 0."""
        t = ids.shape[1]
        if t > self.cfg.max_positions:
            raise HscaleError(f"sequence of {t} tokens exceeds the model's "
                              f"{self.cfg.max_positions} positions")
        x = F.embedding(ids, self.tok.weight)
        rot = rotation(torch.arange(t, device=ids.device), self.cfg.d_model // self.cfg.n_heads)
        for block in self.blocks:
            x = block(x, rot)
        return norm(self.ln_f, x)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return linear(self.tok.weight, hidden)

    def values(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.value_head(hidden).squeeze(-1)

    # --- incremental decoding ---------------------------------------------------------
    def new_cache(self, batch: int, slots: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
        h = self.cfg.n_heads
        shape = (batch, h, slots, self.cfg.d_model // h)
        return [(torch.zeros(shape), torch.zeros(shape)) for _ in self.blocks]

    def step(self, ids: torch.Tensor, pos: torch.Tensor, cache: list,
             lengths: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states (B, n, d) for ``ids`` (B, n), row b's tokens at positions
        ``pos[b]``, ``pos[b] + 1``, ... of its sequence, cached in the slots of those
        positions (each token sees its row's slots up to its position; padding a row's
        chunk writes slots that its next tokens write over). The cache must hold
        :func:`cache_slots` of ``max(pos) + n`` slots. ``lengths`` (B,): how many of a
        row's n tokens are real (the rest padding, whose outputs are zero and whose keys
        are not written); the real tokens' numbers are those of the padded call."""
        b, n = ids.shape
        offsets = _arange(n)
        slots = pos[:, None] + offsets
        length = cache_slots(int(pos.max()) + n)
        if length > cache[0][0].shape[2]:
            raise HscaleError(f"the cache holds {cache[0][0].shape[2]} slots; {length} needed")
        seen = _arange(length)[None, None, :] <= slots[:, :, None]
        mask = torch.where(seen, 0.0, float("-inf"))[:, None]
        dh = self.cfg.d_model // self.cfg.n_heads
        if lengths is not None and int(lengths.min()) < n:  # padded rows: pack the tokens
            rows, cols = (offsets[None, :] < lengths[:, None]).nonzero(as_tuple=True)
            at = slots[rows, cols]
            x = F.embedding(ids[rows, cols], self.tok.weight)
            cos, sin = rotation(at.clamp(max=self.cfg.max_positions - 1), dh)
            rot = cos[:, None], sin[:, None]  # (T, 1, dh): broadcast over the heads
            for block, layer_cache in zip(self.blocks, cache, strict=True):
                x = block.step_packed(x, rot, layer_cache, rows, cols, at, n, mask)
            out = x.new_zeros(b, n, x.shape[-1])
            out[rows, cols] = norm(self.ln_f, x)
            return out
        x = F.embedding(ids, self.tok.weight)
        rot = rotation(slots.clamp(max=self.cfg.max_positions - 1), dh)
        h = self.cfg.n_heads
        index = slots[:, None, :, None].expand(b, h, n, dh)  # the keys' slots, every head
        for block, layer_cache in zip(self.blocks, cache, strict=True):
            x = block.step(x, rot, layer_cache, index, mask)
        return norm(self.ln_f, x)


def save(model: TinyGPT, path: str | Path, tokenizer_fingerprint: str, **extra: str) -> None:
    buffer = io.BytesIO()
    torch.save({"config": asdict(model.cfg), "tokenizer": tokenizer_fingerprint,
                "state_dict": model.state_dict(), **extra}, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def load(path: str | Path, tokenizer_fingerprint: str | None = None) -> TinyGPT:
    try:
        with warnings.catch_warnings():  # torch's notes on a foreign file: the error says it
            warnings.simplefilter("ignore")
            blob = torch.load(path, map_location="cpu", weights_only=True)
        model = TinyGPT(ModelConfig(**blob["config"]))
        model.load_state_dict(blob["state_dict"])
    except Exception as exc:  # torch.load's errors are of any type (EOFError, pickle's...)
        raise HscaleError(f"{path}: not an hscale checkpoint ({reason(exc)})",
                          "delete it; it is rebuilt on the next run") from None
    if tokenizer_fingerprint and blob.get("tokenizer") != tokenizer_fingerprint:
        raise HscaleError(f"{path}: checkpoint was trained with another vocabulary",
                          "delete it; it is rebuilt on the next run")
    return model
