from math import prod

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# internal: tests the number-theory helpers
from hscale.design._numbers import factorize, prime_parts, prime_power

PRIMES = [2, 3, 5, 7, 11, 13]


def is_prime(n):
    return n >= 2 and all(n % d for d in range(2, int(n**0.5) + 1))


@pytest.mark.parametrize("n,expected", [(1, {}), (2, {2: 1}), (12, {2: 2, 3: 1}),
                                        (97, {97: 1}), (360, {2: 3, 3: 2, 5: 1}),
                                        (2 * 101, {2: 1, 101: 1})])
def test_factorize_examples(n, expected):
    assert factorize(n) == expected


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 10**6))
def test_factorize_is_a_prime_factorisation(n):
    parts = factorize(n)
    assert prod(p**e for p, e in parts.items()) == n
    assert list(parts) == sorted(parts) and all(is_prime(p) and e >= 1 for p, e in parts.items())


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PRIMES + [17, 19, 23, 97]), st.integers(1, 6))
def test_prime_power_recovers_prime_and_exponent(p, n):
    assert prime_power(p**n) == (p, n)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PRIMES), st.sampled_from(PRIMES), st.integers(1, 3))
def test_prime_power_rejects_mixed_products(p, r, n):
    if p != r:
        assert prime_power(p**n * r) is None


@pytest.mark.parametrize("q", [0, 1, -4, 6, 4.0, "9"])
def test_prime_power_rejects_non_prime_powers(q):
    assert prime_power(q) is None


def test_prime_parts_split_level_counts_by_prime():
    assert prime_parts([2, 6, 12, 9]) == {2: (2, 2, 4, 1), 3: (1, 3, 3, 9)}

