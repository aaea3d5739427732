"""CFLGT conformance (paper 004, Algorithm 1 lines 5-11, Eq. 6 and Eq. 8, section IV.B).

100 clients in 5 groups of 20 (section V.A's scenario 1 shape): group g holds labels {2g, 2g+1}
of 10 classes, 20 samples each. A sample of class y has features v = prototype_y + small noise
(non-negative, as after a ReLU) and probabilities from one fixed softmax classifier (the probe
model every client receives). Each client computes, per class, its pulling force (positives:
sum (1 - p_c) v) and pushing force (negatives: sum p_c v) (Eq. 6), averages each over its d
entries (Eq. 8), and the server runs Affinity Propagation on the mean L2 distance between
corresponding points of two trajectories (section IV.B).

Known answer: the groups share no label, so a client's trajectory is zero-pull on the 8 classes
it lacks and positive on its 2: trajectories of one group lie within 0.001 of each other and
more than 0.1 from any other group's, and Affinity Propagation must return exactly the 5 groups
without being told their number.
"""

import numpy as np
import pytest
import torch

from driftbench.methods.catalog import load_method
from driftbench.methods.cflgt import trajectory_distances
from driftbench.methods.queries import ClientQueries, Overhead
from driftbench.methods.rounds import RunContext
from driftbench.train_config import TrainConfig

GROUPS, PER_GROUP, CLASSES, DIM = 5, 20, 10, 6
TRUTH = np.repeat(np.arange(GROUPS), PER_GROUP)


class ProbeClients:
    """Each client's window under the probe model: features, probabilities and labels of its label pair."""

    def __init__(self, seed: int = 0) -> None:
        gen = torch.Generator().manual_seed(seed)
        prototypes = torch.rand(CLASSES, DIM, generator=gen, dtype=torch.float64)
        weight = torch.randn(CLASSES, DIM, generator=gen, dtype=torch.float64)
        self.windows = []
        for group in TRUTH:
            labels = torch.arange(2 * group, 2 * group + 2).repeat_interleave(20)
            features = prototypes[labels] + 0.05 * torch.rand(len(labels), DIM, generator=gen, dtype=torch.float64)
            self.windows.append((features, torch.softmax(features @ weight.T, 1), labels))
        self.trajectories: np.ndarray | None = None

    def outputs(self, clients, model, summarize):
        rows = np.stack([summarize(*self.windows[c]).numpy() for c in clients])
        self.trajectories = rows
        return rows


def cflgt_clusters(clients: ProbeClients) -> tuple[np.ndarray, dict[str, float]]:
    """CFLGT's clusters after its pre-training rounds (paper parameters), on these clients, and its decision quantities."""
    init = {"head.weight": torch.zeros(CLASSES, DIM), "head.bias": torch.zeros(CLASSES)}
    ctx = RunContext(len(TRUTH), CLASSES, init, TrainConfig(participants=20), seed=0, classifier="head")
    method = load_method("cflgt").create()
    method.setup(ctx)
    for rnd in range(method.params.pretrain_rounds + 1):
        method.plan(rnd, ClientQueries(np.arange(0), clients, 100, Overhead()), np.random.default_rng(rnd))
    measured = {row["quantity"]: row["value"] for row in method.events.measures}
    assert measured["ap_converged"] == 1.0 and measured["ap_iterations"] < 1000
    assert measured["ap_clusters"] == len(np.unique(method.assignment))
    return method.assignment, measured


def test_the_trajectories_are_well_separated_groups_and_the_preference_is_their_median_similarity():
    """The premise of the known answer: within-group distances < 0.001 < 0.1 < between-group distances; Affinity
    Propagation's preference is Frey and Dueck's median similarity (similarity = -distance, distinct clients)."""
    clients = ProbeClients()
    _, measured = cflgt_clusters(clients)
    distances = trajectory_distances(clients.trajectories)
    same = TRUTH[:, None] == TRUTH[None, :]
    assert distances[same].max() < 1e-3 and distances[~same].min() > 0.1
    off_diagonal = ~np.eye(len(TRUTH), dtype=bool)
    assert measured["ap_preference"] == pytest.approx(np.median(-distances[off_diagonal]))
    assert measured["ap_distance_max"] == pytest.approx(distances.max())


def test_affinity_propagation_finds_the_five_groups_without_being_told_k():
    """Algorithm 1 line 11: C, clusters <- AffinityPropagation(trajectories); here C = 5 and clusters = groups."""
    labels, _ = cflgt_clusters(ProbeClients())
    assert len(np.unique(labels)) == GROUPS
    assert all(len(np.unique(labels[TRUTH == g])) == 1 for g in range(GROUPS))
