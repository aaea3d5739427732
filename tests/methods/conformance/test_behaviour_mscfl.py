"""MSCFL over rounds (paper 002, Algorithm 1 and the "Cluster Migration Strategy"; "Clustering Accuracy
Comparison", Figure 5): clients are clustered by the structure of their pruning masks after the first round, and
later re-clustered exactly when a client's masks stop being consistent (H_t > tau H_{t-1}).

Replayed: ``rotation`` on 8x8 digits, two groups turned by 0 and 180 degrees (the paper's feature Non-IID), 8
clients that all take part in every round, 8 client rounds (each pre-trains, prunes and trains the pruned model);
2 clients switch rotation at round 6.
"""

import pytest

from tests.methods.conformance.behaviour import replay

FIRST = 0  # the first client round, after which every client has uploaded a mask
SETS = {
    "clients": 8,
    "rounds": 8,
    "quarter_turns": "0,2",
    "drift_every": 6,
    "fraction": 0.25,
    "train_samples": 60,
    "train.participants": 8,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("rotation", "mscfl", tmp_path_factory.mktemp("mscfl"), SETS)


def test_reclusters_exactly_when_some_clients_masks_are_inconsistent(run):
    """Algorithm 1 lines 12-16: after the first clustering (round 0), the server re-clusters in a round if and only
    if the consistency check flags a client (``mscfl_inconsistent_clients`` > 0); measured at seed 0: re-clusterings
    at rounds 3 and 6, with 4 and 2 clients over tau = 1.1.

    Fails when the server re-clusters after every training round (the consistency check ignored in
    ``MSCFL.aggregate``).
    """
    reclustered = run.kind("recluster_global")["round"].tolist()
    inconsistent = run.measured("mscfl_inconsistent_clients")
    assert reclustered[0] == FIRST
    assert reclustered[1:] == inconsistent.index[inconsistent > 0].tolist() != []


@pytest.mark.xfail(
    strict=True,
    reason="masks after one client round do not separate the orientations here: ARI after round 0 is 0.125 at seed 0, "
    "with 1 or 10 pre-training epochs; the paper reports ~100% for label groups and nothing for rotation "
    "(docs/methods.md, Behavioural conformance)",
)
def test_the_first_clustering_by_mask_structure_recovers_the_groups(run):
    """ "Clustering Accuracy Comparison" and Figure 5(b): recorded after the first communication round, MSCFL's
    clustering accuracy stays around 100% whatever the pruning ratios; here, ARI >= 0.9 after round 0.
    """
    assert run.rounds.loc[FIRST, "ari"] >= 0.9
