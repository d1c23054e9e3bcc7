"""The elliptic quadric as a cap of PG(3, q): q^2 + 1 points, no three linearly dependent,
and the strength-3 arrays OA(q^4, q^2 + 1, q, 3) built from it."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from hscale.design import check_strength, full_factorial, orthogonal_array

# internal: tests each algebraic construction alone
from hscale.design._algebraic import linear_oa, projective_points

# internal: tests the cap constructions alone
from hscale.design._caps import anisotropic_constant, ovoid

# internal: tests Galois-field arithmetic directly
from hscale.design._gf import GF, field

# internal: tests the construction planner's table
from hscale.design._planning import constructions

QS = [3, 4, 5, 7, 8, 9]


def _det3(gf: GF, m: np.ndarray) -> np.ndarray:
    """Determinants over GF(q) of a stack of 3 x 3 matrices (T, 3, 3), by cofactors."""
    mul, add, sub = gf.mul, gf.add, gf.sub

    def minor(c0: int, c1: int) -> np.ndarray:
        return sub[mul[m[:, 1, c0], m[:, 2, c1]], mul[m[:, 1, c1], m[:, 2, c0]]]

    first = sub[mul[m[:, 0, 0], minor(1, 2)], mul[m[:, 0, 1], minor(0, 2)]]
    return add[first, mul[m[:, 0, 2], minor(0, 1)]]


def dependent_triples(gf: GF, points: np.ndarray) -> int:
    """How many triples of the points are linearly dependent: all four 3 x 3 minors of
    their 3 x 4 matrix vanish."""
    triples = np.asarray(list(combinations(range(len(points)), 3)))
    rows = points[triples]  # (T, 3, 4)
    zero = np.ones(len(triples), dtype=bool)
    for cols in combinations(range(4), 3):
        zero &= _det3(gf, rows[:, :, list(cols)]) == 0
    return int(zero.sum())


@pytest.mark.parametrize("q", [3, 8, 9])
def test_the_check_sees_collinear_points(q):
    line = projective_points(q, 4)[:q + 1]  # x0 = x1 = 0: the q + 1 points of one line
    assert dependent_triples(field(q), line) == len(list(combinations(range(q + 1), 3)))
    plane = projective_points(q, 4)[:q * q + q + 1]  # x0 = 0
    assert dependent_triples(field(q), plane[[1, q + 1, q + 2, 2 * q + 3]]) == 0  # an arc


@pytest.mark.parametrize("q", QS)
def test_ovoid_is_a_cap_of_q2_plus_1_points(q):
    gf = field(q)
    points = ovoid(q)
    assert points.shape == (q * q + 1, 4)
    first = points[np.arange(len(points)), np.argmax(points != 0, axis=1)]
    assert (first == 1).all()  # normalised, hence distinct points when distinct vectors
    assert len(np.unique(points, axis=0)) == q * q + 1
    c = anisotropic_constant(gf)
    e = np.arange(q)
    assert (gf.add[gf.add[gf.mul[e, e], e], c] != 0).all()  # t^2 + t + c has no root
    x0, x1, x2, x3 = points.T
    quadric = gf.add[gf.add[gf.mul[x0, x1], gf.mul[x2, x2]],
                     gf.add[gf.mul[x2, x3], gf.mul[c, gf.mul[x3, x3]]]]
    assert (quadric == 0).all()
    assert dependent_triples(gf, points) == 0


@pytest.mark.parametrize("q", QS)
def test_linear_oa_in_pg3_is_the_ovoid_array(q):
    arr = linear_oa(q, 4, 3)
    assert arr.shape == (q**4, q * q + 1)
    gf = field(q)
    assert np.array_equal(arr, gf.dot(full_factorial((q,) * 4), ovoid(q)))
    if q <= 5:
        assert check_strength(arr, 3).ok
    else:  # the full check costs more than hscale spends: some columns, (0, 1, 0, 0) among them
        assert check_strength(arr[:, np.r_[0:8, q * q - 7:q * q + 1]], 3).ok


def test_greedy_stays_for_binary_caps_and_larger_fields_are_cut_to_the_cell_cap():
    assert linear_oa(2, 4, 3).shape[1] == 8  # an ovoid has 5 points, the best binary cap 8
    assert linear_oa(16, 4, 3).shape == (16**4, 152)  # 257 points; 10^7 cells hold 152 columns


def test_orthogonal_array_builds_the_ovoid_arrays():
    design = orthogonal_array("5^26", 3)
    assert design.runs == 625 and design.method == "ovoid(q=5)"
    design = orthogonal_array("4^17", 3)
    assert design.runs == 256 and design.method == "ovoid(q=4)"
    name, arr = next(constructions((8,) * 65, 3, 4096, search_steps=0))
    assert name == "ovoid(q=8)" and arr.shape == (4096, 65)
