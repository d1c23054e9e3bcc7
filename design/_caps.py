"""Caps in PG(3, q) beyond the greedy search: the elliptic quadric, an ovoid of q^2 + 1
points, the most any cap in PG(3, q) has for q > 2 (Bose 1947, Qvist 1952).

A cap's points as columns give the linear OA(q^4, q^2 + 1, q, 3) of ``hscale.design._algebraic``;
the greedy search there stops well short (q = 5, 7, 8, 9: 20, 25, 28, 32 points of 26, 50,
65, 82).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from hscale.design._arrays import _frozen
from hscale.design._gf import GF, field


def anisotropic_constant(gf: GF) -> int:
    """The least c for which t^2 + t + c has no root in GF(q), so that x^2 + x y + c y^2 is
    zero only at x = y = 0. t^2 + t + c = 0 means c = -(t^2 + t), and t -> t^2 + t is never
    onto (two-to-one for even q, (q + 1) / 2 values for odd q), so such a c exists."""
    e = np.arange(gf.q)
    hit = gf.neg[gf.add[gf.mul[e, e], e]]
    return int(np.setdiff1d(e, hit)[0])


@lru_cache(maxsize=32)
def _ovoid(q: int) -> np.ndarray:
    gf = field(q)
    c = anisotropic_constant(gf)
    a, b = np.divmod(np.arange(q * q), q)
    form = gf.add[gf.add[gf.mul[a, a], gf.mul[a, b]], gf.mul[c, gf.mul[b, b]]]
    affine = np.stack([np.ones_like(a), gf.neg[form], a, b], axis=1)
    points = np.vstack([[[0, 1, 0, 0]], affine])
    return _frozen(points[np.argsort(points @ q ** np.arange(3, -1, -1))])


def ovoid(q: int) -> np.ndarray:
    """The q^2 + 1 points of Q(x) = x0 x1 + x2^2 + x2 x3 + c x3^2 = 0 in PG(3, q), c from
    :func:`anisotropic_constant`: one vector per point, first nonzero entry 1, in code order
    (code = sum x_i q^(3-i)); no three of them are linearly dependent.

    Points: (1, -f(a, b), a, b) for every a, b, and (0, 1, 0, 0), the only one in the plane
    x0 = 0 (f = x2^2 + x2 x3 + c x3^2 vanishes only at 0). No three are collinear: Q on a line
    is a binary quadratic form, so a line with three points of Q lies in Q; it would meet the
    plane x0 = 0, so pass through P = (0, 1, 0, 0), and with a second point y of Q we get
    Q(P + y) = Q(P) + y0 + Q(y) = y0 = 0: y too would lie in x0 = 0, where P is alone.
    """
    return _ovoid(field(int(q)).q).copy()
