"""Every search is a pure function of its arguments: a busy CPU beside it changes nothing.

The searches used to stop on wall-clock budgets, so on a loaded machine ``design oa 4^10``
returned N = 64 instead of 48. They now count steps; these tests run each search idle and
again beside a spinning thread (with a short switch interval it takes most of the CPU from the
search, a slowdown of about ten times) and compare the arrays.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from hscale.design import difference_scheme, orthogonal_array

# internal: tests the OA search itself
from hscale.design._search import _searched_scheme, search_oa

_SPIN = """
import sys, threading
sys.setswitchinterval(0.0005)
def spin():
    while True:
        pass
threading.Thread(target=spin, daemon=True).start()
"""


@contextmanager
def busy() -> Iterator[None]:
    """A thread spinning on the CPU (and the interpreter lock) while the block runs."""
    stop = threading.Event()
    interval = sys.getswitchinterval()

    def spin() -> None:
        while not stop.is_set():
            pass

    thread = threading.Thread(target=spin, daemon=True)
    sys.setswitchinterval(0.0005)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)


def idle_and_busy(search: Callable[[], object]) -> tuple[object, object]:
    """The search's result idle and under load, with the caches cleared before each run."""
    results = []
    for load in (False, True):
        _searched_scheme.cache_clear()
        with busy() if load else _nothing():
            results.append(search())
    return results[0], results[1]


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is b
    return np.array_equal(np.asarray(a), np.asarray(b))


def test_difference_scheme_search_is_the_same_under_load():
    idle, loaded = idle_and_busy(lambda: difference_scheme(12, 12, 4))
    assert idle is not None and same(idle, loaded)


def test_a_budget_cuts_at_the_same_step_under_load():
    # D(12, 12; 4) takes about 9000 steps: found with 10000 on any machine, never with 8000
    assert same(*idle_and_busy(lambda: difference_scheme(12, 12, 4, steps=10_000)))
    assert idle_and_busy(lambda: difference_scheme(12, 12, 4, steps=8_000)) == (None, None)


@pytest.mark.parametrize("levels, runs, strength", [((3,) * 5, 54, 3), ((6,) * 5, 72, 2)])
def test_backtracking_search_is_the_same_under_load(levels, runs, strength):
    idle, loaded = idle_and_busy(lambda: search_oa(levels, runs, strength, steps=10_000))
    assert idle is not None and same(idle, loaded)


def test_automatic_n_is_the_same_under_load():
    idle, loaded = idle_and_busy(lambda: orthogonal_array("3^5", 3).array)
    assert same(idle, loaded)


def test_design_oa_4_10_gives_the_same_array_under_load(tmp_path):
    """The tester's case, run as a user runs it: N = 48 idle and beside a busy loop."""
    arrays = []
    for load in ("", _SPIN):
        out = tmp_path / f"oa{len(arrays)}.csv"
        code = load + ("from hscale.cli import main\n"
                       f"main(['design', 'oa', '4^10', '--out', {str(out)!r}])\n")
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr
        arrays.append(out.read_text())
    assert arrays[0] == arrays[1]
    assert len(arrays[0].splitlines()) == 1 + 48
