"""``cflgt``: CFLGT (004 Algorithm 1): FedAvg pre-training, gradient trajectories of the classifier, Affinity Propagation.

After ``pretrain_rounds`` rounds of FedAvg (25, section V.A) every client runs the global model
over its window and computes, per class c, the pulling force (positives: sum of (1 - p_c) v) and
the pushing force (negatives: sum of p_c v) at the classifier input v (Eq. 6), each averaged over
its d entries to a scalar (Eq. 8): C points (pull, push), the client's gradient trajectory.
The server clusters trajectories by Affinity Propagation on the mean L2 distance between
corresponding points. Clusters then stay fixed (the paper has no drift handling) unless
``recluster_every`` > 0 re-runs the clustering every that many rounds.

Choices where the paper is silent (one line each):
- forces are divided by the window size (the paper sums), so clients with more data stay comparable;
- Affinity Propagation has Frey and Dueck's reference settings (median preference, damping 0.9, 100 stable iterations, <= 1000);
- a run of Affinity Propagation that does not converge puts every client in one cluster;
- no public code of the authors was found to compare with;
- diagnostics.csv records ap_distance_min/max, ap_preference, ap_iterations, ap_converged and ap_clusters at each clustering.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from scipy.spatial.distance import cdist
from sklearn.cluster import AffinityPropagation
from sklearn.exceptions import ConvergenceWarning

from driftbench.config import require
from driftbench.methods import server_work as work
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.clustering import relabel, remix_models
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan

log = logging.getLogger(__name__)
AP_MAX_ITER = 1000
AP_CONVERGENCE_ITER = 100
AP_DAMPING = 0.9


@dataclass(frozen=True)
class CFLGTParams(ProxParams):
    """FedAvg pre-training rounds K, and re-clustering every ``recluster_every`` rounds after that (0 = never, the paper)."""

    pretrain_rounds: int = 25
    recluster_every: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.pretrain_rounds >= 0, f"pretrain_rounds must be >= 0, got {self.pretrain_rounds}")
        require(self.recluster_every >= 0, f"recluster_every must be >= 0 (0 = never), got {self.recluster_every}")


def class_forces(features: torch.Tensor, probs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 6 per class: pulling and pushing forces (each C x d), per sample, so that push - pull = d(mean CE)/dW.

    Choice: forces are divided by the window size (the paper sums) so clients with different
    amounts of data stay comparable.
    """
    positive = F.one_hot(labels, probs.shape[1]).to(probs.dtype)
    pull = ((positive * (1 - probs)).T @ features) / len(labels)
    push = (((1 - positive) * probs).T @ features) / len(labels)
    return pull, push


def trajectory(features: torch.Tensor, probs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Eq. 8: a client's gradient trajectory [Z'_1 (C), Z'_2 (C)]: each class's forces averaged over their d entries."""
    pull, push = class_forces(features, probs, labels)
    return torch.cat([pull.mean(1), push.mean(1)])


def trajectory_distances(trajectories: np.ndarray) -> np.ndarray:
    """Mean over classes of the L2 distance between corresponding points (pull_c, push_c) of two trajectories."""
    classes = trajectories.shape[1] // 2
    points = np.stack([trajectories[:, :classes], trajectories[:, classes:]], axis=2)
    work.charge(classes * (work.distances(len(points), len(points), 2) + len(points) ** 2))
    distances: np.ndarray = sum(cdist(points[:, c], points[:, c]) for c in range(classes)) / classes
    return distances


@dataclass(frozen=True)
class APOutcome:
    """Affinity Propagation's labels and the quantities it decided on."""

    labels: np.ndarray
    preference: float
    iterations: int
    converged: bool


def affinity_clusters(distances: np.ndarray, seed: int) -> APOutcome:
    """Affinity Propagation (scikit-learn) on similarity = -distance, with Frey and Dueck's reference settings.

    Choices (the paper names Affinity Propagation [36] and nothing else): preference = the
    median similarity between distinct clients, damping 0.9, converged once the exemplars are
    unchanged for 100 iterations, at most 1000 (the reference ``apcluster``'s defaults);
    scikit-learn's damping 0.5 oscillates on trajectories of equal-sized groups. A run that
    does not converge puts every client in one cluster (its exemplars are not a clustering).
    """
    similarity = -distances
    pairs = similarity[~np.eye(len(similarity), dtype=bool)]
    preference = float(np.median(pairs)) if len(pairs) else 0.0
    model = AffinityPropagation(
        affinity="precomputed",
        preference=preference,
        damping=AP_DAMPING,
        convergence_iter=AP_CONVERGENCE_ITER,
        max_iter=AP_MAX_ITER,
        random_state=seed,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        labels = model.fit_predict(similarity)
    work.charge(work.affinity_propagation(len(distances), model.n_iter_))
    if any(issubclass(w.category, ConvergenceWarning) for w in caught):
        log.warning("cflgt: Affinity Propagation did not converge in %d iterations; one cluster for all clients", AP_MAX_ITER)
        return APOutcome(np.zeros(len(distances), dtype=np.int64), preference, model.n_iter_, False)
    return APOutcome(relabel(labels), preference, model.n_iter_, True)


class CFLGT(Method):
    """CFLGT; participants are drawn uniformly and train their cluster's model.

    Counting: the trajectory query downloads the probe model to every client, costs each one
    forward pass and uploads 2C numbers. The probe is the global FedAvg model at the first
    clustering; at a re-clustering it is the mean of the clients' cluster models (the shared
    model every client evaluates), and each new cluster starts from the mean of its members'
    old cluster models.
    """

    name = "cflgt"
    Params = CFLGTParams

    @property
    def reclusters(self) -> bool:
        """Only with ``recluster_every`` > 0 (the paper clusters once)."""
        return bool(self.params.recluster_every > 0)

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Cluster when due, then sample participants uniformly; each trains its cluster's model."""
        if self._clustering_due(rnd):
            self._cluster(clients)
        return self.uniform_plan(rng)

    def _clustering_due(self, rnd: int) -> bool:
        since: int = rnd - self.params.pretrain_rounds
        every: int = self.params.recluster_every
        return since == 0 or (since > 0 and every > 0 and since % every == 0)

    def _cluster(self, clients: ClientQueries) -> None:
        everyone = np.arange(self.ctx.num_clients)
        old_models, old_assignment = self.models, self.assignment
        self.models = remix_models(old_models, old_assignment, np.zeros(self.ctx.num_clients, dtype=np.int64))
        trajectories = clients.features(everyone, 0, trajectory)
        distances = trajectory_distances(trajectories)
        outcome = affinity_clusters(distances, self.ctx.seed)
        self.assignment = outcome.labels
        self.measure_clustering(distances, outcome)
        self.events.clustering(self.assignment)
        self.remix(old_assignment, self.assignment, remix_models(old_models, old_assignment, self.assignment))

    def measure_clustering(self, distances: np.ndarray, outcome: APOutcome) -> None:
        """Log Affinity Propagation's inputs and outcome: similarity range, preference, iterations, convergence."""
        pairs = distances[~np.eye(len(distances), dtype=bool)]
        if len(pairs):
            self.events.measure("ap_distance_min", float(pairs.min()))
            self.events.measure("ap_distance_max", float(pairs.max()))
        self.events.measure("ap_preference", outcome.preference)
        self.events.measure("ap_iterations", outcome.iterations)
        self.events.measure("ap_converged", float(outcome.converged))
        self.events.measure("ap_clusters", float(len(np.unique(outcome.labels))))
