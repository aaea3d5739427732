"""Aggregation, participant sampling, static clustering and the oracle on hand-made inputs."""

import numpy as np
import pytest
import torch

from driftbench.errors import ConfigError, RunError
from driftbench.methods import server_work
from driftbench.methods.bank import cluster_average
from driftbench.methods.catalog import load_method
from driftbench.methods.clustering import kmeans_by_silhouette
from driftbench.methods.events import EventLog
from driftbench.methods.queries import ClientQueries, Overhead, RoundTraffic
from driftbench.methods.rounds import RunContext, sample_participants
from driftbench.train_config import TrainConfig
from tests.methods.fakes import events


def ctx(n=6, participants=3):
    return RunContext(n, 3, {"w": torch.zeros(2, dtype=torch.float64)}, TrainConfig(participants=participants), seed=0)


class FakeClients:
    """Hand-made client answers: histograms as given, losses = client + model, gradients of length 5."""

    def __init__(self, hist=None):
        self.hist = hist

    def label_histograms(self, clients):
        return self.hist[clients]

    def losses(self, clients, models):
        return clients[:, None] + models[None, :].astype(float)

    def gradients(self, clients, model):
        return np.ones((len(clients), 5)) * model

    def outputs(self, clients, model, summarize):
        return np.stack([summarize(np.ones((2, 3)) * c, np.full((2, 4), 0.25), np.zeros(2)) for c in clients])

    def inputs(self, clients, summarize):
        return np.stack([summarize(np.ones((2, 1, 2, 2)) * c, np.zeros(2)) for c in clients])


def queries(hist=None, truth=None, overhead=None, model_bytes=100):
    return ClientQueries(np.arange(0), FakeClients(hist), model_bytes, overhead or Overhead(), truth=truth)


def test_cluster_average_weights_by_samples_and_keeps_untouched_models():
    bank = {"w": torch.tensor([[0.0, 0.0], [5.0, 5.0], [9.0, 9.0]], dtype=torch.float64)}
    trained = {"w": torch.tensor([[1.0, 2.0], [4.0, 8.0], [3.0, 3.0]], dtype=torch.float64)}
    out = cluster_average(bank, trained, np.array([0, 0, 2]), np.array([1, 3, 2]))
    # model 0: (1*[1,2] + 3*[4,8]) / 4 = [3.25, 6.5]; model 1 had no participant; model 2: [3, 3]
    assert out["w"].tolist() == [[3.25, 6.5], [5.0, 5.0], [3.0, 3.0]]


def test_sample_participants_is_distinct_sorted_and_capped():
    rng = np.random.default_rng(0)
    picked = sample_participants(rng, 10, 4)
    assert len(set(picked.tolist())) == 4 and picked.tolist() == sorted(picked.tolist())
    assert sample_participants(rng, 3, 10).tolist() == [0, 1, 2]


def test_kmeans_by_silhouette_finds_planted_groups():
    rng = np.random.default_rng(0)
    centers = np.eye(4)[:3]
    points = np.repeat(centers, 10, axis=0) + rng.normal(0, 0.01, (30, 4))
    labels = kmeans_by_silhouette(points, 2, 10, seed=0)
    assert len(set(labels.tolist())) == 3
    assert all(len(set(labels[i * 10 : (i + 1) * 10].tolist())) == 1 for i in range(3))
    assert set(kmeans_by_silhouette(np.ones((5, 3)), 2, 10, seed=0).tolist()) == {0}


def test_static_clusters_label_histograms_once_and_counts_their_upload():
    hist = np.array([[9, 1, 0], [8, 2, 0], [9, 0, 1], [0, 1, 9], [1, 0, 9], [0, 2, 8]], dtype=float)
    method = load_method("static").create()
    method.setup(ctx())
    overhead = Overhead()
    plan = method.plan(0, queries(hist, overhead=overhead), np.random.default_rng(0))
    assert method.assignment[:3].tolist() == [method.assignment[0]] * 3
    assert method.assignment[3:].tolist() == [method.assignment[3]] * 3 != method.assignment[:3].tolist()
    assert method.num_models == 2 and overhead.upload_bytes == 6 * 3 * 4
    assert np.array_equal(plan.start_models, method.assignment[plan.participants])
    before = method.assignment.copy()
    method.plan(1, queries(hist[::-1].copy()), np.random.default_rng(1))
    assert np.array_equal(method.assignment, before)  # never re-clusters
    assert events(method) == [("recluster_global", "0 1 2 3 4 5", 2.0)]


def test_oracle_follows_truth_grows_its_bank_and_logs_each_regrouping():
    method = load_method("oracle").create()
    method.setup(ctx())
    method.plan(0, queries(truth=np.array([0, 0, 0, 1, 1, 1])), np.random.default_rng(0))
    assert method.num_models == 2
    method.plan(1, queries(truth=np.array([0, 3, 0, 1, 1, 1])), np.random.default_rng(0))
    assert method.num_models == 4 and method.assignment.tolist() == [0, 3, 0, 1, 1, 1]
    method.plan(2, queries(truth=np.array([1, 3, 0, 1, 1, 0])), np.random.default_rng(0))
    method.plan(3, queries(truth=np.array([1, 3, 0, 1, 1, 0])), np.random.default_rng(0))
    assert events(method) == [
        ("recluster_global", "0 1 2 3 4 5", 2.0),
        ("create", "1", 3.0),  # group 3 is new (group 2 never had clients): 3 groups in use
        ("move", "0 5", None),
    ]


def test_loss_and_gradient_queries_count_their_traffic_and_passes():
    overhead = Overhead()
    q = queries(overhead=overhead, model_bytes=100)
    assert q.losses(np.array([0, 2]), np.array([0, 1, 2])).tolist() == [[0, 1, 2], [2, 3, 4]]
    # 2 clients x 3 models: 6 model downloads, 6 numbers up, 6 passes
    assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (600, 24, 6)
    assert q.gradients(np.array([1, 3, 4]), 2).shape == (3, 5)
    # + 3 model downloads, 3 x 5 numbers up, 3 passes
    assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (900, 84, 9)


class SlowClients:
    """Client answers that take ``cost`` seconds on a fake clock and charge server work that must not count."""

    def __init__(self, clock, cost):
        self.clock, self.cost = clock, cost

    def gradients(self, clients, model):
        self.clock[0] += self.cost
        server_work.charge(10**6)
        return np.ones((len(clients), 5))


def test_queries_time_client_answers_and_keep_them_off_the_servers_count(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("driftbench.methods.queries.time.perf_counter", lambda: clock[0])
    q = ClientQueries(np.arange(0), SlowClients(clock, 2.5), 100, Overhead())
    with server_work.counting() as counter:
        q.gradients(np.array([0, 1]), 0)
        q.gradients(np.array([2]), 0)
    assert q.seconds == 5.0 and counter.flops == 0


def test_feature_and_data_queries_upload_only_the_client_summaries():
    overhead = Overhead()
    q = queries(overhead=overhead, model_bytes=100)
    got = q.features(np.array([1, 3]), 0, lambda f, p, y: np.concatenate([f.mean(0), p.sum(0)]))
    assert got.tolist() == [[1, 1, 1, 0.5, 0.5, 0.5, 0.5], [3, 3, 3, 0.5, 0.5, 0.5, 0.5]]
    # 2 model downloads, 2 x 7 numbers up, 2 passes
    assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (200, 56, 2)
    assert q.data(np.array([0, 1, 2]), lambda x, y: x.reshape(-1)[:2]).tolist() == [[0, 0], [1, 1], [2, 2]]
    # no model, 3 x 2 numbers up, no passes
    assert (overhead.download_bytes, overhead.upload_bytes, overhead.client_extra_passes) == (200, 80, 2)


def test_only_the_oracle_may_read_ground_truth():
    with pytest.raises(RunError, match="only an oracle"):
        queries().ground_truth()


def test_fedprox_is_fedavg_with_mu_and_overrides_are_checked():
    method = load_method("fedprox").create()
    method.setup(ctx())
    plan = method.plan(0, queries(), np.random.default_rng(0))
    assert plan.mu == 0.01 and len(plan.participants) == 3 and plan.start_models.tolist() == [0, 0, 0]
    assert events(method) == []  # one global model: no decisions to log
    assert load_method("fedavg", {"mu": "0.5"}).params.mu == 0.5
    with pytest.raises(ConfigError, match="mu must be >= 0"):
        load_method("fedavg", {"mu": "-1"})
    with pytest.raises(ConfigError, match="unknown key 'tau'; allowed: aggregator, aggregator_options, mu"):
        load_method("fedavg", {"tau": "1"})


def test_round_traffic_gets_each_clients_share_for_the_clock():
    traffic = RoundTraffic.empty(5)
    q = ClientQueries(np.arange(0), FakeClients(np.ones((5, 3))), 100, Overhead(), traffic)
    q.label_histograms(np.array([0, 4]))
    q.losses(np.array([4]), np.array([0, 1, 2]), trains_one=True)
    q.gradients(np.array([2]), 0)
    assert traffic.clients().tolist() == [0, 2, 4]
    assert traffic.download.tolist() == [0, 0, 100, 0, 200]
    assert traffic.upload.tolist() == [12, 0, 20, 0, 12 + 12]
    np.testing.assert_allclose(traffic.work, [0, 0, 1, 0, 1])  # 3 forward-only passes = 1 training pass


def test_measured_quantities_are_stamped_with_the_round_and_names_are_checked():
    log = EventLog()
    log.round = 7
    log.measure("mean_update_norm", np.float32(0.25))
    assert log.measures == [{"round": 7, "quantity": "mean_update_norm", "value": 0.25}]
    assert type(log.measures[0]["value"]) is float
    with pytest.raises(ConfigError, match="snake_case"):
        log.measure("Mean update norm", 1.0)
