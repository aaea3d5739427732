"""CFLGT: pulling/pushing forces (Eq. 5-6), trajectories (Eq. 8), their distance, Affinity Propagation, end to end."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from driftbench.cli import main
from driftbench.errors import ConfigError
from driftbench.methods import cflgt
from driftbench.methods.catalog import load_method
from driftbench.methods.cflgt import affinity_clusters, class_forces, trajectory, trajectory_distances
from driftbench.methods.queries import ClientQueries, Overhead
from driftbench.methods.rounds import RunContext
from driftbench.train_config import TrainConfig
from tests.methods.fakes import events


def test_forces_sum_back_to_the_classifier_weight_gradient():
    gen = torch.Generator().manual_seed(0)
    n, d, c = 7, 5, 4
    features = torch.rand(n, d, generator=gen, dtype=torch.float64)
    labels = torch.tensor([0, 1, 1, 3, 0, 2, 1])
    weight = torch.randn(c, d, generator=gen, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(c, generator=gen, dtype=torch.float64)
    logits = features @ weight.T + bias
    F.cross_entropy(logits, labels).backward()
    pull, push = class_forces(features, torch.softmax(logits.detach(), 1), labels)
    assert torch.allclose(push - pull, weight.grad)  # Eq. 5-6: g_wc = -pull_c + push_c
    assert (pull >= 0).all() and (push >= 0).all()  # non-negative features and probabilities


def test_trajectory_averages_each_class_force_over_its_entries():
    features = torch.tensor([[1.0, 3.0], [2.0, 2.0]])
    probs = torch.tensor([[0.75, 0.25], [0.5, 0.5]])
    labels = torch.tensor([0, 1])
    # pull_0 = (1 - .75) [1, 3] / 2, pull_1 = (1 - .5) [2, 2] / 2; push_0 = .5 [2, 2] / 2, push_1 = .25 [1, 3] / 2
    assert trajectory(features, probs, labels).tolist() == pytest.approx([0.25, 0.5, 0.5, 0.25])


def test_trajectory_distance_is_the_mean_l2_between_corresponding_points():
    # client rows: [pull_0, pull_1, push_0, push_1]; points (pull_c, push_c)
    trajectories = np.array([[0.0, 1.0, 0.0, 1.0], [3.0, 1.0, 4.0, 1.0], [0.0, 1.0, 0.0, 1.0]])
    d = trajectory_distances(trajectories)
    assert d[0, 1] == pytest.approx((5.0 + 0.0) / 2) and d[0, 2] == 0.0 and np.allclose(d, d.T)


def test_affinity_propagation_recovers_planted_trajectory_groups():
    rng = np.random.default_rng(0)
    centers = rng.uniform(0, 1, (3, 8))
    truth = np.repeat([2, 0, 1], [6, 5, 7])
    trajectories = centers[truth] + rng.normal(0, 0.01, (len(truth), 8))
    labels = affinity_clusters(trajectory_distances(trajectories), seed=0).labels
    assert len(np.unique(labels)) == 3
    assert all(len(np.unique(labels[truth == g])) == 1 for g in range(3))


def test_affinity_propagation_converges_on_equal_sized_groups():
    """Regression: scikit-learn's default damping 0.5 oscillated here for 1000 iterations and the old code
    kept its 23 non-converged exemplars as clusters; the reference damping 0.9 converges to the 5 groups."""
    rng = np.random.default_rng(0)
    truth = np.repeat(np.arange(5), 20)
    trajectories = rng.uniform(0, 1, (5, 8))[truth] + rng.normal(0, 0.01, (len(truth), 8))
    outcome = affinity_clusters(trajectory_distances(trajectories), seed=0)
    assert outcome.converged and outcome.iterations < cflgt.AP_MAX_ITER
    assert len(np.unique(outcome.labels)) == 5
    assert all(len(np.unique(outcome.labels[truth == g])) == 1 for g in range(5))
    assert outcome.preference == pytest.approx(-np.median(trajectory_distances(trajectories)[~np.eye(100, dtype=bool)]))


def test_a_run_that_does_not_converge_puts_everyone_in_one_cluster(monkeypatch):
    """Regression: a non-converged run used to return its current exemplars as clusters."""
    monkeypatch.setattr(cflgt, "AP_MAX_ITER", 3)
    rng = np.random.default_rng(0)
    outcome = affinity_clusters(trajectory_distances(rng.uniform(0, 1, (30, 8))), seed=0)
    assert not outcome.converged and outcome.labels.tolist() == [0] * 30


class Forces:
    """Clients whose window yields a trajectory of their group (0 or 1), whatever the model."""

    def __init__(self, groups):
        self.groups, self.calls = np.asarray(groups), []

    def outputs(self, clients, model, summarize):
        self.calls.append((clients.tolist(), model))
        features = torch.ones(2, 3)
        probs = torch.tensor([[0.9, 0.1], [0.9, 0.1]])
        labels = torch.tensor([[0, 0], [1, 1]])[self.groups[clients]]
        return np.stack([summarize(features, probs, labels[k]).numpy() for k in range(len(clients))])


def test_cflgt_clusters_once_after_pretraining_unless_asked_to_recluster():
    init = {"head.weight": torch.zeros(2, 3), "head.bias": torch.zeros(2)}
    ctx = RunContext(6, 2, init, TrainConfig(participants=3), seed=0, classifier="head")
    for every, expected_calls in ((0, 1), (2, 3)):
        method = load_method("cflgt", {"pretrain_rounds": "2", "recluster_every": str(every)}).create()
        method.setup(ctx)
        clients = Forces([0, 1, 0, 1, 1, 0])
        overhead = Overhead()
        for rnd in range(7):
            plan = method.plan(rnd, ClientQueries(np.arange(0), clients, 100, overhead), np.random.default_rng(rnd))
            assert np.array_equal(plan.start_models, method.assignment[plan.participants])
            if rnd < 2:
                assert method.num_models == 1 and not clients.calls
        assert len(clients.calls) == expected_calls and all(c == (list(range(6)), 0) for c in clients.calls)
        assert method.assignment.tolist() in ([0, 1, 0, 1, 1, 0], [1, 0, 1, 0, 0, 1]) and method.num_models == 2
        assert events(method) == [("recluster_global", "0 1 2 3 4 5", 2.0)] * expected_calls  # 2 clusters found each time
        # each clustering: 6 probe downloads, 6 x 2C numbers up, 6 forward passes
        assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (
            expected_calls * 600,
            expected_calls * 6 * 4 * 4,
            expected_calls * 6,
        )


def test_bad_parameters_name_the_field():
    with pytest.raises(ConfigError, match="pretrain_rounds"):
        load_method("cflgt", {"pretrain_rounds": "-1"})
    with pytest.raises(ConfigError, match="recluster_every"):
        load_method("cflgt", {"recluster_every": "x"})


def test_cflgt_runs_on_label_swap_through_the_cli(tmp_path, capsys):
    args = [
        "run",
        "--trace",
        "label-swap",
        "--method",
        "cflgt",
        "--out",
        str(tmp_path),
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
        "method.pretrain_rounds=2",
        "--set",
        "method.recluster_every=2",
        "--quiet",
    ]
    assert main(args) == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "label-swap/cflgt/seed0/summary.json").read_text())
    assert summary["status"] == "ok"
    # clustered at rounds 2 and 4: each time 12 clients run one forward pass and upload 2 x 10 numbers
    assert summary["overhead"]["client_extra_passes"] == 24 and summary["overhead"]["extra_upload_bytes"] == 24 * 20 * 4
