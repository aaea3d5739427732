"""FedDAG over rounds (paper 001, section 3 and Algorithm 1; Data Distribution II, concept shift): after the
warm-up, clients are clustered once by the fused data and gradient proximity, and clients under the same concept
(label transform) share a cluster.

Replayed: ``label-swap`` on 8x8 digits with two concepts (identity and reversed labels) held from round 0, 8
clients that all take part in every round, 8 rounds, no drift.
"""

import pytest

from tests.methods.conformance.behaviour import replay, two_concepts_held

ROUNDS = 8
SETS = two_concepts_held(8, ROUNDS)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-swap", "feddag", tmp_path_factory.mktemp("feddag"), SETS)


def test_clusters_after_the_warm_up_match_the_concept_groups(run):
    """During the warm-up (t_g = 2 rounds) every client trains its own model; then one clustering whose clusters
    are the two concepts (ARI 1 from round 2 on, two clusters; measured at seed 0). Without the data term the fusion is
    gradient similarity alone, which section 1 ("Improper Similarity Method") says can group clients wrongly.

    Fails when the fused proximity drops the data term (``fuse(gradient, gradient, ...)`` in ``FedDAGSingle.place``):
    gradient angles alone give ARI 0.09 here.
    """
    warmup = 2
    assert run.kind("recluster_global")["round"].tolist() == [warmup]
    after = run.rounds.loc[warmup:]
    assert (after["ari"] == 1.0).all() and (after["n_clusters"] == 2).all()
