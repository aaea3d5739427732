"""``pacfl``: one-shot clustering by principal angles between clients' data subspaces (Vahidian et al., AAAI 2023).

Choices (the paper; its authors' code, MMorafah/PACFL; driftbench):
- Each client sends the top-p left singular vectors of its whole data matrix (the code: p per label, stacked).
- Proximity: the smallest principal angle, degrees (the paper's Theta_1, as FedDAG's Eq. 4 reads it; code: min over vector pairs).
- Average linkage (UPGMA, sklearn) merging below ``threshold`` = 4.9 degrees (the paper tunes beta per dataset; 4.9 is
  the authors' released CIFAR-10 script, used on every trace; the code's "average" is WPGMA).
- One shot at round 0 over every client; clusters never change afterwards (drifted clients keep theirs).
- Every cluster model starts from the same initial model; no local fine-tuning of cluster models.
- A newcomer (its section on newcomers) uploads its vectors and joins the cluster of least average angle to its
  members: the average linkage the clustering merges by, without re-clustering.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import torch
from sklearn.cluster import AgglomerativeClustering

from driftbench.config import require
from driftbench.engine.batched import Params as NamedTensors  # in the class body, Params names the parameter dataclass
from driftbench.methods import server_work as work
from driftbench.methods.bank import bank_rows, replicate
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.clustering import kernel_device, principal_vectors, smallest_principal_angles
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan


@dataclass(frozen=True)
class PACFLParams(ProxParams):
    """``p`` principal vectors per client; clusters merge while their average linkage angle (degrees) is below ``threshold``."""

    p: int = 3
    threshold: float = 4.9

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.p >= 1, f"p must be >= 1, got {self.p}")
        require(0 < self.threshold <= 90, f"threshold must be in (0, 90] degrees, got {self.threshold}")


class PACFL(Method):
    """PACFL: each client uploads p principal vectors of its data once; hierarchical clustering of principal angles.

    Proximity is the smallest principal angle (0 for subspaces that share a direction, 90 for
    orthogonal ones); average linkage merges clusters up to ``threshold`` degrees. One shot:
    clusters are fixed after round 0 (drifted clients keep theirs).
    """

    name = "pacfl"
    Params = PACFLParams

    @property
    def reclusters(self) -> bool:
        """No: one shot, at round 0."""
        return False

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Cluster once at round 0; sample participants uniformly; each trains its cluster's model."""
        if rnd == 0:
            n, p = self.ctx.num_clients, self.params.p
            vectors = clients.data(np.arange(n), partial(principal_vectors, p=p))
            stacked = torch.as_tensor(vectors, device=kernel_device(vectors.size)).reshape(n, -1, p)
            self.vectors = stacked
            angles = smallest_principal_angles(stacked).cpu().numpy()
            self.measure_angles(angles[~np.eye(n, dtype=bool)])
            self.assignment = angle_clusters(angles, self.params.threshold)
            self.events.clustering(self.assignment)
            self.models = replicate({k: v[0] for k, v in self.models.items()}, int(self.assignment.max()) + 1)
        return self.uniform_plan(rng)

    def admit(self, newcomers: np.ndarray, clients: ClientQueries, rng: np.random.Generator) -> NamedTensors:
        """Each newcomer uploads its principal vectors and joins the cluster of least average angle to its members."""
        p = self.params.p
        vectors = clients.data(newcomers, partial(principal_vectors, p=p))
        stacked = torch.as_tensor(vectors, device=self.vectors.device).reshape(len(newcomers), -1, p)
        angles = smallest_principal_angles(stacked, self.vectors).cpu().numpy()
        clusters = np.unique(self.assignment)
        average = np.stack([angles[:, self.assignment == z].mean(axis=1) for z in clusters], axis=1)
        return bank_rows(self.models, clusters[average.argmin(axis=1)])

    def measure_angles(self, pairs: np.ndarray) -> None:
        """Record the smallest, median and largest angle between two clients (the threshold's context)."""
        if len(pairs):
            for name, stat in (("angle_min", np.min), ("angle_median", np.median), ("angle_max", np.max)):
                self.events.measure(name, float(stat(pairs)))


def angle_clusters(angles: np.ndarray, threshold: float) -> np.ndarray:
    """Average-linkage hierarchical clusters of a precomputed angle matrix, merged up to ``threshold``."""
    if len(angles) < 2:
        return np.zeros(len(angles), dtype=np.int64)
    work.charge(work.linkage(len(angles)))
    model = AgglomerativeClustering(n_clusters=None, metric="precomputed", linkage="average", distance_threshold=threshold)
    labels: np.ndarray = model.fit_predict((angles + angles.T) / 2).astype(np.int64)
    return labels
