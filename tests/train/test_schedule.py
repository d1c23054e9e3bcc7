"""Assignment schedules have the statistics the papers' arms require."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hscale.design import distance_matrix, first_order, structured
from hscale.errors import HscaleError
from hscale.harness import factor_space

# internal: tests the schedule builder's steps
from hscale.train.planning._schedule import assign, build_schedule

SPACE = factor_space()
TRAIN = structured(SPACE, runs=18)
TASKS = [f"task-{i:04d}" for i in range(500)]


def schedule(mode, k, steps=300, per_step=16, seed=0, labels=None):
    return build_schedule(SPACE, labels or TRAIN.labels, TASKS, steps, per_step, k, mode,
                          np.random.default_rng(seed))


def per_task(frame):
    """Each task occurrence's harnesses in slot order (a task may recur in later epochs)."""
    first_steps = frame[frame.slot == 0][["step", "task_id"]]
    groups = []
    for step, task in first_steps.itertuples(index=False):
        rows = frame[(frame.task_id == task) & (frame.step >= step)
                     & (frame.step < step + frame.slot.max() + 1)]
        groups.append(rows.sort_values("slot"))
    return groups


def test_shape_and_successive_steps():
    frame = schedule("locality", 2, steps=20, per_step=16)
    assert list(frame.columns) == ["step", "task_id", "harness", "anchor", "slot"]
    assert len(frame) == 20 * 16 and frame.step.max() == 19
    assert (frame.groupby("step").size() == 16).all()
    for group in per_task(frame):
        assert group.step.tolist() == list(range(group.step.min(), group.step.min() + 2))
        assert group.slot.tolist() == [0, 1]
        assert group.harness.iloc[0] == group.anchor.iloc[0]


def test_anchors_are_uniform_over_the_training_set():
    frame = schedule("locality", 1, steps=300, per_step=16)
    counts = frame.anchor.value_counts().reindex(TRAIN.labels, fill_value=0)
    assert stats.chisquare(counts.to_numpy()).pvalue > 0.001


def test_locality_partners_are_the_nearest_training_configurations():
    frame = schedule("locality", 4, steps=40, per_step=16)
    train = SPACE.parse_labels(TRAIN.labels)
    for group in per_task(frame):
        anchor = SPACE.parse_label(group.anchor.iloc[0])
        dist = distance_matrix(anchor[None, :], train)[0]
        others = np.sort(dist[dist > 0])
        chosen = distance_matrix(anchor[None, :], SPACE.parse_labels(group.harness.tolist()))[0]
        assert chosen[0] == 0 and len(set(group.harness)) == 4
        assert sorted(chosen[1:].tolist()) == others[:3].tolist()


def test_ties_are_broken_by_the_seed_and_reproducible():
    a, b = schedule("locality", 2, seed=1), schedule("locality", 2, seed=1)
    c = schedule("locality", 2, seed=2)
    assert a.equals(b) and not a.equals(c)
    # the best OA has 90 pairs at distance 3, so an anchor has several equally near partners
    partners: dict[str, set[str]] = {}
    for g in per_task(a):
        partners.setdefault(g.anchor.iloc[0], set()).add(g.harness.iloc[1])
    assert max(len(p) for p in partners.values()) > 1


def test_repeat_repeats_the_anchor():
    for group in per_task(schedule("repeat", 2, steps=20)):
        assert group.harness.tolist() == [group.anchor.iloc[0]] * 2


def test_random_assignment_ignores_distance():
    train = SPACE.parse_labels(TRAIN.labels)
    rng = np.random.default_rng(0)
    chosen = assign(train, 4000, 2, "random", rng)
    dist = distance_matrix(train)[chosen[:, 0], chosen[:, 1]]
    local = assign(train, 4000, 2, "locality", np.random.default_rng(0))
    near = distance_matrix(train)[local[:, 0], local[:, 1]]
    assert (dist > 0).all() and near.max() == 3 and dist.max() == 5
    # partners are uniform over the 17 other configurations, whatever their distance
    counts = np.bincount((chosen[:, 1] - chosen[:, 0]) % 18, minlength=18)[1:]
    assert stats.chisquare(counts).pvalue > 0.001


def test_bad_requests():
    with pytest.raises(HscaleError, match="groups of K=4"):
        schedule("locality", 4, steps=30)
    with pytest.raises(HscaleError, match="at least 4"):
        schedule("locality", 4, labels=first_order(SPACE).labels)
    with pytest.raises(HscaleError, match="mode"):
        schedule("nearest", 2)
    single = build_schedule(SPACE, ["S0-T0-O0-C0-W0"], TASKS, 10, 2, 2, "repeat",
                            np.random.default_rng(0))
    assert set(single.harness) == {"S0-T0-O0-C0-W0"}


def test_rescue_schedules_every_slot_under_the_base_harness():
    base = SPACE.label(SPACE.base)
    rescue = build_schedule(SPACE, [base], TASKS, 20, 16, 2, "rescue", np.random.default_rng(3))
    assert len(rescue) == 20 * 16
    assert set(rescue.harness) == set(rescue.anchor) == {base}
    # the same tasks in the same order as Repeat-K under the base harness: only the trainer,
    # when a group fails, leaves the base harness
    repeat = build_schedule(SPACE, [base], TASKS, 20, 16, 2, "repeat", np.random.default_rng(3))
    assert rescue.equals(repeat)


def test_rescue_needs_the_base_harness_alone():
    with pytest.raises(HscaleError, match="base harness alone") as err:
        schedule("rescue", 1)
    assert "train: single" in (err.value.hint or "")


def test_a_schedule_read_back_is_in_step_and_slot_order():
    """veRL batches its rows in file order: a schedule read back is always sorted."""
    from hscale.contracts import check_schedule

    frame = pd.DataFrame({"step": [1, 0, 0], "task_id": ["c", "b", "a"],
                          "harness": ["h", "h", "h"], "anchor": ["h", "h", "h"],
                          "slot": [0, 1, 0]})
    back = check_schedule(frame, "schedule.parquet")
    assert back.task_id.tolist() == ["a", "b", "c"]
