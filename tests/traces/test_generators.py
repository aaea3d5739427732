"""The static and label-swap generators and the named catalog."""

import numpy as np
import pytest

from driftbench.errors import ConfigError, UnknownNameError
from driftbench.traces.catalog import apply_sets, generate, load_spec, resolve
from driftbench.traces.label_swap import concept_permutation


def make(name, **sets):
    return generate(apply_sets(load_spec(name), {k: str(v) for k, v in sets.items()}))


def test_concepts_are_distinct_permutations():
    perms = [concept_permutation(k, 10) for k in range(10)]
    assert len({p.tobytes() for p in perms}) == 10
    for p in perms:
        assert sorted(p.tolist()) == list(range(10))
    assert concept_permutation(1, 10).tolist() == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0]
    assert concept_permutation(2, 10).tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]


def test_label_swap_moves_a_fraction_of_clients_to_a_new_concept_at_each_event():
    trace, pool = make("label-swap", clients=20, rounds=30, drift_every=10, fraction=0.5, concepts=3)
    events = trace.events()
    assert [e.round for e in events] == [10, 20]
    assert all(len(e.clients) == 10 and e.kind == "concept" for e in events)
    assert trace.groups_at(0).tolist() == [0] * 20
    for event, target in zip(events, (1, 2)):
        assert set(trace.groups_at(event.round)[event.clients]) == {target}
        unaffected = np.setdiff1d(np.arange(20), event.clients)
        assert np.array_equal(trace.groups_at(event.round)[unaffected], trace.groups_at(event.round - 1)[unaffected])
    seg = trace.segments_at(29)
    for c in range(20):
        assert np.array_equal(trace.label_maps[trace.seg_map[seg[c]]], concept_permutation(trace.groups_at(29)[c], 10))
        assert len(trace.train_indices(seg[c])) == 60
    train = np.concatenate([trace.train_indices(s) for s in range(len(trace.seg_start))])
    test = np.concatenate([trace.test_indices(s) for s in range(len(trace.seg_start))])
    assert not set(train) & set(test)  # test samples are never trained on


def test_incremental_events_spread_over_ramp_rounds():
    trace, _ = make("label-swap", clients=20, rounds=30, drift_every=10, fraction=0.5, ramp_rounds=5)
    assert [e.round for e in trace.events()] == [10, 11, 12, 13, 14, 20, 21, 22, 23, 24]
    assert sum(len(e.clients) for e in trace.events()[:5]) == 10


def test_generation_is_deterministic_and_seeded():
    a, _ = make("label-swap", clients=10, rounds=20)
    b, _ = make("label-swap", clients=10, rounds=20)
    c, _ = make("label-swap", clients=10, rounds=20, seed=1)
    assert a.content_hash() == b.content_hash() != c.content_hash()


def test_default_swap_keeps_the_traces_drawn_before_it():
    default, _ = make("label-swap")
    named, _ = make("label-swap", swap="global")
    assert "swap" not in default.info["params"]
    assert default.content_hash() == named.content_hash()
    # label-swap at seed 0 as drawn before the swap parameter existed (results are keyed by this hash)
    assert default.content_hash() == "a1320022cfc8e9bc10e5fd5859293505c53adfa620579a4566034c558adbfa12"


def test_client_swaps_transpose_two_labels_of_each_chosen_client_at_each_event():
    trace, _ = make("label-swap", clients=20, rounds=30, drift_every=10, fraction=0.5, swap="client")
    events = trace.events()
    assert [e.round for e in events] == [10, 20]
    assert all(len(e.clients) == 10 and e.kind == "concept" for e in events)
    for event in events:
        before, after = trace.segments_at(event.round - 1), trace.segments_at(event.round)
        for c in range(20):
            old, new = trace.label_maps[trace.seg_map[before[c]]], trace.label_maps[trace.seg_map[after[c]]]
            changed = np.flatnonzero(old != new)
            if c in event.clients:
                assert len(changed) == 2 and new[changed].tolist() == old[changed[::-1]].tolist()
            else:
                assert len(changed) == 0
    assert trace.groups_at(0).tolist() == [0] * 20
    for rnd in (0, 10, 29):
        held, groups = trace.seg_map[trace.segments_at(rnd)], trace.groups_at(rnd)
        assert np.array_equal(held[:, None] == held[None], groups[:, None] == groups[None])  # a group is one label map
    assert len(set(trace.groups_at(29).tolist())) > 3  # the swaps are the clients' own, not a few shared concepts


def test_client_swaps_are_deterministic_per_seed():
    a, _ = make("label-swap", clients=10, rounds=20, swap="client")
    b, _ = make("label-swap", clients=10, rounds=20, swap="client")
    c, _ = make("label-swap", clients=10, rounds=20, swap="client", seed=1)
    g, _ = make("label-swap", clients=10, rounds=20)
    assert a.content_hash() == b.content_hash() != c.content_hash()
    assert a.info["params"]["swap"] == "client" and a.content_hash() != g.content_hash()


def test_static_trace_has_groups_with_distinct_label_skew_and_no_events():
    trace, pool = make("static", clients=12, groups=3, alpha=0.1)
    assert len(trace.events()) == 0
    groups = trace.groups_at(0)
    assert sorted(set(groups.tolist())) == [0, 1, 2]
    dists = np.stack([trace.label_distribution(s, pool.y) for s in trace.segments_at(0)])
    within = np.mean(
        [np.abs(dists[i] - dists[j]).sum() for i in range(12) for j in range(12) if i < j and groups[i] == groups[j]]
    )
    across = np.mean([np.abs(dists[i] - dists[j]).sum() for i in range(12) for j in range(12) if groups[i] != groups[j]])
    assert within < across


def test_bad_set_values_name_the_key_and_what_is_allowed():
    spec = load_spec("label-swap")
    with pytest.raises(ConfigError, match="fraction must be in \\[0, 1\\]"):
        apply_sets(spec, {"fraction": "1.5"})
    with pytest.raises(ConfigError, match="swap must be one of global, client, got 'both'"):
        apply_sets(spec, {"swap": "both"})
    with pytest.raises(ConfigError, match="clients: expected int"):
        apply_sets(spec, {"clients": "many"})
    with pytest.raises(ConfigError, match="unknown key for trace 'label-swap'.*concepts"):
        apply_sets(spec, {"colour": "red"})
    with pytest.raises(UnknownNameError, match="unknown source 'imagenet'; valid: cifar10, .*digits, .*synthetic"):
        apply_sets(spec, {"source": "imagenet"})
    with pytest.raises(UnknownNameError, match="did you mean 'label-swap'"):
        resolve("label-swop", {})
    with pytest.raises(ConfigError, match="concepts must be <= the source's 10 classes"):
        make("label-swap", concepts=11)


def test_training_settings_can_be_set_bare_or_prefixed():
    spec = apply_sets(
        load_spec("label-swap"), {"lr": "0.2", "train.batch_size": "7", "source": "synthetic", "source.classes": "10"}
    )
    assert spec.train.lr == 0.2 and spec.train.batch_size == 7
    assert spec.source == "synthetic" and spec.source_params.classes == 10


def test_pool_splits_are_used_only_when_both_train_and_test_exist():
    import pandas as pd

    from driftbench.data.pool import Pool
    from driftbench.traces.sampling import train_test_ids

    def pool(splits):
        return Pool(
            "t", np.zeros((len(splits), 1, 2, 2), np.float32), np.zeros(len(splits), np.int64), 2, pd.DataFrame({"split": splits})
        )

    train, test = train_test_ids(np.random.default_rng(0), pool(["train", "test", "train", "val"]), 0.5)
    assert train.tolist() == [0, 2] and test.tolist() == [1]
    train, test = train_test_ids(np.random.default_rng(0), pool(["val", "test", "test", "val"]), 0.5)
    assert len(train) == 2 and len(test) == 2 and not set(train) & set(test)
