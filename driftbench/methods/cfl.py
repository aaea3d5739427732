"""``cfl``: clustered FL recursive bipartition by the cosine similarity of updates (Sattler et al., IEEE TNNLS 2021).

Choices (the paper; its authors' notebook, felisat/clustered-federated-learning; driftbench):
- Split test as the paper's: |sample-weighted mean update| < eps1 and max update norm > eps2 (notebook: unweighted mean).
- eps1, eps2 are absolute norms of one round's update (lr x local steps); eps1 = 0.4 as the notebook, eps2 = 1.0 (it: 1.6).
- Bipartition as the paper's: least largest cross-cluster cosine similarity, found exactly by single linkage (notebook: complete).
- The paper's test of a split against the noise bound gamma_max is not applied (gamma_max = 0), as in the notebook.
- A cluster may split ``warmup`` rounds after it was made (notebook: after round 20), with two or more participants that round.
- The test reads the round's participants; the bipartition every member's gradient at the cluster model (absent ones split too).
- At most ``max_clusters`` clusters; no cache of pre-split models (the notebook's): a client is served its cluster's model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics.pairwise import cosine_similarity

from driftbench.config import require
from driftbench.methods import server_work as work
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.clustering import flat_updates
from driftbench.methods.events import clusters_in_use
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, RunContext, TrainResult


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


def update_norms(updates: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """The norm of the weighted mean update and the largest update norm (the quantities of Sattler's criterion)."""
    work.charge(work.aggregation(*updates.shape) + work.norms(updates.size))
    mean = np.average(updates, axis=0, weights=weights)
    return float(np.linalg.norm(mean)), float(np.linalg.norm(updates, axis=1).max())


def should_split(mean_norm: float, max_norm: float, eps1: float, eps2: float) -> bool:
    """Sattler's criterion: the mean update is small (near a stationary point) but some update is large."""
    return mean_norm < eps1 and max_norm > eps2


def similarities(directions: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows."""
    n = len(directions)
    work.charge(work.cosine_similarity(n, n, directions.shape[1]))
    similarity: np.ndarray = cosine_similarity(directions)
    return similarity


def bipartition(similarity: np.ndarray) -> np.ndarray:
    """Two groups (0/1) whose largest cross-group similarity is the smallest possible: single linkage on 1 - similarity."""
    work.charge(work.linkage(len(similarity)))
    model = AgglomerativeClustering(n_clusters=2, metric="precomputed", linkage="single")
    groups: np.ndarray = model.fit_predict(np.clip(1 - similarity, 0, 2)).astype(np.int64)
    return groups


def cross_similarity(similarity: np.ndarray, groups: np.ndarray) -> float:
    """The largest similarity between members of different groups (the paper's alpha_cross_max)."""
    return float(similarity[np.ix_(groups == 0, groups == 1)].max())


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
        similarity = similarities(-clients.gradients(members, cluster))
        halves = bipartition(similarity)
        self.events.measure("split_cross_similarity", cross_similarity(similarity, halves))
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
            for c in candidates:
                mean_norm, max_norm = update_norms(updates[start == c], result.num_samples[start == c])
                self.events.measure(f"mean_update_norm_cluster{c}", mean_norm)
                self.events.measure(f"max_update_norm_cluster{c}", max_norm)
                if should_split(mean_norm, max_norm, self.params.eps1, self.params.eps2):
                    flagged.append(c)
        self.to_split = np.asarray(flagged, dtype=np.int64)
        self.models = self.average(result)
