import numpy as np
import pytest

# internal: tests Galois-field arithmetic directly
from hscale.design._gf import GF, field, primitive_polynomial

# internal: tests the number-theory helpers
from hscale.design._numbers import prime_power
from hscale.errors import HscaleError

PRIMES = [2, 3, 5, 7, 11, 13]
ORDERS = [2, 3, 4, 5, 7, 8, 9, 16, 25, 27, 32, 49]


def poly_mul_mod(a, b, modulus, p):
    """Schoolbook product of two coefficient lists reduced by a monic modulus (low first)."""
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] = (out[i + j] + x * y) % p
    n = len(modulus) - 1
    for k in range(len(out) - 1, n - 1, -1):
        c = out[k]
        if c:
            for i in range(n + 1):
                out[k - n + i] = (out[k - n + i] - c * modulus[i]) % p
    return out[:n]


def digits(code, p, n):
    return [(code // p**i) % p for i in range(n)]


@pytest.mark.parametrize("q", ORDERS)
def test_field_axioms(q):
    f = GF(q)
    a = np.arange(q)
    add, mul = f.add, f.mul
    assert (add == add.T).all() and (mul == mul.T).all()
    assert (add[0] == a).all() and (mul[1] == a).all() and (mul[0] == 0).all()
    x, y, z = np.meshgrid(a, a, a, indexing="ij")
    assert (add[add[x, y], z] == add[x, add[y, z]]).all()
    assert (mul[mul[x, y], z] == mul[x, mul[y, z]]).all()
    assert (mul[x, add[y, z]] == add[mul[x, y], mul[x, z]]).all()
    assert (add[a, f.neg] == 0).all()
    assert (mul[a[1:], f.inv[1:]] == 1).all()
    assert (f.sub[add[x, y], y] == x).all()
    # every row of + and every nonzero row of * is a permutation: a group structure
    assert all(len(set(row)) == q for row in add)
    assert all(len(set(row)) == q for row in mul[1:])


@pytest.mark.parametrize("q", ORDERS)
def test_characteristic_and_squares(q):
    f = GF(q)
    p, _ = prime_power(q)
    total = 0
    for _ in range(p):
        total = int(f.add[total, 1])
    assert total == 0 and f.p == p
    expected = q - 1 if p == 2 else (q - 1) // 2
    assert len(f.squares()) == expected


@pytest.mark.parametrize("q", [4, 8, 9, 25, 27])
def test_multiplication_matches_polynomial_arithmetic(q):
    f = GF(q)
    p, n = f.p, f.n
    assert len(f.modulus) == n + 1 and f.modulus[-1] == 1
    for a in range(q):
        for b in range(q):
            prod = poly_mul_mod(digits(a, p, n), digits(b, p, n), f.modulus, p)
            assert f.mul[a, b] == sum(c * p**i for i, c in enumerate(prod))
            assert digits(int(f.add[a, b]), p, n) == [
                (x + y) % p for x, y in zip(digits(a, p, n), digits(b, p, n), strict=True)]


def test_gf4_is_the_familiar_field():
    f = GF(4)  # modulus x^2 + x + 1: code 2 is x, code 3 is x + 1
    assert f.modulus == (1, 1, 1)
    assert f.mul[2, 2] == 3 and f.mul[2, 3] == 1 and f.add[2, 3] == 1


@pytest.mark.parametrize("p", PRIMES)
def test_prime_fields_are_residues(p):
    f = GF(p)
    a = np.arange(p)
    assert (f.add == (a[:, None] + a) % p).all()
    assert (f.mul == (a[:, None] * a) % p).all()


@pytest.mark.parametrize("p,n", [(2, 2), (2, 3), (2, 5), (3, 2), (3, 3), (5, 2), (7, 2)])
def test_primitive_polynomial_generates_the_group(p, n):
    poly = primitive_polynomial(p, n)
    q = p**n
    f = GF(q)
    assert f.modulus == poly
    x = p  # the code of the polynomial x
    seen = {f.power(x, k) for k in range(q - 1)}
    assert seen == set(range(1, q))


def test_power_and_dot():
    f = GF(9)
    assert f.power(5, 0) == 1 and f.power(0, 0) == 1 and f.power(0, 3) == 0
    rng = np.random.default_rng(0)
    rows, cols = rng.integers(0, 9, (6, 3)), rng.integers(0, 9, (4, 3))
    naive = np.zeros((6, 4), dtype=int)
    for i in range(6):
        for j in range(4):
            acc = 0
            for m in range(3):
                acc = f.add[acc, f.mul[rows[i, m], cols[j, m]]]
            naive[i, j] = acc
    assert (f.dot(rows, cols) == naive).all()
    g = GF(7)
    assert (g.dot(rows % 7, cols % 7) == (rows % 7) @ (cols % 7).T % 7).all()


def test_fields_are_cached_and_read_only():
    assert field(9) is field(9)
    assert GF(9).mul is GF(9).mul
    with pytest.raises(ValueError):
        GF(9).mul[1, 1] = 0


@pytest.mark.parametrize("q", [0, 1, 6, 10, 12, 15, 100, -4])
def test_non_prime_powers_rejected(q):
    assert prime_power(q) is None
    with pytest.raises(HscaleError) as err:
        GF(q)
    assert err.value.hint and "prime power" in err.value.hint


def test_bad_orders_rejected():
    with pytest.raises(HscaleError, match="too large"):
        GF(2048)
    with pytest.raises(HscaleError, match="integer"):
        GF(4.5)

