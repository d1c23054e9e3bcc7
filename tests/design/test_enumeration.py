"""Enumerating every class: OApackage's engine against OApackage itself and hscale's own
engine, the size guards shared with the CLI, and the step budget.

Tests that need OApackage skip, saying so, where it is not installed."""

import numpy as np
import pytest

from hscale.design import (
    are_isomorphic,
    candidates,
    classify,
    enumerate_oas,
    enumeration_refusal,
    gwlp,
    is_orthogonal,
    parse_levels,
)

# internal: tests the canonical-form machinery
from hscale.design._isomorphism import canonical_form, canonical_key
from hscale.errors import HscaleError


def _oapackage(reason="OApackage is not installed: pip install oapackage (hscale's own "
                          "enumerator is checked without it)"):
    return pytest.importorskip("oapackage", reason=reason, exc_type=ImportError)


def _oapackage_classes(oapackage, levels, runs, strength=2):
    """OApackage's own enumeration, called as its documentation does (levels non-increasing)."""
    lv = sorted(levels, reverse=True)
    spec = oapackage.arraydata_t(lv, runs, strength, len(lv))
    arrays = [spec.create_root()]
    for _ in range(strength, len(lv)):
        arrays = oapackage.extend_arraylist(arrays, spec)
    return arrays


def _gwlps(arrays, levels=None, oapackage=None):
    """The sorted multiset of GWLPs, by hscale (levels given) or by OApackage."""
    if oapackage is not None:
        return sorted(tuple(round(float(v), 9) for v in oapackage.GWLP(a)) for a in arrays)
    return sorted(tuple(round(float(v), 9) for v in gwlp(a, levels)) for a in arrays)


ISSUE_CASES = ([(f"3^{k}", 18) for k in range(3, 8)] + [(f"2^{k}", 16) for k in range(4, 9)]
               + [(f"2^1,3^{k}", 18) for k in range(3, 8)] + [("3^4", 27)])


@pytest.mark.parametrize("levels, runs", ISSUE_CASES)
def test_class_counts_and_gwlps_equal_oapackages(levels, runs):
    """The issue's cases: as many classes as OApackage finds, with the same GWLP multiset
    (hscale's GWLP of hscale's arrays against OApackage's GWLP of its own)."""
    oapackage = _oapackage()
    lv = parse_levels(levels)
    ours = enumerate_oas(lv, runs)
    theirs = _oapackage_classes(oapackage, lv, runs)
    assert len(ours) == len(theirs)
    assert _gwlps(ours, lv) == _gwlps(theirs, oapackage=oapackage)
    assert all(a.shape == (runs, len(lv)) for a in ours)
    assert all(is_orthogonal(a, 2, lv) for a in ours)


@pytest.mark.parametrize("levels, runs, strength", [
    ("3^3", 18, 2), ("3^4", 18, 2), ("3^5", 18, 2), ("2^4", 16, 2), ("2^5", 16, 2),
    ("2^6", 16, 2), ("2^1,3^3", 18, 2), ("3^2,2^1", 18, 2), ("2^2,3^1", 12, 2),
    ("2^5", 12, 2), ("4^1,2^3", 16, 2), ("2^3,4^1", 16, 2), ("6^1,3^3", 18, 2),
    ("2^4", 8, 3), ("2^5", 16, 3), ("2^6", 24, 3), ("3^3", 9, 2), ("3^4", 27, 3)])
def test_oapackage_engine_gives_hscales_classes(levels, runs, strength):
    """OApackage's engine and hscale's own find the same classes (hscale's canonical forms),
    OApackage's arrays pairwise non-isomorphic by them, columns in the order asked for."""
    _oapackage()
    lv = parse_levels(levels)
    theirs = enumerate_oas(lv, runs, strength, engine="oapackage")
    ours = enumerate_oas(lv, runs, strength, engine="hscale")
    keys = {canonical_key(a, lv) for a in theirs}
    assert len(keys) == len(theirs)
    assert keys == {canonical_key(a, lv) for a in ours}
    for arr in theirs:
        assert is_orthogonal(arr, strength, lv)
        assert [int(arr[:, c].max()) + 1 for c in range(len(lv))] == list(lv)
        assert np.array_equal(arr, arr[np.lexsort(arr.T[::-1])])  # rows sorted
    again = enumerate_oas(lv, runs, strength, engine="oapackage")  # deterministic
    assert all(np.array_equal(a, b) for a, b in zip(theirs, again, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("runs,levels,strength", [(18, [3] * 7, 2), (16, [2] * 6, 2),
                                                  (18, [3] * 7 + [2], 2), (24, [2] * 6, 3)])
def test_own_engine_counts_match_oapackage(runs, levels, strength):
    """hscale's own enumerator, column by column, against OApackage's extend_arraylist."""
    oapackage = _oapackage()
    k = len(levels)
    spec = oapackage.arraydata_t(levels, runs, strength, k)
    arrays = [spec.create_root()]
    for m in range(strength + 1, k + 1):
        arrays = oapackage.extend_arraylist(arrays, spec)
        ours = enumerate_oas(levels[:m], runs, strength, engine="hscale", steps=10**8)
        assert len(ours) == len(arrays), m
    theirs = [np.array(a) for a in arrays]
    assert len(classify(theirs, levels)) == len(theirs)
    assert all(any(are_isomorphic(t, o, levels, levels) for o in ours) for t in theirs)
    assert _gwlps(ours, levels) == _gwlps(arrays, oapackage=oapackage)


def test_without_oapackage_hscales_engine_runs(monkeypatch):
    # internal: tests the enumerator's internals
    import hscale.design._enumeration as iso

    monkeypatch.setattr(iso, "oapackage_available", lambda: False)
    found = enumerate_oas("3^4", 18)
    assert len(found) == 12
    with pytest.raises(HscaleError, match="not installed"):
        enumerate_oas("3^4", 18, engine="oapackage")
    with pytest.raises(HscaleError, match="engine"):
        enumerate_oas("3^4", 18, engine="nauty")


def test_strength_one_runs_on_hscales_engine():
    """OApackage crashes on some strength-1 requests (OA(4; 2^5)): hscale's engine runs them."""
    assert len(enumerate_oas("2^5", 4, strength=1)) == len(
        enumerate_oas("2^5", 4, strength=1, engine="hscale"))
    with pytest.raises(HscaleError, match="strength 2 or more"):
        enumerate_oas("2^5", 4, strength=1, engine="oapackage")


def test_oapackage_output_is_checked(monkeypatch):
    """hscale verifies what the C++ engine returns: a non-array or a repeat is a bug, loudly."""
    # internal: tests the enumerator's internals
    import hscale.design._enumeration as iso

    _oapackage()
    good = iso._enumerate_oapackage

    def broken(lv, runs, t, progress, budget):
        reps = good(lv, runs, t, progress, budget)
        bad = reps[0].copy()
        bad[0, 0] = (bad[0, 0] + 1) % lv[0]
        return [bad, *reps[1:]]

    monkeypatch.setattr(iso, "_enumerate_oapackage", broken)
    with pytest.raises(RuntimeError, match="not an OA"):
        enumerate_oas("3^4", 18, engine="oapackage")
    monkeypatch.setattr(iso, "_enumerate_oapackage",
                        lambda *a: (lambda r: [r[0], r[0]])(good(*a)))
    with pytest.raises(RuntimeError, match="twice"):
        enumerate_oas("3^4", 18, engine="oapackage")


@pytest.mark.parametrize("levels, runs", [("2^15", 16), ("2^23", 24), ("2^4", 28),
                                          ("9^1,3^3", 27), ("12^1,2^2", 24)])
def test_enumerations_past_the_limits_are_refused_at_once(levels, runs):
    import time

    start = time.perf_counter()
    with pytest.raises(HscaleError, match="enumerator") as info:
        enumerate_oas(levels, runs)
    assert time.perf_counter() - start < 1
    assert str(info.value) == str(enumeration_refusal(levels, runs))
    with pytest.raises(HscaleError, match="enumerator"):
        candidates(levels, runs)


def test_an_exploding_enumeration_stops_within_seconds():
    """OA(27; 3^5) has 187,188 classes: its fifth column's first extensions show it."""
    import time

    _oapackage()  # hscale's own engine spends its whole budget first (about ten seconds)
    start = time.perf_counter()
    with pytest.raises(HscaleError, match="more than 1000000 steps of hscale's enumerator"):
        enumerate_oas("3^5", 27)
    assert time.perf_counter() - start < 10


@pytest.mark.parametrize("levels, runs", [("2^15", 16), ("9^1,3^3", 27), ("3^5", 27)])
def test_the_cli_and_the_api_refuse_alike(levels, runs):
    """hscale design candidates refuses exactly what enumerate_oas and candidates refuse."""
    from tests.cli import hscale

    if runs == 27 and levels == "3^5":
        _oapackage()  # hscale's own engine spends its whole budget, three times over
    with pytest.raises(HscaleError) as api:
        enumerate_oas(levels, runs)
    with pytest.raises(HscaleError) as listed:
        candidates(levels, runs)
    assert listed.value.one_line() == api.value.one_line()
    cli = hscale("design", "candidates", levels, "--runs", str(runs))
    assert cli.returncode == 2
    assert cli.stderr.strip() == f"error: {api.value.one_line()}"


def test_an_infeasible_request_is_empty_whatever_its_size():
    """A bound answers first, as in the CLI (exit 1 there): no size refusal."""
    assert enumerate_oas("2^30", 24) == []
    assert enumerate_oas("3^4", 28) == []


@pytest.mark.parametrize("engine", ["oapackage", "hscale"])
def test_enumeration_and_canonical_form_stop_after_their_steps(engine):
    if engine == "oapackage":
        _oapackage()
    with pytest.raises(HscaleError, match="more than 2000 steps"):
        enumerate_oas("3^5", 18, steps=2000, engine=engine)
    assert len(enumerate_oas("3^5", 18, steps=200_000, engine=engine)) == 10
    with pytest.raises(HscaleError, match="symmetries"):
        canonical_form(enumerate_oas("2^7", 8, engine=engine)[0], steps=10)


def test_progress_reports_every_column():
    calls = []
    enumerate_oas("2^1,3^4", 18, progress=lambda *a: calls.append(a))
    assert {c[0] for c in calls} == {"column 3 of 5", "column 4 of 5", "column 5 of 5"}
    assert all(1 <= done <= total for _, done, total in calls)


@pytest.mark.parametrize("levels, runs", [("2^1,3^3", 18), ("2^5", 16), ("3^3", 27)])
def test_candidates_are_the_same_whichever_engine_enumerates(monkeypatch, levels, runs):
    """Ids, arrays and criteria do not depend on the engine: hscale's canonical forms and
    ranking rules apply to either engine's classes."""
    # internal: tests the chooser's internals
    import hscale.design._choose as choose

    # internal: tests the enumerator's internals
    import hscale.design._enumeration as enumeration

    _oapackage()
    monkeypatch.setattr(choose, "_CLASSES", {})
    fast = [(c.id, c.array.tobytes(), c.summary) for c in candidates(levels, runs)]
    monkeypatch.setattr(choose, "_CLASSES", {})
    monkeypatch.setattr(enumeration, "oapackage_available", lambda: False)
    own = [(c.id, c.array.tobytes(), c.summary) for c in candidates(levels, runs)]
    assert fast == own
