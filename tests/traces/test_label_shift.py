"""The label-shift generator: pathological label skew over disjoint label groups, one drift event."""

import numpy as np
import pytest

from driftbench.errors import ConfigError
from driftbench.traces.catalog import apply_sets, generate, load_spec
from driftbench.traces.label_shift import MIN_TRAIN


def make(**sets):
    return generate(apply_sets(load_spec("label-shift"), {k: str(v) for k, v in sets.items()}))


def test_clients_hold_one_label_group_and_movers_switch_to_another_at_the_drift_round():
    trace, pool = make(clients=20, rounds=12, drift_round=5, fraction=0.5, rho=0.2)
    labels = lambda seg: set(trace.train_labels(seg, pool.y).tolist())  # noqa: E731
    before, after = trace.segments_at(4), trace.segments_at(5)
    per_group = round(0.2 * pool.num_classes)
    groups = {}
    for client, seg in enumerate(before):
        assert len(labels(seg)) <= per_group
        groups.setdefault(int(trace.groups_at(4)[client]), set()).update(labels(seg))
    assert len(groups) == 5 and all(len(ls) == per_group for ls in groups.values())
    assert not set.intersection(*groups.values())  # disjoint label groups
    (event,) = trace.events()
    assert event.round == 5 and event.kind == "label" and len(event.clients) == 10
    for client in event.clients:
        assert labels(after[client]) <= groups[int(trace.groups_at(5)[client])]
        assert not labels(after[client]) & labels(before[client])
        assert set(trace.test_indices(after[client])).isdisjoint(trace.train_indices(after[client]))
    assert event.magnitude == pytest.approx(2.0)


def test_rho_and_drift_round_are_checked():
    with pytest.raises(ConfigError, match="rho must be in"):
        make(rho=0.9)
    with pytest.raises(ConfigError, match="drift_round must be in 1..rounds-1"):
        make(rounds=50, drift_round=61)


# trace_hash of label-shift at seed 0 before quantity_alpha existed: the default and FedDAG's workload (no drift, 10 classes)
HASH_DEFAULT = "c71be7e066d9bcc60ebcfb2df27abdaeb90e195172adb5f89d324d5d650f54e4"
HASH_NO_DRIFT_10 = "daccd814d935646fdf10c0fec7a8573382b6c4261b5b7c81eec7348c5b736221"


def test_quantity_alpha_left_off_keeps_the_trace_bit_identical():
    trace, _ = make(seed=0)
    assert trace.content_hash() == HASH_DEFAULT
    assert "quantity_alpha" not in trace.info["params"]
    assert make(seed=0, fraction=0, **{"source.classes": 10})[0].content_hash() == HASH_NO_DRIFT_10
    assert make(seed=0, quantity_alpha="none")[0].content_hash() == HASH_DEFAULT


def sizes(trace):
    return np.diff(trace.arrays()["train_ptr"])


def test_quantity_alpha_skews_client_sizes_within_each_label_group():
    trace, pool = make(clients=20, rounds=12, drift_round=5, fraction=0, quantity_alpha=0.25, **{"source.classes": 10})
    n, group = sizes(trace), trace.groups_at(0)
    uniform = sizes(make(clients=20, rounds=12, drift_round=5, fraction=0, **{"source.classes": 10})[0])
    assert (uniform == 60).all()
    assert n.min() >= MIN_TRAIN and n.max() > 3 * n.min()  # Dirichlet(0.25) over 4 clients a group: far from even
    for g in np.unique(group):
        assert n[group == g].sum() == 60 * (group == g).sum()  # a group keeps its samples, split unevenly
    for seg in trace.segments_at(0):
        held = set(trace.train_labels(seg, pool.y).tolist())
        assert set(pool.y[trace.test_indices(seg)].tolist()) <= held  # test samples follow the client's label mix


def test_quantity_skew_is_deterministic_per_seed_and_movers_keep_their_size():
    one, _ = make(clients=20, rounds=12, drift_round=5, quantity_alpha=0.25, seed=1)
    before, after = one.segments_at(4), one.segments_at(5)
    (event,) = one.events()
    assert [len(one.train_indices(after[c])) for c in event.clients] == [len(one.train_indices(before[c])) for c in event.clients]
    assert make(clients=20, rounds=12, drift_round=5, quantity_alpha=0.25, seed=1)[0].content_hash() == one.content_hash()
    assert not np.array_equal(sizes(make(clients=20, rounds=12, drift_round=5, quantity_alpha=0.25, seed=2)[0]), sizes(one))


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_quantity_alpha_must_be_a_positive_number(value):
    with pytest.raises(ConfigError, match=r"quantity_alpha must be a number > 0 \(or none: no quantity skew\), got"):
        make(quantity_alpha=value)


def test_quantity_alpha_of_the_wrong_type_names_the_field():
    with pytest.raises(ConfigError, match="quantity_alpha: expected float, got 'many'"):
        make(quantity_alpha="many")


# trace_hash at seed 0 on main before drift_every and skew existed: MSCFL's Table 1 label workload
HASH_MSCFL_TABLE1 = "6b235582279e7ca829d3e8fce386c6df5dea79b5723e8ecbc719b6870762f5f6"


def test_drift_every_and_skew_left_at_their_defaults_keep_the_trace_bit_identical():
    trace, _ = make(seed=0, drift_every=0, skew="pathological")
    assert trace.content_hash() == HASH_DEFAULT
    assert "drift_every" not in trace.info["params"] and "skew" not in trace.info["params"]
    mscfl = make(seed=0, fraction=0, clients=50, rounds=100, **{"source.classes": 10})[0]
    assert mscfl.content_hash() == HASH_MSCFL_TABLE1


def test_drift_every_moves_a_fraction_to_another_group_at_every_event_and_updates_the_groups():
    trace, pool = make(clients=20, rounds=35, drift_round=5, drift_every=5, fraction=0.3, seed=3)
    assert trace.info["params"]["drift_every"] == 5
    events = trace.events()
    assert [e.round for e in events] == [5, 10, 15, 20, 25, 30] and all(e.kind == "label" for e in events)
    labels = lambda seg: set(trace.train_labels(seg, pool.y).tolist())  # noqa: E731
    group_labels = {}
    for rnd in range(35):
        for client, seg in enumerate(trace.segments_at(rnd)):
            group_labels.setdefault(int(trace.groups_at(rnd)[client]), set()).update(labels(seg))
    assert len(group_labels) == 5 and not set.intersection(*group_labels.values())
    for event in events:
        assert len(event.clients) == 6
        before, after = trace.groups_at(event.round - 1), trace.groups_at(event.round)
        moved = np.flatnonzero(before != after)
        assert set(moved) == set(event.clients)  # every mover changes group, nobody else does
        assert (trace.segments_at(event.round - 1) != trace.segments_at(event.round)).sum() == len(moved)
        for client in event.clients:
            assert labels(trace.segments_at(event.round)[client]) <= group_labels[int(after[client])]
    assert len({tuple(e.clients) for e in events}) > 1  # each event draws its own movers


def test_random_skew_gives_each_client_rho_c_labels_overlapping_between_clients():
    trace, pool = make(clients=30, rounds=12, drift_round=5, fraction=0.5, skew="random", train_samples=200, seed=1)
    per_client = round(0.2 * pool.num_classes)
    held = [frozenset(trace.train_labels(seg, pool.y).tolist()) for seg in trace.segments_at(0)]
    assert all(len(labels) == per_client for labels in held)
    assert any(a & b and a != b for a in held for b in held)  # label sets overlap without being one group
    assert len(set().union(*held)) > 5 * per_client // 2  # not confined to a few disjoint groups
    group = trace.groups_at(0)
    for a in range(len(held)):
        for b in range(len(held)):
            assert (group[a] == group[b]) == (held[a] == held[b])  # a group is a label set
    (event,) = trace.events()
    after = trace.segments_at(5)
    for client in event.clients:
        now = frozenset(trace.train_labels(after[client], pool.y).tolist())
        assert len(now) == per_client and now != held[client]
        assert trace.groups_at(5)[client] != group[client]


def test_drift_every_and_skew_are_checked():
    with pytest.raises(ConfigError, match=r"drift_every must be >= 0 \(0: one event at drift_round\), got -5"):
        make(drift_every=-5)
    with pytest.raises(ConfigError, match="skew must be one of pathological, random, got 'dirichlet'"):
        make(skew="dirichlet")
