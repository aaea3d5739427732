"""CFL over rounds (Sattler et al., IEEE TNNLS 2021, section III and Algorithm 1; section V, label swapping): once
federated training is near a stationary point of the joint objective (small mean update) while some clients'
updates stay large, the cluster is bipartitioned by the cosine similarity of the updates, and clients whose
data distributions conflict end up on different sides.

Replayed: ``label-swap`` on 8x8 digits with two concepts (identity and reversed labels), 8 clients that all take
part in every round, 12 rounds; 2 clients switch to the reversed labels at round 8. Training: 60 samples, 10
local steps at lr 0.1 (a round's update is then on the scale of CFL's absolute eps1 = 0.4, eps2 = 1.0).
"""

import pytest

from tests.methods.conformance.behaviour import label_swap_of_two_concepts, replay

DRIFT, ROUNDS = 8, 12
SETS = label_swap_of_two_concepts(DRIFT, ROUNDS)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return replay("label-swap", "cfl", tmp_path_factory.mktemp("cfl"), SETS)


def test_a_cluster_with_opposed_updates_splits_into_the_two_concepts(run):
    """After the label swap the mean update is small but the swapped clients' updates are large (measured at seed
    0, round 10: mean 0.36 < eps1, max 1.80 > eps2), so CFL splits; the split puts the two concepts apart (ARI 1
    from the split on, two clusters).

    Fails when CFL never splits (``should_split`` always False): one cluster, ARI 0 after the drift.
    """
    splits = run.kind("split")
    assert len(splits) == 1 and DRIFT < splits["round"].iloc[0] < ROUNDS
    after = run.rounds.loc[splits["round"].iloc[0] :]
    assert (after["ari"] == 1.0).all() and (after["n_clusters"] == 2).all()
