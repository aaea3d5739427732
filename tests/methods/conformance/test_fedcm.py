"""Fed-CM conformance (000 section 4): small cases whose answers follow from the paper's equations by hand.

Eq. 4 (gradient-path cosine), Eq. 5 with Algorithm 1 (modularity of the local-move partition),
Eq. 6-8 (update angle against the norm-weighted cluster direction) and Eq. 9 (the tau test and
the argmax destination), each through the method's own functions and, last, through
``FedCM.aggregate`` itself.
"""

import itertools

import networkx as nx
import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.fedcm import cluster_cosines, migrations, modularity_local_moves, path_similarity, similarity_graph
from driftbench.methods.rounds import Plan, RunContext, TrainResult
from driftbench.train_config import TrainConfig

# Gradient paths (Eq. 2-3) of four clients, T = 2 local steps x 2 personal-layer numbers, flattened step by step.
PATHS = np.array(
    [
        [1.0, 0.0, 1.0, 0.0],  # client 0: both steps along e1
        [2.0, 0.0, 2.0, 1.0],  # client 1: mostly e1
        [0.0, 1.0, 0.0, 1.0],  # client 2: both steps along e2
        [0.0, 2.0, 1.0, 2.0],  # client 3: mostly e2
    ]
)
SQRT2 = np.sqrt(2.0)


def test_eq4_path_cosine_is_taken_over_all_steps_and_layers_at_once():
    """Eq. 4 by hand: s_ij = sum_t sum_l <dw_i, dw_j> / (sqrt(sum |dw_i|^2) sqrt(sum |dw_j|^2)).

    |P0| = sqrt2, |P1| = 3, |P2| = sqrt2, |P3| = 3.
    s01 = (2 + 2) / (3 sqrt2) = 0.9428;  s02 = 0;  s03 = 1 / (3 sqrt2) = 0.2357;
    s12 = 1 / (3 sqrt2) = 0.2357;  s13 = (2 + 2) / 9 = 0.4444;  s23 = (2 + 2) / (3 sqrt2) = 0.9428.
    A per-step cosine averaged over the two steps would give s13 = (0 + 4/5) / 2 = 0.4 instead of 4/9.
    """
    s = path_similarity(PATHS)
    expected = np.array(
        [
            [1, 4 / (3 * SQRT2), 0, 1 / (3 * SQRT2)],
            [4 / (3 * SQRT2), 1, 1 / (3 * SQRT2), 4 / 9],
            [0, 1 / (3 * SQRT2), 1, 4 / (3 * SQRT2)],
            [1 / (3 * SQRT2), 4 / 9, 4 / (3 * SQRT2), 1],
        ]
    )
    assert s == pytest.approx(expected)


def eq5(weights: np.ndarray, labels: np.ndarray) -> float:
    """Eq. 5 written out: Q = (1/2m) sum_c (sum_{i,j in c} w_ij - (sum_{i in c} k_i)^2 / 2m)."""
    k, two_m = weights.sum(1), weights.sum()
    return float(
        sum(weights[np.ix_(labels == c, labels == c)].sum() - k[labels == c].sum() ** 2 / two_m for c in np.unique(labels))
        / two_m
    )


def test_eq5_algorithm1_groups_the_two_planted_path_directions_at_the_modularity_maximum():
    """Algorithm 1 on the Eq. 4 graph of PATHS; the answer by hand.

    Edges (s > 0, no self-loops): w01 = w23 = 0.9428, w03 = w12 = 0.2357, w13 = 0.4444 (w02 = 0: no edge).
    2m = 2 x 2.8014 = 5.6028; degrees k0 = k2 = 1.1785, k1 = k3 = 1.6229.
    Q({0,1},{2,3}) = (1/2m) x 2 x (2 x 0.9428 - 2.8014^2 / 5.6028) = 0.1731, the largest Q over all
    15 partitions of four clients, so Algorithm 1 (which stops only when no move raises Q) returns it.
    """
    graph = similarity_graph(path_similarity(PATHS))
    weights = nx.to_numpy_array(graph)
    assert weights[0, 2] == 0 and np.all(np.diag(weights) == 0)
    labels = modularity_local_moves(graph, seed=0)
    assert labels.tolist() == [0, 0, 1, 1]
    assert eq5(weights, labels) == pytest.approx(0.1731, abs=1e-4)
    partitions = [np.array(p) for p in itertools.product(range(4), repeat=4)]
    assert max(eq5(weights, p) for p in partitions) == pytest.approx(eq5(weights, labels))


def test_eq5_algorithm1_keeps_one_cluster_when_no_split_has_positive_modularity():
    """Four clients all positively similar, no two groups: Q(one cluster) = (2m - (2m)^2 / 2m) / 2m = 0, and every
    one of the 256 labellings has Q <= 0 (brute force), so Algorithm 1 moves nobody out. Eq. 5 at resolution 1:
    a larger resolution (penalising (sum k)^2 twice) would leave four singletons here."""
    weights = np.array([[0, 0.5, 0.3, 0.4], [0.5, 0, 0.7, 0.6], [0.3, 0.7, 0, 1.0], [0.4, 0.6, 1.0, 0]])
    labels = modularity_local_moves(nx.from_numpy_array(weights), seed=0)
    assert labels.tolist() == [0, 0, 0, 0] and eq5(weights, labels) == pytest.approx(0.0)
    assert max(eq5(weights, np.array(p)) for p in itertools.product(range(4), repeat=4)) == pytest.approx(0.0)


# Updates of the personal layer (Eq. 6's w^t - w^{t-1}) of five participants in three clusters.
UPDATES = np.array(
    [
        [3.0, 0.0, 0.0],  # client 0, cluster 0: large, along e1
        [0.0, 1.0, 0.0],  # client 1, cluster 0: small, along e2
        [0.0, 2.0, 0.0],  # client 2, cluster 1: along e2
        [0.0, 0.0, 1.0],  # client 3, cluster 2: along e3
        [0.0, 1.0, 1.0],  # client 4, cluster 2: between e2 and e3
    ]
)
CLUSTER = np.array([0, 0, 1, 2, 2])


def test_eq7_cluster_direction_is_the_norm_weighted_mean_of_unit_updates():
    """Eq. 6-8 by hand.

    Cluster 0: sum_j |dw_j| theta_j = 3 e1 + 1 e2, normalised (3, 1, 0) / sqrt10 (an unweighted mean
    of unit vectors would give (1, 1, 0) / sqrt2). Cluster 1: e2. Cluster 2: e3 + (e2 + e3) = (0, 1, 2) / sqrt5.
    Client 1 (theta = e2): cos with cluster 0 = 1/sqrt10 = 0.3162, with 1 = 1, with 2 = 1/sqrt5 = 0.4472.
    Client 4 (theta = (0, 1, 1)/sqrt2): cos with 0 = 1/(sqrt2 sqrt10) = 0.2236, with 1 = 0.7071,
    with 2 = 3/(sqrt2 sqrt5) = 0.9487.
    """
    scores = cluster_cosines(UPDATES, CLUSTER, 3)
    assert scores[1] == pytest.approx([1 / np.sqrt(10), 1.0, 1 / np.sqrt(5)])
    assert scores[4] == pytest.approx([1 / np.sqrt(20), 1 / SQRT2, 3 / np.sqrt(10)])
    assert scores[0, 0] == pytest.approx(3 / np.sqrt(10))


def test_eq9_outliers_below_tau_move_to_the_argmax_cluster_and_no_one_else_moves():
    """Eq. 9 with tau = 0.5 on the cosines above.

    Own-cluster cosines: client 0: 0.9487, 1: 0.3162, 2: 1, 3: 2/sqrt5 = 0.8944, 4: 0.9487. Only
    client 1 is below tau; its argmax is cluster 1 (cos 1 > 0.4472 > 0.3162). With tau = 0.95 clients 0
    and 4 (0.9487) are outliers too, but their argmax is their own cluster, so they stay; client 3
    (0.8944) has its argmax in cluster 2 as well. A cosine equal to tau is not below it: no move.
    """
    scores = cluster_cosines(UPDATES, CLUSTER, 3)
    assert migrations(scores, CLUSTER, 0.5).tolist() == [0, 1, 1, 2, 2]
    assert migrations(scores, CLUSTER, 0.95).tolist() == [0, 1, 1, 2, 2]
    # cluster 0 = {(10, -4), (3, 4)}: direction (13, 0)/13 = e1 exactly; client 1's cosine with it is 3/5 = tau,
    # with cluster 1 (e2) 4/5: "below tau" is false, so it stays although another cluster is closer
    at_tau = cluster_cosines(np.array([[10.0, -4.0], [3.0, 4.0], [0.0, 1.0]]), np.array([0, 0, 1]), 2)
    assert at_tau[1].tolist() == [0.6, 0.8]
    assert migrations(at_tau, np.array([0, 0, 1]), 0.6).tolist() == [0, 0, 1]
    assert migrations(at_tau, np.array([0, 0, 1]), 0.61).tolist() == [0, 1, 1]


def test_fedcm_aggregate_applies_eq9_to_the_personal_layer_only_and_records_the_cosines():
    """The method end to end: personal layer = the classifier (section 4.1), updates = trained - start model.

    The encoder's update is large and identical for every client, so the tau test must ignore it:
    on the classifier, UPDATES above make client 1 migrate to cluster 1 (tau = 0.5) and nobody else,
    and the own-cluster cosines recorded are Eq. 8's values for each participant in plan order.
    """
    init = {
        "body.weight": torch.zeros(4, dtype=torch.float64),
        "head.weight": torch.zeros(3, dtype=torch.float64),
        "head.bias": torch.zeros(1, dtype=torch.float64),
    }
    ctx = RunContext(5, 2, init, TrainConfig(participants=5), seed=0, classifier="head")
    method = load_method("fedcm-literal", {"tau": "0.5"}).create()
    method.setup(ctx)
    method.warmup_rounds = 0  # clusters given directly: start after the warm-up
    method.cluster, method.assignment = CLUSTER.copy(), CLUSTER.copy()
    method.models = {n: p.unsqueeze(0).repeat(3, 1) for n, p in init.items()}
    trained = {
        "body.weight": torch.full((5, 4), 100.0, dtype=torch.float64),
        "head.weight": torch.as_tensor(UPDATES),
        "head.bias": torch.zeros(5, 1, dtype=torch.float64),
    }
    plan = Plan(np.arange(5), CLUSTER.copy())
    method.aggregate(0, TrainResult(plan, trained, np.ones(5), np.zeros(5)))
    assert method.assignment.tolist() == [0, 1, 1, 2, 2]
    own = [m["value"] for m in method.events.measures if m["quantity"] == "fedcm_own_cosine"]
    assert own == pytest.approx([3 / np.sqrt(10), 1 / np.sqrt(10), 1.0, 2 / np.sqrt(5), 3 / np.sqrt(10)])


def test_default_tau_flags_only_an_update_pointing_clearly_against_its_cluster():
    """Section 4.3 migrates clients "with significant deviations"; driftbench's tau (the paper gives none) is -0.5.

    Cluster 0 = {(10, 0), (-1, 1), (-1, -3)}: summed direction (8, -2) / sqrt68; cluster 1 = {(-1, 0)}.
    Client 1's cosine with cluster 0 is (-8 - 2) / (sqrt2 sqrt68) = -0.8575 (over 120 degrees away): it moves to
    cluster 1 (cosine 1/sqrt2). Client 2's is (-8 + 6) / (sqrt10 sqrt68) = -0.0767, an update nearly unrelated to
    its cluster's: it stays, although cluster 1 is closer (1/sqrt10 = 0.3162). With tau = 0 (the value before,
    which moved converged clients on noise) it moves too: the test fails on that break.
    """
    tau = load_method("fedcm", {}).params.tau
    assert tau == -0.5
    updates = np.array([[10.0, 0.0], [-1.0, 1.0], [-1.0, -3.0], [-1.0, 0.0]])
    cluster = np.array([0, 0, 0, 1])
    scores = cluster_cosines(updates, cluster, 2)
    assert scores[1] == pytest.approx([-10 / (SQRT2 * np.sqrt(68)), 1 / SQRT2])
    assert scores[2] == pytest.approx([-2 / (np.sqrt(10) * np.sqrt(68)), 1 / np.sqrt(10)])
    assert migrations(scores, cluster, tau).tolist() == [0, 1, 0, 1]
    assert migrations(scores, cluster, 0.0).tolist() == [0, 1, 1, 1]
