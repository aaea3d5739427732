"""Static clustering over rounds (FIELDING, paper 003, section 3 baseline "static": clients clustered once, at the
start, by their label distributions, never re-clustered): it finds the label groups at round 0 and keeps that
partition whatever drifts later.

Replayed: ``label-shift`` on 8x8 digits with rho = 0.5 (two disjoint groups of 5 labels), 8 clients, 4 per
round, 8 rounds; half the clients move to the other label group at round 4.
"""

import pytest

from tests.methods.conformance.behaviour import replay

DRIFT = 4
SETS = {"source": "digits", "rho": 0.5, "clients": 8, "rounds": 8, "drift_round": DRIFT, "train.participants": 4}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-shift", "static", tmp_path_factory.mktemp("static"), SETS)


def test_clusters_once_on_the_label_groups_and_never_changes_the_assignment(run):
    """One clustering (a ``recluster_global`` event at round 0 only) that matches the label groups (ARI 1 before
    the drift), and the same partition after every round, so after the label drift it no longer matches
    (ARI < 1; measured -0.17 at seed 0).

    Fails when the method re-clusters every round (the ``rnd == 0`` test in ``StaticClustering.plan`` dropped):
    a ``recluster_global`` event in every round.
    """
    assert run.kind("recluster_global")["round"].tolist() == [0]
    assert [run.ari(r) for r in range(DRIFT)] == [1.0] * DRIFT
    assert (run.partitions == run.partitions[0]).all() and run.summary.partition_changes == 0
    assert run.ari(DRIFT) < 1
