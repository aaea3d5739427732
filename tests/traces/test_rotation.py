"""The rotation generator: groups are quarter turns, movers switch group at each event, data is untouched."""

import numpy as np
import pytest

from driftbench.errors import ConfigError
from driftbench.traces.catalog import apply_sets, generate, load_spec


def make(**sets):
    return generate(apply_sets(load_spec("rotation"), {k: str(v) for k, v in sets.items()}))


def test_movers_switch_rotation_group_and_keep_their_samples():
    trace, _ = make(clients=20, rounds=30, drift_every=10, fraction=0.5, quarter_turns="0,1,3")
    events = trace.events()
    assert [e.round for e in events] == [10, 20] and all(e.kind == "feature" and len(e.clients) == 10 for e in events)
    turns = {0: 0, 1: 90, 2: 270}
    for rnd in (0, 15, 29):
        seg = trace.segments_at(rnd)
        assert [turns[g] for g in trace.groups_at(rnd)] == trace.seg_rotation[seg].tolist()
    for event in events:
        before, after = trace.groups_at(event.round - 1), trace.groups_at(event.round)
        assert (before[event.clients] != after[event.clients]).all()
        still = np.setdiff1d(np.arange(20), event.clients)
        assert np.array_equal(before[still], after[still])
        assert event.magnitude == 0.0  # feature drift leaves label distributions alone
    first, last = trace.segments_at(0), trace.segments_at(29)
    assert all(np.array_equal(trace.train_indices(a), trace.train_indices(b)) for a, b in zip(first, last))


def test_quarter_turns_are_checked():
    with pytest.raises(ConfigError, match="quarter_turns must be distinct values in 0..3"):
        make(quarter_turns="0,4")
    with pytest.raises(ConfigError, match="at least 2 groups"):
        make(quarter_turns="2")
