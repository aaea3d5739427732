"""``static``: k-means on label distributions once at round 0 (K by silhouette), never re-clustered."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.methods.bank import replicate
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.clustering import kmeans_by_silhouette
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan


@dataclass(frozen=True)
class StaticParams(ProxParams):
    """K is searched in ``k_min..k_max`` by silhouette; ``mu`` is the FedProx term."""

    k_min: int = 2
    k_max: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        require(2 <= self.k_min <= self.k_max, f"need 2 <= k_min <= k_max, got {self.k_min}..{self.k_max}")


class StaticClustering(Method):
    """Clusters clients once by their initial label distributions; drifted clients keep their cluster."""

    name = "static"
    Params = StaticParams

    @property
    def reclusters(self) -> bool:
        """No: one clustering, at round 0."""
        return False

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Cluster at round 0; sample participants uniformly; each trains its cluster's model."""
        if rnd == 0:
            counts = clients.label_histograms(np.arange(self.ctx.num_clients))
            dists = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
            self.assignment = kmeans_by_silhouette(dists, self.params.k_min, self.params.k_max, self.ctx.seed)
            self.events.clustering(self.assignment)
            self.models = replicate(self.ctx.init_params, int(self.assignment.max()) + 1)
        return self.uniform_plan(rng)
