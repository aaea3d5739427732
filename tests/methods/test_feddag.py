"""FedDAG: proximity math (Eq. 3-10, 41) and the dual encoder (Eq. 11-22) on hand-made inputs; both variants end to end."""

import json

import numpy as np
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

from driftbench.cli import main
from driftbench.engine.models import build_model
from driftbench.methods.bank import replicate
from driftbench.methods.catalog import load_method
from driftbench.methods.dual_encoder import complementarity, encoder_halves, owner_masks, rarity_ranks, top_sources
from driftbench.methods.feddag_similarity import (
    class_angles,
    class_subspaces,
    clustering_loss,
    cut,
    entropy_loss,
    frequency_weights,
    fuse,
    fusion_weights,
    gradient_angles,
    label_shift,
    optimal_clustering,
    shifted,
    split_subspaces,
)
from driftbench.methods.rounds import RunContext
from driftbench.record.schema import read_events, read_rounds
from driftbench.train_config import TrainConfig
from tests.methods.fakes import context, events, queries


def subspaces(data_by_class, num_classes=3, p=2):
    """One client's upload from {class: samples x features}, split back into counts and bases."""
    x = torch.cat([torch.as_tensor(v, dtype=torch.float64) for v in data_by_class.values()])
    y = torch.cat([torch.full((len(v),), c) for c, v in data_by_class.items()])
    return split_subspaces(class_subspaces(x.reshape(len(x), 1, 1, -1), y, num_classes, p)[None], num_classes, p)


def test_class_angles_are_0_for_identical_subspaces_90_for_one_sided_classes_0_for_absent_ones():
    rng = np.random.default_rng(0)
    a0, a1 = rng.normal(size=(5, 6)), rng.normal(size=(4, 6))
    counts_i, bases_i = subspaces({0: a0, 1: a1})
    counts_j, bases_j = subspaces({0: a0, 2: rng.normal(size=(3, 6))})
    angles = class_angles(bases_i, counts_i, bases_j, counts_j)[0, 0]
    assert angles[0] == pytest.approx(0.0, abs=1e-5)  # class 0: the same data on both clients
    assert angles[1] == 90.0 and angles[2] == 90.0  # classes 1 and 2: on one side only
    assert counts_i[0].tolist() == [5, 4, 0]
    counts_k, bases_k = subspaces({0: np.eye(6)[:1], 1: np.eye(6)[3:4]})
    counts_l, bases_l = subspaces({0: (np.eye(6)[:1] + np.eye(6)[1:2]), 1: np.eye(6)[4:5]})
    both = class_angles(bases_k, counts_k, bases_l, counts_l)[0, 0]
    assert both[0] == pytest.approx(45.0) and both[1] == pytest.approx(90.0) and both[2] == 0.0  # class 2 on neither


def test_gradient_angles_are_degrees_between_updates():
    updates = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    g = gradient_angles(updates)
    assert g[0, 1] == pytest.approx(90) and g[0, 2] == pytest.approx(180) and g[0, 3] == pytest.approx(45)
    assert g[0, 4] == pytest.approx(90) and np.allclose(np.diag(g), 0)


def test_frequency_weights_follow_log_ratios_scaled_to_one_plus_minus_delta():
    counts = np.array([[10.0, 0.0], [10.0, 100.0]])
    w = frequency_weights(counts, delta=0.5)
    assert w.min() == pytest.approx(0.5) and w.max() == pytest.approx(1.5)
    assert w[0, 0, 0] == pytest.approx(0.5) and w[0, 1, 0] == pytest.approx(0.5)  # equal counts: the smallest weight
    assert w[0, 1, 1] == pytest.approx(1.5)  # 0 vs 100 samples: the largest ratio ln(100 + e) / ln(e)
    assert np.allclose(frequency_weights(np.full((3, 2), 7.0), 0.5), 1.0)


def test_fusion_uses_the_lower_index_weight_and_learning_lowers_the_entropy():
    g = np.array([[0, 1.0, 0.2], [1.0, 0, 0.9], [0.2, 0.9, 0]])
    v = np.array([[0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]])
    a = fuse(g, v, np.array([0.25, 1.0, 0.0]))
    assert a[0, 1] == a[1, 0] == pytest.approx(0.25 * 1.0 + 0.75 * 0.5) and a[1, 2] == pytest.approx(0.9)
    start = np.full(3, 0.5)
    w = fusion_weights(g, v, start, np.array([True, True, False]))
    assert w[2] == 0.5 and ((0 <= w) & (w <= 1)).all()

    def entropy(weights):
        return float(entropy_loss(torch.as_tensor(fuse(g, v, weights))))

    assert entropy(w) < entropy(start) - 1e-3


def planted(groups, sizes, rng, intra=(0.0, 0.2), inter=(0.6, 1.0)):
    truth = np.repeat(np.arange(groups), sizes)
    n = len(truth)
    a = np.where(truth[:, None] == truth[None, :], rng.uniform(*intra, (n, n)), rng.uniform(*inter, (n, n)))
    a = np.triu(a, 1)
    return a + a.T, truth


def test_clustering_loss_picks_the_planted_eleven_groups_of_b10():
    rng = np.random.default_rng(0)
    adjacency, truth = planted(11, rng.integers(6, 14, 11), rng)
    labels, alpha = optimal_clustering(adjacency, 0.05, lam=0.1, gamma=1.0, tau=1.0)
    assert labels.max() + 1 == 11 and adjusted_rand_score(truth, labels) == 1.0 and 0 < alpha < 1
    # the loss ranks the planted partition below one cluster and below a split of one group
    one = np.zeros(len(truth), dtype=np.int64)
    split = truth.copy()
    split[np.flatnonzero(truth == 0)[:2]] = 11
    assert clustering_loss(adjacency, truth, 0.1, 1.0, 1.0) < clustering_loss(adjacency, one, 0.1, 1.0, 1.0)
    assert clustering_loss(adjacency, truth, 0.1, 1.0, 1.0) < clustering_loss(adjacency, split, 0.1, 1.0, 1.0)
    assert cut(adjacency, 1.0).tolist() == one.tolist()


def test_wasserstein_shift_flags_a_fifth_of_the_data_changing_class():
    before = np.array([[10, 10, 0, 0], [10, 10, 0, 0], [0, 0, 0, 0]], dtype=float)
    after = np.array([[10, 10, 0, 0], [10, 0, 0, 10], [5, 5, 0, 0]], dtype=float)
    assert shifted(label_shift(after, before), 4, 0.2).tolist() == [False, True, False]
    slight = np.array([[20, 19, 1, 0]], dtype=float)  # W1 = 1/40, below 0.2 / 4 classes
    assert label_shift(slight, before[:1]) == pytest.approx([1 / 40])
    assert shifted(label_shift(slight, before[:1]), 4, 0.2).tolist() == [False]
    assert shifted(label_shift(slight, before[:1]), 4, 0.05).tolist() == [True]


def test_dual_encoder_halves_keep_the_two_encoders_apart():
    model = build_model("lenet5", (1, 8, 8), 4, seed=0, dtype=torch.float64)
    params = {n: p.detach() for n, p in model.named_parameters()}
    owners = encoder_halves(params, "5")
    assert (owners["5.weight"] == 2).all() and (owners["0.0.weight"] >= 0).all()  # classifier; first layer sees the image
    assert (owners["0.3.weight"][:8, 3:] == -1).all() and (owners["0.3.weight"][8:, 3:] == 1).all()
    assert owner_masks(owners, (0, 2), params)["3.weight"][:42, :60].eq(1).all()
    encoder = {n: torch.where(owners[n] >= 0, p, torch.zeros_like(p)) for n, p in params.items() if not n.startswith("5.")}
    moved = {n: p + (owners[n] == 1).to(p.dtype) for n, p in encoder.items()}  # change the secondary encoder only
    x = torch.linspace(0, 1, 64, dtype=torch.float64).reshape(1, 1, 8, 8)
    out, out_moved = (torch.func.functional_call(model[:5], p, (x,)) for p in (encoder, moved))
    assert torch.equal(out[:, :42], out_moved[:, :42]) and not torch.equal(out[:, 42:], out_moved[:, 42:])


def test_cc_graph_prefers_sources_rich_in_what_a_cluster_lacks():
    counts = np.array([[9, 1, 0], [9, 1, 0], [0, 1, 9], [0, 2, 8], [5, 5, 5]], dtype=float)
    assert rarity_ranks(counts[:1]).tolist() == [[1, 0, -1]]
    assignment = np.array([0, 0, 1, 1, 2])
    scores = complementarity(counts, np.zeros((5, 5, 3)), assignment, np.array([0, 1, 2]))
    assert np.isneginf(np.diag(scores)).all()
    assert scores[0].argmax() == 1  # cluster 0 lacks class 2, which cluster 1 holds most
    assert top_sources(scores, 1)[0].tolist() == [False, True, False]
    assert top_sources(scores, 2).sum(axis=1).tolist() == [2, 2, 2]
    aligned = complementarity(counts, np.full((5, 5, 3), 90.0), assignment, np.array([0, 1, 2]))
    assert (aligned[~np.eye(3, dtype=bool)] == 0).all()  # orthogonal class subspaces: nothing to share


def test_placed_clients_migrate_to_their_settled_mates_cluster_or_get_a_new_one():
    method = load_method("feddag-single").create()
    method.setup(context(6, participants=2))
    method.assignment = np.array([0, 0, 0, 1, 1, 1])
    method.clusters = replicate({"w": torch.zeros(2, dtype=torch.float64)}, 2)
    done = np.array([0, 5])
    method.warming = done  # clients 0 and 5 finished their re-warm-up after a shift
    hc_labels = np.array([1, 0, 0, 1, 1, 2])  # client 0 sits with settled 3 and 4; client 5 with no settled client
    method.reassign(done, hc_labels, {"w": torch.ones(2, 2, dtype=torch.float64)}, np.ones(2), None)
    assert method.assignment.tolist() == [1, 0, 0, 1, 1, 2] and method.num_clusters == 3
    assert events(method) == [("create", "5", 3.0), ("migrate", "0", None)]


def test_a_newcomer_with_no_settled_mate_joins_the_existing_cluster_nearest_on_average():
    """Algorithm 4 line 14: a newcomer takes an existing cluster's models. Client 5's nearest single client (1, at
    0.1) is in cluster 0, but cluster 1 is nearer on average (0.3 against 0.6); fails on single linkage or a new cluster."""
    method = load_method("feddag-single").create()
    method.setup(context(6, participants=2))
    method.assignment = np.array([0, 0, 0, 1, 1, 0])
    method.clusters = replicate({"w": torch.zeros(2, dtype=torch.float64)}, 2)
    method.warming = done = np.array([5])
    distance = np.ones((6, 6))
    distance[5, :5] = [0.9, 0.1, 0.8, 0.3, 0.3]
    method.reassign(done, np.arange(6), {"w": torch.ones(1, 2, dtype=torch.float64)}, np.ones(1), distance)
    assert method.assignment[5] == 1 and method.num_clusters == 2


class Histograms:
    """A client side that reports fixed label counts."""

    def __init__(self, counts):
        self.counts = np.asarray(counts, dtype=float)

    def label_histograms(self, clients):
        return self.counts[clients]


def test_a_shifted_client_warms_up_again_from_its_cluster_model_not_the_initial_one():
    """A.6: re-clustering runs "without resetting the models"; fails if the re-warm-up restarts from the initial model."""
    method = load_method("feddag-single").create()
    method.setup(context(4, participants=2))
    method.clusters = {"w": torch.tensor([[1.0, 1.0], [2.0, 2.0]], dtype=torch.float64)}
    method.assignment = np.array([0, 0, 1, 1])
    method.warming, method.warm_done = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    method.local = method.starts = {"w": torch.zeros(0, 2, dtype=torch.float64)}
    method.reference = np.array([[5, 5, 0]] * 4, dtype=float)
    method.check_shifts(queries(Histograms([[5, 5, 0], [5, 5, 0], [5, 5, 0], [0, 5, 5]])))
    assert method.warming.tolist() == [3]
    assert method.local["w"].tolist() == [[2.0, 2.0]] and method.starts["w"].tolist() == [[2.0, 2.0]]


def test_a_cluster_founded_after_a_shift_keeps_its_founders_classifier_the_first_clustering_resets_it():
    model = build_model("lenet5", (1, 8, 8), 4, seed=0, dtype=torch.float64)
    params = {n: p.detach() for n, p in model.named_parameters()}
    method = load_method("feddag").create()
    method.setup(RunContext(2, 4, params, TrainConfig(participants=2), seed=0, classifier="5"))
    trained = {n: torch.stack([p + 1, p + 3]) for n, p in method.initial.items()}
    first = method.cluster_models(trained, np.zeros(2, dtype=np.int64), np.ones(2))
    assert torch.equal(first["5.weight"][0], method.initial["5.weight"])
    assert torch.allclose(first["0.0.weight"][0], method.initial["0.0.weight"] + 2)
    method.clusters, method.assignment = first, np.array([0, 0])
    method.warming = done = np.array([1])  # client 1 re-warmed after a shift and has no settled HC-mate
    method.reassign(done, np.array([0, 1]), {n: p[1:] for n, p in trained.items()}, np.ones(1), None)
    assert method.num_clusters == 2 and method.assignment.tolist() == [0, 1]
    assert torch.allclose(method.clusters["5.weight"][1], method.initial["5.weight"] + 3)


TINY = [
    "--rounds",
    "6",
    "--set",
    "clients=12",
    "--set",
    "train.participants=6",
    "--set",
    "train.local_steps=4",
    "--set",
    "initial_concepts=3",
    "--set",
    "drift_every=4",
]


@pytest.mark.parametrize("method", ["feddag-single", "feddag"])
def test_runs_on_label_swap_through_the_cli(method, tmp_path, capsys):
    code = main(["run", "--trace", "label-swap", "--method", method, "--out", str(tmp_path), "--quiet", *TINY])
    assert code == 0, capsys.readouterr().err
    run_dir = tmp_path / "label-swap" / method / "seed0"
    summary = json.loads((run_dir / "summary.json").read_text())
    clusters = read_rounds(run_dir / "rounds.csv")["n_clusters"]
    assert summary["status"] == "ok" and len(clusters) == 6
    assert clusters[0] == 12  # warm-up: every client on its own model
    assert clusters[2] < 12  # clustered after warmup_rounds = 2
    assert summary["overhead"]["extra_upload_bytes"] > 0  # class counts and principal vectors were uploaded
    first = read_events(run_dir / "events.csv").iloc[0]
    assert (first["round"], first["kind"], first["clients"]) == (2, "recluster_global", " ".join(map(str, range(12))))
    assert first["value"] == clusters[2] and summary["events"]["recluster_global"] == 1
