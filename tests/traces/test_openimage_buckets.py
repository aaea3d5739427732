"""The openimage-buckets generator: buckets stream in, windows keep the last rounds, FedScale pools by client."""

import numpy as np
import pandas as pd
import pytest

from driftbench.data.pool import Pool
from driftbench.errors import ConfigError
from driftbench.traces.catalog import apply_sets, generate, load_spec
from driftbench.traces.openimage_buckets import OpenImageBucketsParams, make

TINY = {
    "clients": 12,
    "rounds": 8,
    "buckets": 4,
    "bucket_rounds": 2,
    "window_rounds": 4,
    "train_samples": 32,
    "test_samples": 3,
    "groups": 2,
    "bucket_classes": 2,
    "min_classes": 4,
    "top_classes": 6,
    "source.classes": 6,
    "source.size": 8,
    "source.samples_per_class": 10,
}


def tiny(**sets):
    return generate(apply_sets(load_spec("openimage-buckets"), {k: str(v) for k, v in {**TINY, **sets}.items()}))


def test_a_bucket_arrives_every_bucket_rounds_and_the_window_keeps_two():
    trace, pool = tiny()
    assert [e.round for e in trace.events()] == [2, 4, 6] and all(e.kind == "arrival" for e in trace.events())
    assert all(len(e.clients) == 12 for e in trace.events())
    for client in range(12):
        segs = [trace.segments_at(r)[client] for r in (0, 2, 4, 6)]
        (lo0, hi0), (lo1, hi1), (lo2, hi2), (lo3, hi3) = trace.seg_train[segs]
        # buckets {0,1}, {1,2}, {2,3}, then {3}: each window starts where the bucket it drops ended
        assert lo0 == 0 < lo1 < hi0 < hi1 and lo2 == hi0 and lo3 == hi1 and hi3 == hi2
        labels = set(trace.train_labels(segs[1], pool.y).tolist())
        assert set(pool.y[trace.test_indices(segs[1])].tolist()) <= labels and len(trace.test_indices(segs[1])) == 6


def test_ground_truth_is_the_combination_of_interests_in_the_window():
    trace, pool = tiny()
    interests = np.array_split(np.arange(6), 2)
    for rnd in (0, 2, 4, 6):
        segs, truth = trace.segments_at(rnd), trace.groups_at(rnd)
        for group in np.unique(truth):
            members = [set(trace.train_labels(s, pool.y).tolist()) for s in segs[truth == group]]
            touched = {tuple(sorted({k for k, i in enumerate(interests) if ls & set(i.tolist())})) for ls in members}
            assert len(touched) == 1  # one group = one set of interests
    assert trace.num_groups <= 5  # {0}, {1} (the last window holds one bucket), {0,0}, {0,1}, {1,1}


def fedscale_pool(clients=6, per_client=30, classes=12):
    rng = np.random.default_rng(0)
    owner = np.repeat(np.arange(clients), per_client)
    y = rng.integers(0, classes, size=len(owner))
    y[owner == 0] = 0  # a client with a single class is dropped
    test_y = np.arange(classes).repeat(4)
    meta = pd.DataFrame(
        {
            "client": np.concatenate([owner, np.full(len(test_y), 99)]),
            "split": ["train"] * len(owner) + ["test"] * len(test_y),
        }
    )
    y = np.concatenate([y, test_y]).astype(np.int64)
    return Pool("fedscale-like", np.zeros((len(y), 1, 2, 2), np.uint8), y, classes, meta)


def test_fedscale_pools_keep_clients_with_enough_top_classes_and_split_their_labels_into_buckets():
    pool = fedscale_pool()
    params = OpenImageBucketsParams(
        clients=100, rounds=8, buckets=4, bucket_rounds=2, window_rounds=4, test_samples=2, top_classes=10, min_classes=4
    )
    trace = make(params, pool).build({"name": "t", "generator": "openimage-buckets"}, pool.y)
    assert trace.num_clients == 5 and trace.num_groups == 0  # client 0 dropped; no ground truth
    top = set(np.argsort(-np.bincount(pool.y[:180], minlength=12), kind="stable")[:10].tolist())
    train_split = set(np.flatnonzero(pool.meta["split"] == "train").tolist())
    for client in range(5):
        owner = client + 1
        mine = set(np.flatnonzero((pool.meta["client"] == owner) & np.isin(pool.y, list(top))).tolist())
        seq = trace.train_idx[trace.train_ptr[client] : trace.train_ptr[client + 1]]
        assert set(seq.tolist()) == mine and len(seq) == len(mine)  # every top-class sample, once
        test_seq = trace.test_idx[trace.test_ptr[client] : trace.test_ptr[client + 1]]
        assert not set(test_seq.tolist()) & train_split
        windows = [set(pool.y[trace.train_indices(trace.segments_at(r)[client])].tolist()) for r in (0, 2, 4, 6)]
        assert not windows[0] & windows[2] and not windows[1] & windows[3]  # buckets hold disjoint labels


def test_bucket_settings_are_checked():
    with pytest.raises(ConfigError, match="rounds must be <= buckets x bucket_rounds"):
        tiny(rounds=9)
    with pytest.raises(ConfigError, match="window_rounds must be in"):
        tiny(window_rounds=1)
