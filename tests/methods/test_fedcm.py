"""Fed-CM: gradient-path cosine (Eq. 4), modularity local moves (Eq. 5, Algorithm 1), migration (Eq. 6-9), end to end."""

import json

import networkx as nx
import numpy as np
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from driftbench.cli import main
from driftbench.errors import ConfigError
from driftbench.methods.catalog import load_method
from driftbench.methods.fedcm import (
    FedCMParams,
    cluster_cosines,
    migrations,
    modularity_local_moves,
    path_similarity,
    similarity_graph,
    table2_clustering,
)
from driftbench.methods.rounds import Plan, RunContext, TrainResult
from driftbench.train_config import TrainConfig
from tests.methods.fakes import events

TINY = [
    "--rounds",
    "6",
    "--set",
    "clients=12",
    "--set",
    "train.participants=6",
    "--set",
    "train.local_steps=3",
    "--set",
    "drift_every=3",
    "--set",
    "method.warmup_steps=4",
    "--quiet",
]


def test_path_similarity_is_eq4_over_all_steps_and_layers():
    # client rows: [step1 weight (2), step1 bias (1), step2 weight (2), step2 bias (1)]
    paths = np.array([[1.0, 0.0, 1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0, 2.0], [-1.0, 0.0, -1.0, 0.0, -1.0, 0.0]])
    s = path_similarity(paths)
    # <p0, p1> = 1; |p0| = sqrt(3), |p1| = sqrt(5)
    assert s[0, 1] == pytest.approx(1 / np.sqrt(15))
    assert s[0, 2] == pytest.approx(-1.0) and np.allclose(np.diag(s), 1.0)


def eq5(weights, labels):
    """Modularity by Eq. 5 written out: (1/2m) sum_c (sum_{i,j in c} w_ij - (sum_{i in c} k_i)^2 / 2m)."""
    k, two_m = weights.sum(1), weights.sum()
    return (
        sum(weights[np.ix_(labels == c, labels == c)].sum() - k[labels == c].sum() ** 2 / two_m for c in np.unique(labels))
        / two_m
    )


def planted_similarity(sizes, inside=0.9, outside=0.1, noise=0.05, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(len(sizes)), sizes)
    s = np.where(truth[:, None] == truth[None, :], inside, outside) + rng.normal(0, noise, (len(truth), len(truth)))
    return (s + s.T) / 2, truth


def test_local_moves_find_planted_groups_and_reach_a_modularity_local_optimum():
    similarity, truth = planted_similarity([5, 4, 6])
    graph = similarity_graph(similarity)
    labels = modularity_local_moves(graph, seed=0)
    assert np.array_equal(labels, truth)
    weights = nx.to_numpy_array(graph)
    communities = [set(np.flatnonzero(labels == c)) for c in np.unique(labels)]
    assert eq5(weights, labels) == pytest.approx(nx.community.modularity(graph, communities))
    best = eq5(weights, labels)
    for node in range(len(labels)):  # no single move raises Q (Algorithm 1 stops only then)
        for target in range(labels.max() + 2):
            moved = labels.copy()
            moved[node] = target
            assert eq5(weights, moved) <= best + 1e-12


def test_graph_drops_self_loops_and_non_positive_similarities():
    similarity = np.array([[1.0, 0.5, -0.3], [0.5, 1.0, 0.0], [-0.3, 0.0, 1.0]])
    graph = similarity_graph(similarity)
    assert sorted(graph.edges(data="weight")) == [(0, 1, 0.5)] and graph.number_of_nodes() == 3
    # hand computation of Eq. 5 for {0, 1}, {2}: m = 0.5, k = (0.5, 0.5, 0): (1/1) * (1 - 1^2 / 1) = 0
    assert nx.community.modularity(graph, [{0, 1}, {2}]) == pytest.approx(0.0)
    assert eq5(nx.to_numpy_array(graph), np.array([0, 1, 2])) == pytest.approx(-0.5)


def planted_paths(sizes, seed=0):
    """Paths of three groups along near-orthogonal directions, each client at its own scale (cosine ignores it)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(len(sizes)), sizes)
    centres = np.linalg.qr(rng.normal(size=(40, len(sizes))))[0].T  # orthonormal: cosine distance 1 between groups
    paths = centres[truth] + rng.normal(0, 0.03, (len(truth), 40))
    return paths * rng.uniform(0.1, 10, (len(truth), 1)), truth


@pytest.mark.parametrize(
    "params, groups",
    [
        ({"clustering": "kmeans", "n_clusters": 3}, 3),
        ({"clustering": "kmeans", "n_clusters": 2}, 2),
        ({"clustering": "hierarchical"}, 3),
    ],
)
def test_table2_alternatives_cluster_the_paths_by_direction(params, groups):
    paths, truth = planted_paths([5, 4, 6])
    labels = table2_clustering(paths, FedCMParams(**params), seed=0)
    assert len(np.unique(labels)) == groups
    if groups == 3:
        assert adjusted_rand_score(truth, labels) == 1.0
    else:  # N = 2 < 3 groups: two groups share a cluster, none is split
        assert all(len(np.unique(labels[truth == g])) == 1 for g in range(3))


def test_hierarchical_cut_lower_than_the_groups_spread_splits_them():
    paths, truth = planted_paths([5, 4, 6])
    spread = (1 - path_similarity(paths))[truth[:, None] == truth[None, :]].max()
    labels = table2_clustering(paths, FedCMParams(clustering="hierarchical", threshold=spread / 2), seed=0)
    assert len(np.unique(labels)) > 3


@pytest.mark.parametrize("reading, models", [("", 5), ("literal-", 2)])  # a model per client, or per cluster
def test_table2_variants_cluster_after_the_warmup(reading, models):
    for name, expected in [
        (f"fedcm-{reading}kmeans", {"clustering": "kmeans"}),
        (f"fedcm-{reading}hierarchical", {"clustering": "hierarchical", "threshold": 0.9}),
    ]:
        method = load_method(name, {"warmup_steps": "3", **({"n_clusters": "2"} if "kmeans" in name else {})}).create()
        assert {k: getattr(method.params, k) for k in expected} == expected
        method.setup(ctx())
        warm_up(method)
        assert adjusted_rand_score([0, 1, 0, 1, 1], method.partition) == 1.0 and method.num_models == models


def migrate(updates, cluster, num_clusters, tau):
    return migrations(cluster_cosines(updates, cluster, num_clusters), cluster, tau)


def test_migration_moves_only_participants_pointing_away_from_their_cluster():
    updates = np.array([[2.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 3.0], [-0.2, 1.0]])
    cluster = np.array([0, 0, 0, 1, 1])
    # cluster 0 direction ~ (3, 1.1)/|.|; client 2 (0, 1) has cosine 0.34 with it, 0.99 with cluster 1
    assert migrate(updates, cluster, 3, tau=0.5).tolist() == [0, 0, 1, 1, 1]
    assert migrate(updates, cluster, 3, tau=0.0).tolist() == [0, 0, 0, 1, 1]
    # norm weighting (Eq. 7): the large update (10, 0) sets cluster 0's direction, so (0, 1) is an outlier there
    # (cosine 0.2; with unweighted unit vectors it would be 0.89) and moves to cluster 1
    assert migrate(np.array([[10.0, 0], [0, 1], [0, 1], [0, 1]]), np.array([0, 0, 0, 1]), 2, tau=0.5).tolist() == [0, 1, 1, 1]
    # a cluster without participants this round (2) is never a destination: client 1 points away from
    # both present clusters and stays in the closer one (its own) rather than the empty cluster (score 0)
    far = np.array([[3.0, 0], [-1, 0.2], [1, 0]])
    assert migrate(far, np.array([0, 0, 1]), 3, tau=0.5).tolist() == [0, 0, 1]


def test_a_participant_whose_update_dominates_its_cluster_sets_its_direction_and_the_members_opposing_it_move():
    """The chosen reading of Eq. 7 (a participant's own update is in its cluster's sum) and its cost, measured in
    docs/methods.md: a misplaced client's large update (1.04) outweighs three members' corrections (0.07 each), so its
    own cosine is 0.99 and it stays, while the members' is -0.82 and they leave for cluster 1 (cosine 0)."""
    misfit, member = [-0.3, 0.0, 1.0], [0.05, 0.0, -0.05]
    updates = np.array([misfit, member, member, member, [0.0, 0.5, 0.0]])
    cluster = np.array([0, 0, 0, 0, 1])
    scores = cluster_cosines(updates, cluster, 2)
    assert scores[0, 0] == pytest.approx(0.99, abs=0.01) and scores[1:4, 0] == pytest.approx([-0.82] * 3, abs=0.01)
    assert migrations(scores, cluster, tau=-0.5).tolist() == [0, 1, 1, 1, 1]
    # without its own update the misfit's cosine with the members' direction would be -0.88: it, not they, would move


def ctx(n=5, participants=2):
    init = {"head.weight": torch.zeros(2, 3, dtype=torch.float64), "head.bias": torch.zeros(2, dtype=torch.float64)}
    return RunContext(n, 2, init, TrainConfig(participants=participants), seed=0, classifier="head")


def warm_up(method):
    """Fed-CM's warm-up on ctx()'s 5 clients, whose paths point two ways (clients 0, 2 and 1, 3, 4); returns who trained."""
    direction = {0: torch.tensor([1.0, 0, 0, 0, 0, 0, 0, 0]), 1: torch.tensor([0, 0, 0, 0, 0, 0, 1.0, 1.0])}
    group = [0, 1, 0, 1, 1]
    seen = []
    for rnd in range(3):
        plan = method.plan(rnd, None, np.random.default_rng(rnd))
        assert plan.local_steps == 3 and plan.record == ("head.weight", "head.bias") and plan.upload_floats == 3 * 8
        assert (plan.start_models == 0).all()
        seen += plan.participants.tolist()
        rows = torch.stack([direction[group[c]] * (1 + c) for c in plan.participants]).double()
        steps = rows[:, None, :].repeat(1, 3, 1)
        path = {"head.weight": steps[:, :, :6].reshape(-1, 3, 2, 3), "head.bias": steps[:, :, 6:]}
        params = {n: p.unsqueeze(0).repeat(len(plan.participants), *[1] * p.dim()) for n, p in ctx().init_params.items()}
        method.aggregate(rnd, TrainResult(plan, params, np.ones(len(plan.participants)), np.zeros(len(plan.participants)), path))
    return seen


def test_warmup_slices_cover_every_client_once_then_paths_cluster_them():
    method = load_method("fedcm-literal", {"warmup_steps": "3"}).create()
    method.setup(ctx())
    assert sorted(warm_up(method)) == [0, 1, 2, 3, 4]
    assert method.assignment.tolist() == [0, 1, 0, 1, 1] and method.num_models == 2 and method.paths is None
    assert events(method) == [("recluster_global", "0 1 2 3 4", 2.0)]
    after = method.plan(3, None, np.random.default_rng(3))
    assert after.local_steps is None and after.upload_floats == 0 and len(after.participants) == 2


def test_a_participant_pointing_away_from_its_cluster_migrates_and_is_logged():
    method = load_method("fedcm-literal", {"warmup_steps": "3"}).create()
    method.setup(ctx())
    warm_up(method)
    update = torch.zeros(5, 8, dtype=torch.float64)  # [head.weight (6), head.bias (2)] per client; the bank is still zero
    update[[0, 2], 0] = 1.0
    update[[1, 3], 6] = 1.0
    update[4, 6] = -1.0  # cluster 1's direction is +e6: client 4 points away (cosine -1), and is orthogonal to cluster 0's
    plan = Plan(np.arange(5), method.assignment.copy())
    trained = {"head.weight": update[:, :6].reshape(5, 2, 3), "head.bias": update[:, 6:]}
    method.aggregate(3, TrainResult(plan, trained, np.ones(5), np.zeros(5)))
    assert method.assignment.tolist() == [0, 1, 0, 1, 0]
    assert events(method)[1:] == [("migrate", "4", None)]


def outlier_round(method, rnd, away):
    """A round of all 5 clients on ctx(): clients 0, 2 along +e0 (cluster 0), 1, 3 along +e6 (cluster 1); client 4 along
    -e6 (cosine -1 with cluster 1, 0 with cluster 0) when ``away``, else with its cluster."""
    update = torch.zeros(5, 8, dtype=torch.float64)
    update[[0, 2], 0] = 1.0
    update[[1, 3], 6] = 1.0
    update[4, 6] = -1.0 if away else 1.0
    bank = {n: p[method.assignment] for n, p in method.models.items()}
    trained = {
        "head.weight": bank["head.weight"] + update[:, :6].reshape(5, 2, 3),
        "head.bias": bank["head.bias"] + update[:, 6:],
    }
    method.aggregate(rnd, TrainResult(Plan(np.arange(5), method.assignment.copy()), trained, np.ones(5), np.zeros(5)))
    return method.assignment.tolist()


def test_with_confirm_2_an_outlier_moves_only_at_its_second_deviation_in_a_row():
    method = load_method("fedcm-literal", {"warmup_steps": "3", "confirm": "2"}).create()
    method.setup(ctx())
    warm_up(method)
    assert outlier_round(method, 3, away=True) == [0, 1, 0, 1, 1]  # first deviation: stays
    assert outlier_round(method, 4, away=False) == [0, 1, 0, 1, 1]  # back in line: the streak restarts
    assert outlier_round(method, 5, away=True) == [0, 1, 0, 1, 1]
    assert outlier_round(method, 6, away=True) == [0, 1, 0, 1, 0]  # second in a row: moves
    assert method.streaks.tolist() == [0, 0, 0, 0, 0]
    assert [e[:2] for e in events(method)[1:]] == [("migrate", "4")]


def local_round(method, updates, samples, participants=(0, 1, 2, 3, 4)):
    """A round on local_ctx(): each participant's body moves to its client number + 1, its classifier by ``updates``."""
    rows = np.asarray(participants)
    start = {n: p[torch.as_tensor(method.assignment[rows])] for n, p in method.models.items()}
    trained = {
        "body.weight": torch.as_tensor(rows + 1.0, dtype=torch.float64)[:, None].repeat(1, 2),
        "head.weight": start["head.weight"] + updates[:, :6].reshape(len(rows), 2, 3),
        "head.bias": start["head.bias"] + updates[:, 6:],
    }
    plan = Plan(rows, method.assignment[rows].copy())
    method.aggregate(3, TrainResult(plan, trained, np.asarray(samples, dtype=float), np.zeros(len(rows))))
    return trained


def local_ctx():
    init = {
        "body.weight": torch.zeros(2, dtype=torch.float64),
        "head.weight": torch.zeros(2, 3, dtype=torch.float64),
        "head.bias": torch.zeros(2, dtype=torch.float64),
    }
    return RunContext(5, 2, init, TrainConfig(participants=2), seed=0, classifier="head")


def test_personal_local_keeps_each_clients_classifier_and_averages_the_layers_below_per_cluster():
    """FedPer's sense of the personalized layer: one bank model per client (its cluster's body, its own classifier)."""
    method = load_method("fedcm", {"warmup_steps": "3", "personal": "local", "migrate": "false"}).create()
    method.setup(local_ctx())
    warm_up(method)
    assert method.partition.tolist() == [0, 1, 0, 1, 1] and method.num_models == 5
    assert method.assignment.tolist() == [0, 1, 2, 3, 4]
    updates = torch.arange(3 * 8, dtype=torch.float64).reshape(3, 8)
    trained = local_round(method, updates, [1, 1, 3], participants=(0, 1, 3))
    body = method.models["body.weight"][:, 0].tolist()
    assert body == [1.0, 3.5, 1.0, 3.5, 3.5]  # cluster 0: client 0's body; cluster 1: (2 x 1 + 4 x 3) / 4
    assert torch.equal(method.models["head.weight"][[0, 1, 3]], trained["head.weight"])
    assert not method.models["head.weight"][[2, 4]].any() and not method.models["head.bias"][[2, 4]].any()
    assert method.partition.tolist() == [0, 1, 0, 1, 1]


def test_personal_local_migrates_on_the_clients_own_classifier_update_and_serves_it_the_new_clusters_body():
    method = load_method("fedcm", {"warmup_steps": "3", "personal": "local"}).create()
    method.setup(local_ctx())
    warm_up(method)
    updates = torch.zeros(5, 8, dtype=torch.float64)
    updates[[0, 2], 0] = 1.0
    updates[[1, 3], 6] = 1.0
    updates[4, 6] = -1.0  # against cluster 1's direction (+e6): cosine -1, below tau = -0.5; 0 with cluster 0's
    trained = local_round(method, updates, [1, 1, 1, 1, 1])
    assert method.partition.tolist() == [0, 1, 0, 1, 0]
    assert method.assignment.tolist() == [0, 1, 2, 3, 4]
    body = method.models["body.weight"][:, 0].tolist()
    assert body == [2.0, 3.0, 2.0, 3.0, 2.0]  # client 4's own body (5) enters no average; it is served cluster 0's
    assert torch.equal(method.models["head.weight"][4], trained["head.weight"][4])
    assert [e[:2] for e in events(method)[1:]] == [("migrate", "4")]


def test_personal_local_needs_the_mean_aggregator():
    with pytest.raises(ConfigError, match="personal = 'local' averages the clusters' shared layers only"):
        load_method("fedcm", {"personal": "local", "aggregator": "flower:FedAdam"})
    with pytest.raises(ConfigError, match="personal must be one of shared, local"):
        load_method("fedcm", {"personal": "client"})


def test_confirm_enters_the_recorded_config_only_when_set():
    """``confirm`` came after Fed-CM runs were recorded: at its default their config hashes stay."""
    recorded = load_method("fedcm").as_config()["params"]
    assert "confirm" not in recorded
    assert load_method("fedcm", {"confirm": "2"}).as_config()["params"] == {**recorded, "confirm": 2}
    assert load_method("fedcm-kmeans").as_config()["params"] == {**recorded, "clustering": "kmeans"}


def test_bad_parameters_name_the_field():
    with pytest.raises(ConfigError, match="tau"):
        load_method("fedcm", {"tau": "1.5"})
    with pytest.raises(ConfigError, match="warmup_steps"):
        load_method("fedcm", {"warmup_steps": "0"})
    with pytest.raises(ConfigError, match="confirm"):
        load_method("fedcm", {"confirm": "0"})
    with pytest.raises(ConfigError, match="clustering must be one of modularity, kmeans, hierarchical"):
        load_method("fedcm", {"clustering": "louvain"})
    with pytest.raises(ConfigError, match="threshold"):
        load_method("fedcm", {"threshold": "3"})


@pytest.mark.parametrize("migrate", ["true", "false"])
def test_fedcm_runs_on_label_swap_through_the_cli(tmp_path, capsys, migrate):
    code = main(
        ["run", "--trace", "label-swap", "--method", "fedcm", "--out", str(tmp_path), "--set", f"method.migrate={migrate}", *TINY]
    )
    assert code == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "label-swap/fedcm/seed0/summary.json").read_text())
    assert summary["status"] == "ok"
    # 12 clients warm up in 2 slices of 6, each uploading 4 steps x (200 x 10 + 10) classifier numbers
    assert summary["overhead"]["extra_upload_bytes"] == 12 * 4 * 2010 * 4
