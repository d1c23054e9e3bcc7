"""Harness-S's three pool properties on evaluations whose answers are planted: one sibling
repairs a known set of the base harness's failures and breaks one success, two siblings are
complementary (each solves half, together all), and the ranking swaps between checkpoints."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hscale.analysis import complementarity, locality

# internal: tests each pool-property estimator alone
from hscale.analysis._pool_properties import nonstationarity, pass_at_k

BASE = "S0-T0-O0-C0-W0"
TASKS = [f"t{i}" for i in range(8)]
SOLVES = {BASE: {"t0", "t1"},  # the base harness solves 2 of 8
          "repair": {"t0", "t2", "t3", "t4"},  # repairs t2-t4, breaks t1
          "left": {"t0", "t1", "t2", "t3"}, "right": {"t4", "t5", "t6", "t7"}}


def _episodes(solves=SOLVES, runs=4, step=0) -> pd.DataFrame:
    return pd.DataFrame([{"harness": h, "task_id": t, "run": r, "step": step,
                          "success": t in solved} for h, solved in solves.items()
                         for t in TASKS for r in range(runs)])


def test_locality_names_the_repaired_set_and_the_regressions():
    table = locality(_episodes(), BASE).set_index("harness")
    repair = table.loc["repair"]
    assert (repair.repaired, repair.regressed, repair.net) == (3, 1, 2)
    assert repair.repaired_tasks == "t2 t3 t4" and repair.base_failures == 6
    assert table.loc["right"].regressed == 2  # it solves neither of the base's tasks


def test_the_oracle_union_covers_more_than_any_sibling_and_the_base_at_k():
    table = complementarity(_episodes(), BASE).set_index("what")
    assert table.loc["oracle union of the siblings", "coverage"] == 100.0
    assert table.loc[["repair", "left", "right"], "coverage"].max() == 50.0
    # the base harness solves its 2 tasks every time and the rest never: pass@3 = 2 / 8
    assert table.loc["base harness, pass@3", "coverage"] == 25.0


def test_the_base_at_k_counts_its_sampled_successes():
    solves = {BASE: set(), "a": {"t0"}, "b": {"t1"}}
    frame = _episodes(solves, runs=4)
    lucky = (frame.harness == BASE) & (frame.task_id == "t5") & (frame.run == 0)
    frame.loc[lucky, "success"] = True  # 1 of 4 runs: pass@2 = 1 - C(3,2)/C(4,2) = 0.5
    row = complementarity(frame, BASE).set_index("what").loc["base harness, pass@2"]
    assert row.coverage == pytest.approx(100 * 0.5 / 8)


def test_rankings_that_swap_between_checkpoints_are_found():
    early = _episodes({"a": set(TASKS[:6]), "b": set(TASKS[:3]), "c": set(TASKS[:1])}, step=0)
    late = _episodes({"a": set(TASKS[:1]), "b": set(TASKS[:3]), "c": set(TASKS[:6])}, step=10)
    same = _episodes({"a": set(TASKS[:1]), "b": set(TASKS[:3]), "c": set(TASKS[:6])}, step=20)
    table = nonstationarity(pd.concat([early, late, same]))
    first, second = table.to_dict("records")
    assert (first["best_before"], first["best_after"]) == ("a", "c")
    assert first["kendall_tau"] == pytest.approx(-1.0) and first["swapped_pairs"] == 3
    assert second["kendall_tau"] == pytest.approx(1.0) and second["swapped_pairs"] == 0


@given(n=st.integers(1, 12), data=st.data())
def test_pass_at_k_is_the_chance_that_k_draws_hold_a_success(n, data):
    from itertools import combinations

    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    draws = list(combinations(range(n), k))  # attempts 0..c-1 succeeded
    exact = sum(any(i < c for i in d) for d in draws) / len(draws)
    assert pass_at_k(n, c, k) == pytest.approx(exact)
