"""FedCCFA over rounds (Chen et al., NeurIPS 2024; the authors' ``merge_classifiers``): the server clusters the
participants' balanced classifiers class by class, so a client whose labels of two classes are swapped parts from
the others on those two classes only, and keeps sharing every other class's classifier row with them.

Replayed: ``label-swap`` with client swaps (``swap = "client"``, the FedCCFA paper's sudden drift: a client swaps
two labels) on 8x8 digits, 8 clients that all take part in every round, 8 rounds; at round 6 two clients each
swap a pair of labels drawn for them (seed 0: client 2 swaps 6 and 8, client 7 swaps 3 and 7). Training: 200
samples (so that the balanced subsample holds 5 samples of most classes), 10 local steps at lr 0.1.
Fails (checked) when every class is clustered on the whole classifier instead of its own row
(``balanced_rows.reshape(len(participants), -1)`` for ``balanced_rows[:, c]`` in ``FedCCFA.aggregate``).
"""

import numpy as np
import pytest

from tests.methods.conformance.behaviour import replay

DRIFT, ROUNDS = 6, 8
SETS = {
    "clients": 8,
    "rounds": ROUNDS,
    "concepts": 2,
    "initial_concepts": 1,
    "swap": "client",
    "drift_every": DRIFT,
    "fraction": 0.25,
    "train_samples": 200,
    "train.local_steps": 10,
    "train.lr": 0.1,
    "train.participants": 8,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-swap", "fedccfa", tmp_path_factory.mktemp("fedccfa"), SETS)


def swapped_classes(run, client: int) -> set[int]:
    """The classes whose labels ``client``'s map changed at the drift."""
    stream, trace = run.trace.stream, run.trace
    before, after = (stream.label_maps[stream.seg_map[trace.segments_at(r)[client]]] for r in (DRIFT - 1, DRIFT))
    return set(np.flatnonzero(before != after).tolist())


def test_a_label_swap_splits_the_swapped_classes_rows_of_the_drifted_clients_only(run):
    """From the drift on, the only events naming a drifted client are its ``split`` at the drift round on exactly
    the two classes it swapped (event values), and no drifted client shares its classifier with an undrifted one
    after any round from the drift on (its other classes stay merged; measured at seed 0: 6 and 8 for client 2,
    3 and 7 for client 7).

    Fails when each class is clustered on the whole classifier (every class's rows of a drifted client split).
    """
    drifted = run.trace.changed_at(DRIFT)
    assert len(drifted) == 2
    later = run.events[run.events["round"] >= DRIFT]
    for client in drifted:
        named = later[later["clients"].map(lambda ids, c=client: str(c) in ids.split())]
        assert set(named["kind"]) == {"split"} and set(named["round"]) == {DRIFT}
        assert set(named["value"].astype(int)) == swapped_classes(run, client) and len(swapped_classes(run, client)) == 2
    for rnd in range(DRIFT, ROUNDS):
        groups = run.partitions[rnd]
        undrifted = np.setdiff1d(np.arange(run.trace.num_clients), drifted)
        assert not set(groups[drifted]) & set(groups[undrifted])
