"""CFLGT over rounds (paper 004, Algorithm 1 and section V.A, scenario 1): FedAvg pre-training for 25 rounds, then
one Affinity Propagation clustering of the clients' gradient trajectories, whose clusters are the label
combinations; the clusters stay fixed afterwards.

Replayed: ``label-combos`` on 8x8 digits, 3 combinations of 2 labels, 10 clients, 5 per round, 27 rounds (the
paper's 25 pre-training rounds, then 2).
"""

import pytest

from tests.methods.conformance.behaviour import replay

PRETRAIN, ROUNDS = 25, 27
SETS = {"source": "digits", "clients": 10, "rounds": ROUNDS, "combos": 3, "train.participants": 5}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-combos", "cflgt", tmp_path_factory.mktemp("cflgt"), SETS)


def test_affinity_propagation_after_pretraining_finds_the_label_combinations_and_keeps_them(run):
    """One cluster during pre-training; one ``recluster_global`` event, at round 25, whose clusters are the label
    combinations (ARI 1, 3 clusters; measured at seed 0: AP converged in 180 iterations); no change afterwards.

    Fails when Affinity Propagation is given the trajectory distances as similarities (``similarity = distances``
    in ``affinity_clusters``): ARI 0.
    """
    assert (run.rounds.loc[: PRETRAIN - 1, "n_clusters"] == 1).all()
    assert run.kind("recluster_global")["round"].tolist() == [PRETRAIN]
    after = run.rounds.loc[PRETRAIN:]
    assert (after["ari"] == 1.0).all() and (after["n_clusters"] == 3).all()
    assert (run.partitions[PRETRAIN:] == run.partitions[PRETRAIN]).all()
