"""The label-combos generator: G distinct L-label combinations, a fixed number of samples per label."""

import numpy as np
import pytest

from driftbench.errors import ConfigError
from driftbench.traces.catalog import apply_sets, generate, load_spec


def make(**sets):
    return generate(apply_sets(load_spec("label-combos"), {k: str(v) for k, v in sets.items()}))


def test_each_client_holds_its_combination_with_fixed_samples_per_label():
    trace, pool = make(clients=30, combos=4, labels=3, train_samples=7, test_samples=2)
    assert len(trace.events()) == 0
    combos = {}
    for client, seg in enumerate(trace.segments_at(0)):
        counts = np.bincount(trace.train_labels(seg, pool.y), minlength=10)
        assert sorted(counts[counts > 0].tolist()) == [7, 7, 7]
        assert np.array_equal(np.bincount(pool.y[trace.test_indices(seg)], minlength=10) > 0, counts > 0)
        combo = tuple(np.flatnonzero(counts))
        assert combos.setdefault(int(trace.groups_at(0)[client]), combo) == combo
    assert len(set(combos.values())) == len(combos) <= 4


def test_optional_drift_repicks_a_different_combination():
    trace, pool = make(clients=20, rounds=10, drift_round=4, fraction=0.25)
    (event,) = trace.events()
    assert event.round == 4 and len(event.clients) == 5
    assert (trace.groups_at(3)[event.clients] != trace.groups_at(4)[event.clients]).all()


def test_impossible_combinations_are_refused():
    with pytest.raises(ConfigError, match="only 45 combinations of 2 of 10 classes exist"):
        make(combos=46)
