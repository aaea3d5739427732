"""FL+HC and One-Shot conformance (Briggs, Fan and Andras, IJCNN 2020; MSCFL 002's Baselines; CFLGT 004, Table II).

FL+HC runs FedAvg for n rounds; then every client trains the global model w_n and uploads its update
dw_k = w_k - w_n; agglomerative hierarchical clustering of the updates (Euclidean, Ward by default) cut at a
distance threshold or at K clusters splits the clients, and each cluster runs FedAvg from w_n for the
remaining rounds, never re-clustered. One-Shot is the same with k-means on the updates.

The cases worked by hand (one-parameter updates written as points on a line):
- updates 0, 0.2, 3, 3.2, 10: merge heights, Ward sqrt(2 |u||v| / (|u| + |v|)) |c_u - c_v|: 0.2, 0.2, then
  {0, 0.2} + {3, 3.2} at sqrt(2) x 3 = 4.243, then + {10} at sqrt(8 / 5) x 8.4 = 10.625; complete linkage 0.2,
  0.2, 3.2, 10; single 0.2, 0.2, 2.8, 6.8. Thresholds 1, 4, 7, 11 leave Ward 3, 3, 2, 1 clusters, complete 3,
  2, 2, 1, single 3, 2, 1, 1.
- updates 0, 1, 3, 5, 8 into two: Ward merges {0, 1} (1), {3, 5} (2), then {3, 5} + {8} (sqrt(4 / 3) x 4 = 4.62,
  below {0, 1} + {3, 5} at sqrt(2) x 3.5 = 4.95): {0, 1} | {3, 5, 8}, within-cluster sum of squares 0.5 + 12.67.
  k-means finds the optimum {0, 1, 3} | {5, 8}: 4.67 + 4.5 = 9.17.
- after a warm-up to the global model (5, 5), updates (1, 0), (10, 0), (0, 1), (0, 10): the update directions
  are two groups (cosine distance 0 within, 1 across); the trained parameters (6, 5), (15, 5), (5, 6), (5, 15)
  are not (cosine, average linkage: {(6, 5), (15, 5), (5, 6)} | {(5, 15)}).

Mutations each test was run against (made in ``driftbench/methods/flhc.py``, seen to fail, reverted):
- the clustering happens at round 0 whatever the warm-up (``rnd == 0`` for ``rnd == warmup``): warm-up test;
- clustering on raw parameters instead of updates (``result.params`` flattened for ``flat_updates``): cosine test;
- the clustering round's uploads averaged by the model they started from (``self.average(result)``, all into one
  cluster) instead of by their new clusters: clustering-round test;
- the linkage parameter ignored (always Ward): threshold test;
- the clusterer ignored (always hierarchical): k-means test;
- re-clustering every round from the clustering round on (``rnd >= warmup`` in ``plan``, ``rnd < warmup`` in
  ``aggregate``): no-re-clustering test.
"""

import numpy as np
import pytest
import torch

from driftbench.errors import ConfigError
from driftbench.methods.catalog import load_method
from driftbench.methods.rounds import TrainResult
from tests.methods.fakes import ScriptedClients, context, events, queries

LINE = np.array([0.0, 0.2, 3.0, 3.2, 10.0])  # the threshold case
SKEWED = np.array([0.0, 1.0, 3.0, 5.0, 8.0])  # Ward and k-means disagree


def method(name="flhc", participants=None, n=5, **sets):
    """The catalog method with ``sets``, on ``n`` clients with a two-entry model at the origin."""
    created = load_method(name, {k: str(v) for k, v in sets.items()}).create()
    created.setup(context(n, participants=participants or n))
    return created


def train(method, rnd, updates, weights=None):
    """Plan round ``rnd``; each participant comes back moved by its row of ``updates`` (client-indexed); aggregate."""
    plan = method.plan(rnd, queries(ScriptedClients()), np.random.default_rng(rnd))
    moved = torch.as_tensor(np.asarray(updates, dtype=float)[plan.participants])
    trained = {"w": method.models["w"][torch.as_tensor(plan.start_models)] + moved}
    weights = np.ones(len(updates)) if weights is None else np.asarray(weights, dtype=float)
    method.aggregate(rnd, TrainResult(plan, trained, weights[plan.participants], np.zeros(len(plan.participants))))
    return plan


def on_line(points):
    """One-parameter updates as rows (x, 0)."""
    return np.stack([points, np.zeros(len(points))], axis=1)


def groups(labels):
    """The partition as a set of frozensets of client ids."""
    return {frozenset(np.flatnonzero(labels == g).tolist()) for g in np.unique(labels)}


def test_warm_up_rounds_are_fedavg():
    """For ``warmup`` = 3 rounds FL+HC samples the same participants as FedAvg (the trace's 3 of 6), averages them
    into one model by sample counts, and clusters nothing; the clustering round (3) is every client's.

    Fails when the clustering happens at round 0 whatever the warm-up: round 0 then trains all 6 and splits.
    """
    updates = np.random.default_rng(0).normal(size=(6, 2))
    weights = np.arange(1, 7)
    flhc, fedavg = method(n=6, participants=3, warmup=3, k=2), method("fedavg", n=6, participants=3)
    for rnd in range(3):
        plans = [train(m, rnd, updates * (rnd + 1), weights) for m in (flhc, fedavg)]
        assert np.array_equal(plans[0].participants, plans[1].participants) and len(plans[0].participants) == 3
        assert flhc.num_models == 1 and torch.equal(flhc.models["w"], fedavg.models["w"])
    assert events(flhc) == []
    assert train(flhc, 3, updates).participants.tolist() == list(range(6))


def test_the_clustering_round_clusters_updates_to_the_global_model_and_each_cluster_starts_from_it():
    """Round 0 (warm-up) moves the global model to g = (1, 2); at round 1 every client trains g and comes back
    moved by 0, 0.2, 3, 3.2, 10 along x; Ward into K = 2: {0, 1, 2, 3} | {4}. Each cluster's model is g plus its
    members' sample-weighted mean update (weights 1, 3, 1, 1, 1: (0 + 0.6 + 3 + 3.2) / 6 = 1.1333), the round's
    uploads being the cluster's first FedAvg round from g. The recorded update norms are the updates': 0, 3, 10.

    Fails when the round's uploads are averaged by the model they started from (all into one cluster), not by
    their new clusters. (Starting the new clusters' models from the initial model instead of g changes nothing
    here: every cluster has participants at this round, so its model is replaced by their average.)
    """
    flhc = method(warmup=1, k=2)
    train(flhc, 0, np.tile([1.0, 2.0], (5, 1)))
    train(flhc, 1, on_line(LINE), weights=[1, 3, 1, 1, 1])
    assert groups(flhc.assignment) == {frozenset({0, 1, 2, 3}), frozenset({4})}
    assert events(flhc) == [("recluster_global", "0 1 2 3 4", 2.0)]
    big, alone = flhc.assignment[0], flhc.assignment[4]
    assert flhc.models["w"][big].tolist() == pytest.approx([1 + 6.8 / 6, 2.0])
    assert flhc.models["w"][alone].tolist() == pytest.approx([11.0, 2.0])
    measured = {m["quantity"]: m["value"] for m in flhc.events.measures}
    assert measured == pytest.approx({"update_norm_min": 0.0, "update_norm_median": 3.0, "update_norm_max": 10.0})


@pytest.mark.parametrize(
    ("linkage", "clusters"),
    [("ward", [3, 3, 2, 1]), ("complete", [3, 2, 2, 1]), ("single", [3, 2, 1, 1])],
)
def test_the_threshold_cuts_the_dendrogram_of_the_chosen_linkage(linkage, clusters):
    """Updates 0, 0.2, 3, 3.2, 10 cut at distance thresholds 1, 4, 7, 11 (merge heights in the module docstring).

    Fails when the linkage parameter is ignored (always Ward): complete and single give Ward's counts.
    """
    found = []
    for threshold in (1, 4, 7, 11):
        flhc = method(warmup=0, k=0, threshold=threshold, linkage=linkage)
        train(flhc, 0, on_line(LINE))
        found.append(flhc.num_models)
        assert len(np.unique(flhc.assignment)) == flhc.num_models
    assert found == clusters


def test_cosine_distance_is_taken_between_updates_not_parameters():
    """After a warm-up to g = (5, 5), updates along x (1 and 10) and along y (1 and 10): cosine distance with
    average linkage into two clusters gives the two directions {0, 1} | {2, 3}.

    Fails when clustering on raw parameters instead of updates: {0, 1, 2} | {3}.
    """
    flhc = method(n=4, warmup=1, k=2, metric="cosine", linkage="average")
    train(flhc, 0, np.full((4, 2), 5.0))
    train(flhc, 1, np.array([[1.0, 0.0], [10.0, 0.0], [0.0, 1.0], [0.0, 10.0]]))
    assert groups(flhc.assignment) == {frozenset({0, 1}), frozenset({2, 3})}


def test_one_shot_is_k_means_on_the_updates():
    """Updates 0, 1, 3, 5, 8 into two: One-Shot's k-means {0, 1, 2} | {3, 4} (sum of squares 9.17), FL+HC's Ward
    {0, 1} | {2, 3, 4} (13.17); K = 3 k-means gives {0, 1} | {2, 3} | {4}. One-Shot clusters at round 0 (no warm-up).

    Fails when the clusterer is ignored (always hierarchical): One-Shot then gives Ward's partition.
    """
    one_shot = method("one-shot", k=2)
    train(one_shot, 0, on_line(SKEWED))
    assert groups(one_shot.assignment) == {frozenset({0, 1, 2}), frozenset({3, 4})}
    assert events(one_shot) == [("recluster_global", "0 1 2 3 4", 2.0)]
    ward = method(warmup=0, k=2)
    train(ward, 0, on_line(SKEWED))
    assert groups(ward.assignment) == {frozenset({0, 1}), frozenset({2, 3, 4})}
    three = method("one-shot", k=3)
    train(three, 0, on_line(SKEWED))
    assert groups(three.assignment) == {frozenset({0, 1}), frozenset({2, 3}), frozenset({4})}


def test_clusters_never_change_after_the_clustering_round():
    """After clustering {0, 1, 2, 3} | {4} at round 0, three rounds whose updates have the opposite structure (client
    4 now near 0, clients 0-3 spread out) change neither the assignment nor the number of models, and log nothing;
    each cluster's model moves by its own participants' mean update only.

    Fails when it re-clusters every round: new ``recluster_global`` events and a different partition.
    """
    flhc = method(warmup=0, k=2)
    train(flhc, 0, on_line(LINE))
    clustered, logged = flhc.assignment.copy(), events(flhc)
    drifted = on_line(np.array([0.0, 10.0, 20.0, 30.0, 0.1]))
    for rnd in (1, 2, 3):
        before = flhc.models["w"].clone()
        train(flhc, rnd, drifted)
        assert np.array_equal(flhc.assignment, clustered) and flhc.num_models == 2 and events(flhc) == logged
        big, alone = clustered[0], clustered[4]
        assert (flhc.models["w"][big] - before[big]).tolist() == pytest.approx([15.0, 0.0])
        assert (flhc.models["w"][alone] - before[alone]).tolist() == pytest.approx([0.1, 0.0])


@pytest.mark.parametrize(
    ("name", "sets", "message"),
    [
        ("flhc", {"threshold": "2"}, "hierarchical needs exactly one of k > 0 and threshold > 0, got k = 4, threshold = 2.0"),
        ("flhc", {"k": "0"}, "hierarchical needs exactly one of k > 0 and threshold > 0, got k = 0, threshold = 0.0"),
        ("flhc", {"metric": "cosine"}, "ward linkage needs metric 'euclidean', got 'cosine'"),
        ("flhc", {"clusterer": "dbscan"}, "clusterer must be one of hierarchical, kmeans, got 'dbscan'"),
        ("one-shot", {"metric": "manhattan"}, "kmeans is Euclidean: metric must be 'euclidean'"),
        ("one-shot", {"k": "0"}, "kmeans needs k >= 1 and no threshold, got k = 0"),
    ],
)
def test_bad_settings_are_refused_naming_the_value(name, sets, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_method(name, sets)
