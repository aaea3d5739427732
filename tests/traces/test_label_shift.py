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
