"""The label-shift generator: pathological label skew over disjoint label groups, one drift event."""

import pytest

from driftbench.errors import ConfigError
from driftbench.traces.catalog import apply_sets, generate, load_spec


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
