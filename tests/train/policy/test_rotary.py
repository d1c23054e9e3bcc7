"""The policy's rotary embedding is the textbook rotation of each head's two halves,
``[x1 cos - x2 sin, x1 sin + x2 cos]``, bit for bit, however it is computed for speed
(a checkpoint's numbers, and the golden rows, depend on it)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

# internal: the policy's rotary layer is not part of the package's API
from hscale.train.policy._model import rotary, rotation  # noqa: E402


def textbook(x, pos, head_dim):
    half = head_dim // 2
    freq = 10000.0 ** (-torch.arange(half, dtype=torch.float32) / half)
    angle = torch.arange(4096, dtype=torch.float32)[:, None] * freq
    cos, sin = angle.cos()[pos], angle.sin()[pos]
    if pos.dim() == 2:
        cos, sin = cos[:, None], sin[:, None]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


@pytest.mark.parametrize("seed", range(8))
def test_rotary_is_the_textbook_rotation_bit_for_bit(seed):
    generator = torch.Generator().manual_seed(seed)
    head_dim = (8, 16, 32)[seed % 3]
    scale = 10.0 ** (seed % 5 - 2)
    x = torch.randn(3, 4, 9, head_dim, generator=generator) * scale
    for pos in (torch.randint(0, 4096, (3, 9), generator=generator),
                torch.randint(0, 4096, (9,), generator=generator)):
        assert torch.equal(rotary(x, rotation(pos, head_dim)), textbook(x, pos, head_dim))
