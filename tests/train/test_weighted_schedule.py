"""Weighted locality and adaptive K: the schedule reduces to the plain one when the weights
are equal (or the radius covers everything), partners are the weighted-nearest, and an
adaptive task's K_x harnesses fill K slots, the rest repeating its anchor."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hscale.design import distance_matrix, random_n, resolve_weights, structured, tie_key
from hscale.errors import HscaleError
from hscale.harness import factor_space

# internal: tests the schedule builder's steps
from hscale.train.planning._schedule import build_schedule
from hscale.train.spec import adaptive_k

SPACE = factor_space()
TRAIN = structured(SPACE, runs=18)
# the OA is regular (every anchor sees the same distances); a random set is not
RANDOM = random_n(SPACE, 18, seed=1)
TASKS = [f"task-{i:04d}" for i in range(300)]
WEIGHTS = resolve_weights(SPACE, {"C": 3.0, "S": 0.5})


def schedule(k, mode="locality", weights=None, radius=None, steps=40, seed=0, train=TRAIN):
    return build_schedule(SPACE, train.labels, TASKS, steps, 16, k, mode,
                          np.random.default_rng(seed), weights, radius)


def groups(frame: pd.DataFrame, k: int) -> list[pd.DataFrame]:
    """Each task occurrence's K rows in slot order (steps b*K .. b*K+K-1)."""
    frame = frame.assign(batch=frame.step // k)
    return [g.sort_values("slot") for _, g in frame.groupby(["batch", "task_id"])]


@pytest.mark.parametrize("k", [1, 2, 4, 8])
@pytest.mark.parametrize("seed", [0, 3])
def test_equal_weights_give_todays_schedule(k, seed):
    plain = schedule(k, seed=seed)
    for weights in ([1.0] * 5, [2.5] * 5, [0.3] * 5):
        pd.testing.assert_frame_equal(schedule(k, weights=weights, seed=seed), plain)


@pytest.mark.parametrize("k", [2, 4])
def test_a_radius_that_covers_the_training_set_gives_the_plain_schedule(k):
    pd.testing.assert_frame_equal(schedule(k, radius=5), schedule(k))
    pd.testing.assert_frame_equal(schedule(k, weights=WEIGHTS, radius=100),
                                  schedule(k, weights=WEIGHTS))


def test_weighted_partners_are_the_weighted_nearest():
    frame = schedule(4, weights=WEIGHTS)
    dist = tie_key(distance_matrix(TRAIN.array, weights=WEIGHTS))
    index = {label: i for i, label in enumerate(TRAIN.labels)}
    differs = 0
    for g in groups(frame, 4):
        anchor = index[g.anchor.iloc[0]]
        picked = [index[h] for h in g.harness.iloc[1:]]
        others = np.setdiff1d(np.arange(len(TRAIN.labels)), [anchor, *picked])
        assert anchor not in picked and len(set(picked)) == 3
        assert dist[anchor, picked].max() <= dist[anchor, others].min()
        differs += not (np.diff(dist[anchor, picked]) >= 0).all()
    assert differs == 0  # nearest first, slot by slot
    assert not schedule(4, weights=WEIGHTS).equals(schedule(4))  # the weights matter here


@pytest.mark.parametrize("train", [TRAIN, RANDOM], ids=["oa", "random"])
@pytest.mark.parametrize("weights, radius", [(None, 2), (None, 3), (WEIGHTS, 2.0),
                                             (WEIGHTS, 3.2)])
def test_adaptive_k_uses_the_neighbours_within_the_radius_then_the_anchor(weights, radius,
                                                                           train):
    k = 8
    frame = schedule(k, weights=weights, radius=radius, steps=80, train=train)
    assert len(frame) == 80 * 16 and sorted(frame.slot.unique()) == list(range(k))
    dist = tie_key(distance_matrix(train.array, weights=weights))
    index = {label: i for i, label in enumerate(train.labels)}
    sizes = adaptive_k(train.array, k, radius, weights)
    seen = set()
    for g in groups(frame, k):
        anchor = index[g.anchor.iloc[0]]
        labels = g.harness.tolist()
        k_x = len(set(labels))
        assert k_x == sizes[anchor]
        assert labels[:k_x] == list(dict.fromkeys(labels))  # the distinct ones come first
        assert labels[k_x:] == [labels[0]] * (k - k_x)  # then the anchor again
        assert all(dist[anchor, index[h]] <= radius + 1e-9 for h in labels)
        within = int((dist[anchor] <= radius + 1e-9).sum())
        assert k_x == min(within, k)
        seen.add(k_x)
    assert seen == set(sizes.tolist())


def test_adaptive_k_varies_with_the_anchor_of_an_irregular_training_set():
    assert len(set(adaptive_k(RANDOM.array, 8, 2).tolist())) > 1
    assert len(set(adaptive_k(RANDOM.array, 8, 2.0, WEIGHTS).tolist())) > 1
    assert len(set(adaptive_k(TRAIN.array, 8, 2.0, WEIGHTS).tolist())) == 1  # the OA is regular


def test_adaptive_k_counts():
    sizes = adaptive_k(TRAIN.array, 4, 3)
    plain = distance_matrix(TRAIN.array)
    assert sizes.tolist() == np.minimum((plain <= 3).sum(axis=1), 4).tolist()
    assert (adaptive_k(TRAIN.array, 4, 0.5) == 1).all()  # the OA's minimum distance is 3


def test_only_locality_takes_a_radius():
    for mode in ("random", "repeat"):
        with pytest.raises(HscaleError, match="takes no radius"):
            schedule(2, mode=mode, radius=2.0)
    assert len(schedule(2, mode="random", weights=WEIGHTS)) == 40 * 16
