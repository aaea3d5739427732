"""``flhc``: FedAvg warm-up, one clustering of every client's update, then independent per-cluster FedAvg.

FL+HC (Briggs, Fan and Andras, IJCNN 2020): after ``warmup`` rounds of FedAvg, every client
trains the global model and uploads its update; agglomerative hierarchical clustering of the
updates (Euclidean distance and Ward linkage by default) cut at ``k`` clusters (CFLGT 004's
"FL+HC(20)") or at a distance ``threshold`` (Briggs') splits the clients, and each cluster then
runs FedAvg on its own model, starting from the global model, for the remaining rounds.
One-Shot (MSCFL 002's baseline, after Ghosh et al. 2019) is the same mechanism with k-means
(``clusterer = "kmeans"``) on the updates.

Choices (the papers; driftbench):
- Every client takes part in the clustering round (Briggs' algorithm; CFLGT: "all clients are involved").
- The clustering round's uploads are each new cluster's first FedAvg round from the global model (not discarded).
- Clusters never change afterwards: a client whose data drifts keeps its cluster (neither paper re-clusters).
- After clustering, the trace's participants are drawn uniformly from all clients, not a quota per cluster.
- k-means is the shared helper (scikit-learn, 10 restarts, seeded by the run seed); K above the number of clients is cut to it.
- diagnostics.csv records update_norm_min/median/max at the clustering (the scale a distance threshold is set against).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.cluster import AgglomerativeClustering

from driftbench.config import require
from driftbench.methods import server_work as work
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.clustering import flat_updates, kmeans, relabel, remix_models
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, TrainResult

CLUSTERERS = ("hierarchical", "kmeans")
LINKAGES = ("ward", "complete", "average", "single")
METRICS = ("euclidean", "manhattan", "cosine")


@dataclass(frozen=True)
class FLHCParams(ProxParams):
    """FedAvg rounds before the clustering round, the clusterer, and where it stops: ``k`` clusters or a distance ``threshold``.

    ``hierarchical`` takes exactly one of ``k`` > 0 and ``threshold`` > 0 (0 = unused) and uses
    ``metric`` and ``linkage``; ``kmeans`` takes ``k`` and is Euclidean.
    """

    warmup: int = 25
    clusterer: str = "hierarchical"
    k: int = 4
    threshold: float = 0.0
    metric: str = "euclidean"
    linkage: str = "ward"

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.warmup >= 0, f"warmup must be >= 0, got {self.warmup}")
        require(self.clusterer in CLUSTERERS, f"clusterer must be one of {', '.join(CLUSTERERS)}, got {self.clusterer!r}")
        require(self.k >= 0 and self.threshold >= 0, f"k and threshold must be >= 0, got {self.k} and {self.threshold}")
        require(self.linkage in LINKAGES, f"linkage must be one of {', '.join(LINKAGES)}, got {self.linkage!r}")
        require(self.metric in METRICS, f"metric must be one of {', '.join(METRICS)}, got {self.metric!r}")
        if self.clusterer == "kmeans":
            require(
                self.k >= 1 and self.threshold == 0,
                f"kmeans needs k >= 1 and no threshold, got k = {self.k}, threshold = {self.threshold}",
            )
            require(self.metric == "euclidean", f"kmeans is Euclidean: metric must be 'euclidean', got {self.metric!r}")
        else:
            require(
                (self.k > 0) != (self.threshold > 0),
                f"hierarchical needs exactly one of k > 0 and threshold > 0, got k = {self.k}, threshold = {self.threshold}",
            )
            require(
                self.linkage != "ward" or self.metric == "euclidean",
                f"ward linkage needs metric 'euclidean', got {self.metric!r}",
            )


def cluster_updates(updates: np.ndarray, params: FLHCParams, seed: int) -> np.ndarray:
    """Labels 0..K-1 of the update rows: agglomerative clustering (cut at ``k`` or ``threshold``) or k-means with ``k``."""
    if len(updates) < 2:
        return np.zeros(len(updates), dtype=np.int64)
    k = min(params.k, len(updates))
    if params.clusterer == "kmeans":
        return relabel(kmeans(updates, k, seed))
    model = AgglomerativeClustering(
        n_clusters=k or None,
        distance_threshold=params.threshold or None,
        metric=params.metric,
        linkage=params.linkage,
    )
    labels = model.fit_predict(updates)
    work.charge(work.distances(len(updates), len(updates), updates.shape[1]) + work.linkage(len(updates)))
    return relabel(labels)


class FLHC(Method):
    """FL+HC and One-Shot: FedAvg for ``warmup`` rounds; then every client trains the global model once, and the
    server clusters their updates; from then on each cluster trains its own model by FedAvg, never re-clustered.

    Counting: the clustering round is a training round of every client (one model down, one up each).
    """

    name = "flhc"
    Params = FLHCParams

    @property
    def reclusters(self) -> bool:
        """No: one clustering, after the warm-up."""
        return False

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Every client trains the global model at the clustering round; otherwise a uniform sample trains its cluster's model."""
        if rnd == self.params.warmup:
            everyone = np.arange(self.ctx.num_clients)
            return Plan(everyone, self.assignment[everyone], mu=self.params.mu)
        return self.uniform_plan(rng)

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """At the clustering round, cluster the updates and average each cluster's uploads; otherwise average per cluster."""
        if rnd != self.params.warmup:
            self.models = self.average(result)
            return
        updates = flat_updates(result.params, self.models, result.plan.start_models)
        self.measure_updates(updates)
        before, labels = self.assignment, cluster_updates(updates, self.params, self.ctx.seed)
        self.remix(before, labels, remix_models(self.models, before, labels))
        self.assignment = labels
        self.events.clustering(labels)
        self.models = self.average(result, clusters=labels)

    def measure_updates(self, updates: np.ndarray) -> None:
        """Record the smallest, median and largest update norm at the clustering."""
        work.charge(work.norms(updates.size))
        norms = np.linalg.norm(updates, axis=1)
        for name, stat in (("update_norm_min", np.min), ("update_norm_median", np.median), ("update_norm_max", np.max)):
            self.events.measure(name, float(stat(norms)))
