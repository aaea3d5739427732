"""FL+HC and One-Shot over rounds (Briggs, Fan and Andras, IJCNN 2020, Algorithm FL+HC; MSCFL 002's One-Shot
baseline): FedAvg for the warm-up rounds (one model), then one round in which every client trains the global model
and the server clusters their updates; the clusters, which are the label groups, then stay fixed whatever drifts.

Replayed: ``label-shift`` on 8x8 digits with rho = 0.5 (two disjoint groups of 5 labels), 8 clients, 4 per round,
8 rounds; half the clients move to the other label group at round 5. FL+HC: warm-up 2 rounds, Ward into K = 2;
One-Shot: k-means into K = 2 at round 0.

Mutations each test was run against (made in ``driftbench/methods/flhc.py``, seen to fail, reverted):
- re-clustering every round from the clustering round on (``rnd >= warmup`` in ``plan``, ``rnd < warmup`` in
  ``aggregate``): both tests;
- the clustering round trains only the round's uniform sample, the others staying in cluster 0: both tests;
- k ignored (k-means asked for one cluster): One-Shot's test.
"""

import pytest

from tests.methods.conformance.behaviour import replay

WARMUP, DRIFT, ROUNDS = 2, 5, 8
SETS = {"source": "digits", "rho": 0.5, "clients": 8, "rounds": ROUNDS, "drift_round": DRIFT, "train.participants": 4}


@pytest.fixture(scope="module")
def flhc(tmp_path_factory):
    return replay("label-shift", "flhc", tmp_path_factory.mktemp("flhc"), SETS, {"warmup": WARMUP, "k": 2})


@pytest.fixture(scope="module")
def one_shot(tmp_path_factory):
    return replay("label-shift", "one-shot", tmp_path_factory.mktemp("one-shot"), SETS, {"k": 2})


def test_fl_hc_clusters_every_clients_update_once_after_the_warm_up(flhc):
    """One model during the 2 warm-up rounds; at round 2 all 8 clients upload (twice a round's 4 uploads) and the
    one ``recluster_global`` event splits them into the label groups (ARI 1 until the drift); the partition then
    never changes, so after the drift it no longer matches (ARI < 1; measured -0.17 at seed 0).

    Fails when it re-clusters every round (all 8 upload and a ``recluster_global`` event in every round from 2 on),
    and when the clustering round trains only the round's 4 sampled clients (the uploads do not double; the 4
    others stay in cluster 0).
    """
    rounds = flhc.rounds
    uploads = rounds["upload_bytes"].diff().fillna(rounds["upload_bytes"].iloc[0])
    assert (uploads.drop(WARMUP) == uploads[0]).all() and uploads[WARMUP] == 2 * uploads[0]
    assert flhc.kind("recluster_global")["round"].tolist() == [WARMUP]
    assert (rounds.loc[: WARMUP - 1, "n_clusters"] == 1).all() and (rounds.loc[WARMUP:, "n_clusters"] == 2).all()
    assert [flhc.ari(r) for r in range(WARMUP, DRIFT)] == [1.0] * (DRIFT - WARMUP)
    assert (flhc.partitions[WARMUP:] == flhc.partitions[WARMUP]).all() and flhc.ari(DRIFT) < 1


def test_one_shot_k_means_of_the_first_rounds_updates_finds_the_groups_and_keeps_them(one_shot):
    """One ``recluster_global`` event, at round 0, after every client's first training from the initial model: its
    partition is the label groups (ARI 1 before the drift) and never changes (ARI < 1 after; -0.17 at seed 0).

    Fails when it re-clusters every round, when the clustering round trains only the round's 4 sampled clients,
    and when k is ignored (one cluster: ARI 0).
    """
    assert one_shot.kind("recluster_global")["round"].tolist() == [0]
    assert [one_shot.ari(r) for r in range(DRIFT)] == [1.0] * DRIFT
    assert (one_shot.partitions == one_shot.partitions[0]).all() and one_shot.ari(DRIFT) < 1
