"""``cfl``: clustered FL recursive bipartition by the cosine similarity of updates (Sattler et al., IEEE TNNLS 2021)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics.pairwise import cosine_similarity

from driftbench.config import require
from driftbench.methods import server_work as work
from driftbench.methods.base import ClientQueries, Method, Plan, ProxParams, RunContext, TrainResult, cluster_average
from driftbench.methods.clustering import flat_updates
from driftbench.methods.events import clusters_in_use


@dataclass(frozen=True)
class CFLParams(ProxParams):
    """Split when the mean update's norm is below ``eps1`` and the largest update's norm above ``eps2``."""

    eps1: float = 0.4
    eps2: float = 1.0
    warmup: int = 10
    max_clusters: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.eps1 > 0 and self.eps2 > 0, f"eps1 and eps2 must be > 0, got {self.eps1}, {self.eps2}")
        require(self.warmup >= 0, f"warmup must be >= 0, got {self.warmup}")
        require(self.max_clusters >= 1, f"max_clusters must be >= 1, got {self.max_clusters}")


def should_split(updates: np.ndarray, weights: np.ndarray, eps1: float, eps2: float) -> bool:
    """Sattler's criterion: the weighted mean update is small (near a stationary point) but some update is large."""
    work.charge(work.aggregation(*updates.shape) + work.norms(updates.size))
    mean = np.average(updates, axis=0, weights=weights)
    return bool(np.linalg.norm(mean) < eps1 and np.linalg.norm(updates, axis=1).max() > eps2)


def bipartition(directions: np.ndarray) -> np.ndarray:
    """Two groups (0/1) by complete-linkage clustering of the cosine dissimilarity of the rows."""
    n = len(directions)
    work.charge(work.cosine_similarity(n, n, directions.shape[1]))
    dissimilarity = np.clip(1 - cosine_similarity(directions), 0, 2)
    work.charge(work.linkage(n))
    model = AgglomerativeClustering(n_clusters=2, metric="precomputed", linkage="complete")
    groups: np.ndarray = model.fit_predict(dissimilarity).astype(np.int64)
    return groups


class CFL(Method):
    """CFL: one cluster at first; a cluster whose participants meet the split criterion is bipartitioned.

    With partial participation the criterion is checked on a cluster's participants of the
    last round (at least two, ``warmup`` rounds after the cluster was made); the bipartition
    then uses every member's gradient at the cluster model (counted as extra passes), so
    members not sampled that round are split too. The second half starts from a copy of the
    cluster's model. Drifted clients keep their cluster (CFL has no drift handling).
    """

    name = "cfl"
    Params = CFLParams

    def setup(self, ctx: RunContext) -> None:
        """One cluster; no split pending."""
        super().setup(ctx)
        self.born = np.zeros(1, dtype=np.int64)
        self.to_split = np.zeros(0, dtype=np.int64)

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Split the clusters flagged last round, then sample participants uniformly."""
        for cluster in self.to_split:
            if self.num_models < self.params.max_clusters:
                self.split(clients, int(cluster), rnd)
        self.to_split = np.zeros(0, dtype=np.int64)
        return self.uniform_plan(rng)

    def split(self, clients: ClientQueries, cluster: int, rnd: int) -> None:
        """Bipartition ``cluster`` by its members' gradients; the second half gets a copy of the model."""
        members = np.flatnonzero(self.assignment == cluster)
        if len(members) < 2:
            return
        halves = bipartition(-clients.gradients(members, cluster))
        self.assignment[members[halves == 1]] = self.num_models
        self.events.record("split", clients=members, value=clusters_in_use(self.assignment))
        self.models = {n: torch.cat([p, p[cluster : cluster + 1]]) for n, p in self.models.items()}
        self.born = np.append(self.born, rnd)
        self.born[cluster] = rnd

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """Average each cluster's participants; flag clusters whose updates meet the split criterion."""
        start = result.plan.start_models
        candidates = [c for c in np.unique(start) if (start == c).sum() >= 2 and rnd - self.born[c] >= self.params.warmup]
        flagged = []
        if candidates:
            updates = flat_updates(result.params, self.models, start)  # P floats per participant
            flagged = [
                c
                for c in candidates
                if should_split(updates[start == c], result.num_samples[start == c], self.params.eps1, self.params.eps2)
            ]
        self.to_split = np.asarray(flagged, dtype=np.int64)
        self.models = cluster_average(self.models, result.params, start, result.num_samples)
