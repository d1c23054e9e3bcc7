from collections import Counter
from itertools import combinations, product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hscale.design import balance_table, check_strength, is_orthogonal, strength

# internal: tests each algebraic construction alone
from hscale.design._algebraic import rao_hamming

# internal: tests the verifier's module and its listed failures
from hscale.design._verify import LISTED_FAILURES
from hscale.errors import HscaleError


def brute_is_oa(arr, t, levels):
    n = len(arr)
    for cols in combinations(range(arr.shape[1]), t):
        prod_levels = 1
        for c in cols:
            prod_levels *= levels[c]
        counts = Counter(tuple(row[list(cols)]) for row in arr)
        cells = list(product(*(range(levels[c]) for c in cols)))
        if any(counts.get(cell, 0) * prod_levels != n for cell in cells):
            return False
    return True


@st.composite
def arrays(draw):
    k = draw(st.integers(1, 5))
    levels = draw(st.lists(st.integers(2, 4), min_size=k, max_size=k))
    base = np.array(list(product(*(range(s) for s in levels))))
    # full factorials (strength k) with random damage, or random arrays
    if draw(st.booleans()):
        arr = base.copy()
        for _ in range(draw(st.integers(0, 2))):
            i = draw(st.integers(0, len(arr) - 1))
            j = draw(st.integers(0, k - 1))
            arr[i, j] = draw(st.integers(0, levels[j] - 1))
        cols = draw(st.permutations(range(k)))
        arr = arr[:, cols]
        levels = [levels[c] for c in cols]
    else:
        n = draw(st.integers(1, 24))
        arr = np.array([[draw(st.integers(0, s - 1)) for s in levels] for _ in range(n)])
    return arr, levels


@settings(max_examples=150, deadline=None)
@given(arrays(), st.integers(1, 3))
def test_agrees_with_brute_force(case, t):
    arr, levels = case
    if t > arr.shape[1]:
        return
    assert is_orthogonal(arr, t, levels) == brute_is_oa(arr, t, levels)


def test_reports_failing_tuples_and_deviation():
    ff = np.array(list(product(range(3), repeat=3)))
    bad = ff.copy()
    bad[0, 0] = 1
    report = check_strength(bad, 2)
    assert not report.ok
    assert {f.columns for f in report.failures} == {(0, 1), (0, 2)}
    worst = report.failures[0]
    assert (worst.min_count, worst.max_count, worst.expected, worst.deviation) == (2, 4, 3, 1)
    assert "(0, 1)" in report.summary() and "expected 3" in report.summary()
    assert strength(ff) == 3 and strength(bad) == 0


def test_strength_three_chunks_match_brute_force():
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 2, size=(16, 9))
    ff = np.array(list(product(range(2), repeat=4)))
    good = np.column_stack([ff, ff[:, 0] ^ ff[:, 1] ^ ff[:, 2] ^ ff[:, 3]])
    assert is_orthogonal(good, 4) and not is_orthogonal(np.column_stack([good, good[:, 0]]), 2)
    assert is_orthogonal(arr, 3) == brute_is_oa(arr, 3, [2] * 9)


def test_balance_table_counts():
    arr = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 1]])
    table = balance_table(arr)
    assert table.shape == (2, 2, 2, 2)
    assert table[0, 1].tolist() == [[1, 1], [1, 2]]
    assert np.array_equal(table[1, 0], table[0, 1].T)
    assert np.diag(table[0, 0]).tolist() == [2, 3]


def test_mixed_levels_and_explicit_levels():
    arr = np.array(list(product(range(2), range(3))))
    assert is_orthogonal(arr, 2)
    # declaring a third level that never appears makes the array unbalanced
    assert not is_orthogonal(arr, 1, levels=(3, 3))


@pytest.mark.parametrize("bad", [np.zeros((0, 3)), np.array([1, 2, 3]), np.array([[0.5, 1]]),
                                 np.array([[-1, 0]])])
def test_bad_arrays(bad):
    with pytest.raises(HscaleError):
        check_strength(bad, 1)


def test_level_out_of_range_and_strength_too_high():
    with pytest.raises(HscaleError, match="column 0"):
        check_strength(np.array([[2, 0], [0, 1]]), 1, levels=(2, 2))
    with pytest.raises(HscaleError, match="exceeds"):
        check_strength(np.array([[0, 1], [1, 0]]), 3)


def test_pydoe3_tables_checked_and_its_broken_l64_rejected():
    """pyDOE3 ships a 64-run two-level table that is not an orthogonal array."""
    pyDOE3 = pytest.importorskip("pyDOE3")
    broken = np.asarray(pyDOE3.get_orthogonal_array("L64(2^31)"))
    report = check_strength(broken, 2)
    assert not report.ok
    assert len(broken) - len(np.unique(broken, axis=0)) > 0  # duplicate rows
    assert len(report.failures) > 0 and "unbalanced" in report.summary()
    for name in ("L18(6^1 3^6)", "L81(3^40)", "L12(2^11)", "L64(4^21)"):
        assert is_orthogonal(np.asarray(pyDOE3.get_orthogonal_array(name)), 2), name


@settings(max_examples=100, deadline=None)
@given(arrays())
def test_strength_is_the_largest_t_brute_force_accepts(case):
    arr, levels = case
    expected = 0
    while expected < arr.shape[1] and brute_is_oa(arr, expected + 1, levels):
        expected += 1
    assert strength(arr, levels) == expected


def test_too_few_runs_is_a_quick_no_and_huge_checks_are_refused():
    report = check_strength(np.zeros((8, 70), dtype=np.int64) + np.arange(2)[:, None].repeat(4, 0)
                            .reshape(8, 1), 64)
    assert not report.ok and "at least" in report.reason
    wide = np.tile(np.array([[0], [1]]), (1000, 3000))  # 2000 runs, 3000 two-level factors
    with pytest.raises(HscaleError, match="multiply-adds"):
        check_strength(wide, 2)
    with pytest.raises(HscaleError, match="balance table"):
        balance_table(np.zeros((2, 5000), dtype=np.int64) + np.array([[0], [1]]))


def brute_failing_tuples(arr, t, levels):
    """Every column tuple whose level combinations are not all equally frequent."""
    out = []
    for cols in combinations(range(arr.shape[1]), t):
        if not brute_is_oa(arr[:, list(cols)], t, [levels[c] for c in cols]):
            out.append(cols)
    return out


def test_a_large_non_array_is_counted_and_only_the_first_tuples_listed():
    """A random 243 x 60 array fails all 34,220 strength-3 tuples: the report counts them,
    lists the first ten in column order and names the worst, and keeps nothing else."""
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 3, size=(243, 60))
    report = check_strength(arr, 3)
    assert not report.ok and report.tuples_checked == 34_220 and report.failed == 34_220
    assert len(report.failures) == LISTED_FAILURES == 10
    assert [f.columns for f in report.failures] == list(combinations(range(60), 3))[:10]
    assert report.worst.deviation == max(f.deviation for f in report.failures + [report.worst])
    text = report.summary()
    assert "34220 of 34220" in text and "and 34215 more" in text and "worst" in text
    oa = rao_hamming(3, 5)[:, :60]  # 243 runs, 60 columns: strength 2, not 3
    assert check_strength(oa, 2).ok and check_strength(oa[:, :40], 2).failed == 0
    # internal: tests each algebraic construction alone
    from hscale.design._algebraic import bush
    assert check_strength(bush(7, 3), 3).ok  # 343 runs, 8 columns: strength 3


@pytest.mark.parametrize("cells", [1, 7, 64, 10**9])
def test_counts_do_not_depend_on_the_block_size(monkeypatch, cells):
    """The count, the first tuples and the worst one are the same in one block or many."""
    # internal: tests the verifier's module and its listed failures
    import hscale.design._verify as verify

    rng = np.random.default_rng(3)
    good = rao_hamming(2, 4)  # 16 x 15, strength 2; strength 3 fails on some triples
    arr = np.column_stack([good, rng.integers(0, 2, size=(16, 2))])
    expected = brute_failing_tuples(arr, 3, [2] * 17)
    monkeypatch.setattr(verify, "_block_cells", lambda runs, width: cells)
    report = check_strength(arr, 3)
    assert report.failed == len(expected) > LISTED_FAILURES
    assert [f.columns for f in report.failures] == expected[:LISTED_FAILURES]
    assert report.worst.columns in expected
    pairs = check_strength(arr, 2)
    assert pairs.failed == len(brute_failing_tuples(arr, 2, [2] * 17))
    assert not is_orthogonal(arr, 3) and strength(good) == 2


def test_strength_answers_when_the_next_check_fails_early_and_refuses_when_it_would_not(
        monkeypatch):
    """A full strength-3 check of 1024 x 300 two-level columns is over the work limit, but
    the check fails on its first triple, so strength() says 2 instead of refusing."""
    # internal: tests the verifier's module and its listed failures
    import hscale.design._verify as verify

    wide = rao_hamming(2, 10)[:, :300]
    with pytest.raises(HscaleError, match="multiply-adds"):
        check_strength(wide, 3)
    assert strength(wide) == 2
    monkeypatch.setattr(verify, "MAX_CHECK_WORK", 10_000)
    full = np.array(list(product(range(2), repeat=6)))  # strength 6: no early failure
    with pytest.raises(HscaleError, match="strength 3"):
        strength(full)
