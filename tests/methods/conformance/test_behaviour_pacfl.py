"""PACFL over rounds (Vahidian et al., AAAI 2023, section 3, Algorithm 1: one-shot clustering): clients' data
subspaces (principal vectors) are compared once, by principal angles, before federation; clients with the same
label distribution share a cluster, and the clusters are not revisited.

Replayed: ``label-shift`` on its synthetic source (20 classes, 5 disjoint groups of 4 labels), 10 clients, 5 per
round, 8 rounds; half the clients move to another group at round 4.
"""

import pytest

from tests.methods.conformance.behaviour import replay

DRIFT = 4
SETS = {"clients": 10, "rounds": 8, "drift_round": DRIFT, "train.participants": 5}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-shift", "pacfl", tmp_path_factory.mktemp("pacfl"), SETS)


def test_one_shot_clusters_are_the_label_groups_and_stay_fixed(run):
    """One ``recluster_global`` event, at round 0, whose partition is the label groups (ARI 1 before the drift);
    the partition never changes after it (measured at seed 0: 5 clusters; angles 3.6-12.7 degrees).

    Fails when the angles are compared with the threshold in radians (``np.deg2rad(angles)`` passed to
    ``angle_clusters``): every pair is then "closer" than 4.9 and all clients fall into one cluster.
    """
    assert run.kind("recluster_global")["round"].tolist() == [0]
    assert [run.ari(r) for r in range(DRIFT)] == [1.0] * DRIFT
    assert (run.partitions == run.partitions[0]).all()
