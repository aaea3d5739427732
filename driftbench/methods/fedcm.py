"""``fedcm``: Fed-CM (000 section 4): gradient-path similarity, modularity clustering, migration by update angle.

Warm-up: every client trains ``warmup_steps`` local steps from the shared initial model and
uploads its classifier layer's change at every step (the gradient path, Eq. 2-3). The server
builds a graph weighted by the cosine similarity of the flattened paths (Eq. 4) and groups
clients by modularity-maximising local moves from singletons (Eq. 5, Algorithm 1); Table 2's
alternatives (K-means with N clusters, hierarchical clustering cut at distance L) replace that
step through ``clustering``. Then, each
round, a participant whose classifier update points away from its cluster's update direction
(cosine < tau, Eq. 6-8) migrates to the cluster whose direction is closest (Eq. 9).

The personalized layer (4.1: the classifier) is shared by each cluster (``personal = "shared"``, section 4 read
literally: ``fedcm-literal``) or kept on each client as in FedPer, the paper's source for the term
(``personal = "local"``): a cluster then averages only the layers below it, and each client is served its cluster's
layers with its own classifier. docs/methods.md ("Fed-CM readings") measures both on Table 1's setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import torch
from sklearn.cluster import AgglomerativeClustering
from sklearn.metrics.pairwise import cosine_similarity

from driftbench.config import RECORDED_WHEN_SET, require
from driftbench.engine.batched import Params as NamedTensors  # in the class body below, Params names the parameter dataclass
from driftbench.methods import server_work as work
from driftbench.methods.bank import cluster_average, replicate
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.clustering import flat_updates, kmeans, relabel, unit_vectors
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, RunContext, TrainResult

CLUSTERINGS = ("modularity", "kmeans", "hierarchical")
PERSONAL = ("shared", "local")  # where the personalized layer lives: in the cluster's model, or on each client (FedPer)


@dataclass(frozen=True)
class FedCMParams(ProxParams):
    """Warm-up length, migration threshold ``tau``, participations in a row below it before a move, migration switch,
    and the paths' clustering: ``modularity`` (Fed-CM's), or Table 2's ``kmeans`` (``n_clusters``) and ``hierarchical``
    (cut at cosine distance ``threshold``).

    Choice: the paper gives no tau; -0.5 (over 120 degrees) moves only "significant deviations" (4.3); 0 moved clients on noise.
    ``confirm`` = 1 is section 4.3 as written (an outlier moves at once); 2 waits for a second deviation in a row.
    ``migrate`` = false is Fed-CM*. ``personal``: PERSONAL (the class docstring of ``FedCM``).
    """

    warmup_steps: int = 20
    tau: float = -0.5
    confirm: int = field(default=1, metadata={RECORDED_WHEN_SET: True})
    migrate: bool = True
    clustering: str = field(default="modularity", metadata={RECORDED_WHEN_SET: True})
    n_clusters: int = field(default=5, metadata={RECORDED_WHEN_SET: True})
    threshold: float = field(default=0.9, metadata={RECORDED_WHEN_SET: True})
    personal: str = field(default="shared", metadata={RECORDED_WHEN_SET: True})

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.warmup_steps >= 1, f"warmup_steps must be >= 1, got {self.warmup_steps}")
        require(-1 <= self.tau <= 1, f"tau must be in [-1, 1] (a cosine), got {self.tau}")
        require(self.confirm >= 1, f"confirm must be >= 1 (participations in a row), got {self.confirm}")
        require(
            self.clustering in CLUSTERINGS,
            f"clustering must be one of {', '.join(CLUSTERINGS)}, got {self.clustering!r}",
        )
        require(self.n_clusters >= 1, f"n_clusters must be >= 1, got {self.n_clusters}")
        require(0 < self.threshold <= 2, f"threshold must be in (0, 2] (a cosine distance), got {self.threshold}")
        require(self.personal in PERSONAL, f"personal must be one of {', '.join(PERSONAL)}, got {self.personal!r}")
        require(
            self.personal == "shared" or self.aggregator == "mean",
            f"personal = 'local' averages the clusters' shared layers only: aggregator must be 'mean', got {self.aggregator!r}",
        )


def path_similarity(paths: np.ndarray) -> np.ndarray:
    """Eq. 4: cosine similarity (clients x clients) of gradient paths flattened to rows (clients x steps*params)."""
    work.charge(work.cosine_similarity(len(paths), len(paths), paths.shape[1]))
    similarity: np.ndarray = cosine_similarity(paths)
    return similarity


def similarity_graph(similarity: np.ndarray) -> nx.Graph:
    """Clients as nodes, an edge of weight s_ij for every pair with s_ij > 0.

    Choice (the paper is silent): modularity needs non-negative weights, so pairs whose paths
    point apart (s_ij <= 0) get no edge, and there are no self-loops.
    """
    weights = np.where(similarity > 0, similarity, 0.0)
    np.fill_diagonal(weights, 0.0)
    return nx.from_numpy_array(weights)


def modularity_local_moves(graph: nx.Graph, seed: int) -> np.ndarray:
    """Algorithm 1: from singletons, move nodes to the neighbouring cluster with the largest modularity gain until none gains.

    This is the first level of Louvain (networkx), without Louvain's later graph aggregation.
    """
    partition = next(nx.community.louvain_partitions(graph, weight="weight", resolution=1, seed=seed))
    work.charge(work.modularity_moves(graph.number_of_edges()))
    labels = np.zeros(graph.number_of_nodes(), dtype=np.int64)
    for label, members in enumerate(sorted(partition, key=min)):
        labels[sorted(members)] = label
    return labels


def table2_clustering(paths: np.ndarray, params: FedCMParams, seed: int) -> np.ndarray:
    """Table 2's alternatives to the modularity step, on the same gradient paths: labels 0..K-1.

    Choice (000 l.207 gives only N and L): K-means runs on the unit paths (Euclidean there is monotone in Eq. 4's
    cosine); hierarchical clustering is average-linkage on the cosine distance 1 - s_ij, cut at L.
    """
    if params.clustering == "kmeans":
        return relabel(kmeans(unit_vectors(paths), min(params.n_clusters, len(paths)), seed))
    model = AgglomerativeClustering(n_clusters=None, distance_threshold=params.threshold, metric="precomputed", linkage="average")
    labels = model.fit_predict(np.clip(1 - path_similarity(paths), 0, 2))
    work.charge(work.linkage(len(paths)))
    return relabel(labels)


def cluster_cosines(updates: np.ndarray, cluster: np.ndarray, num_clusters: int) -> np.ndarray:
    """Eq. 6-8: cosine (participants x clusters) of each participant's update direction with each cluster's direction.

    A cluster's direction is the norm-weighted mean of its participants' unit updates,
    normalised (Eq. 7), i.e. the direction of their summed updates. Clusters without
    participants this round have no direction: their column is -inf.

    Choice (000 lines 124-145): Eq. 7 sums all of C_c^t, the participant too; any participation may migrate; emptied: no target.
    """
    summed = np.zeros((num_clusters, updates.shape[1]))
    np.add.at(summed, cluster, updates)
    directions = unit_vectors(summed)
    work.charge(updates.size + work.matmul(updates.shape[0], updates.shape[1], num_clusters))
    scores: np.ndarray = unit_vectors(updates) @ directions.T
    scores[:, ~directions.any(1)] = -np.inf
    return scores


def migrations(scores: np.ndarray, cluster: np.ndarray, tau: float) -> np.ndarray:
    """Eq. 9: a participant whose cosine with its own cluster is below ``tau`` moves to the cluster of highest cosine."""
    own = scores[np.arange(len(cluster)), cluster]
    return np.where(own < tau, scores.argmax(1), cluster)


class FedCM(Method):
    """Fed-CM; ``migrate = false`` is the paper's Fed-CM* ablation (clusters fixed after the warm-up).

    Counting: the warm-up runs as ordinary training rounds of at most ``participants`` clients
    each (ceil(clients / participants) rounds, disjoint slices, all from the shared initial
    model, bank unchanged), so its compute and model traffic are on the clock; the paths
    (steps x classifier size numbers per client) are extra upload. Clusters then start from the
    shared initial model (the paper clusters before federated training). Migration uses the
    uploaded models, so it costs no traffic. Choice: a migrating participant's update is not
    aggregated that round (it was trained from its old cluster's model on data that no longer
    fits it); it trains its new cluster's model from its next participation on.

    With ``personal = "local"`` the bank holds one model per client (its cluster's shared layers
    and its own classifier), and ``cluster`` is the partition; a participant still downloads and
    uploads a whole model (counted so: the classifier is a few per cent of it, and its update is
    what migration reads). With ``"shared"`` the bank holds one model per cluster.
    """

    name = "fedcm"
    Params = FedCMParams

    @property
    def reclusters(self) -> bool:
        """Only with migration (Fed-CM*: ``migrate`` false, clusters stay)."""
        return bool(self.params.migrate)

    @property
    def partition(self) -> np.ndarray:
        """Each client's cluster (with personal classifiers, many bank models serve one cluster)."""
        return self.cluster

    def setup(self, ctx: RunContext) -> None:
        """One shared model until every client has warmed up; no paths yet."""
        super().setup(ctx)
        self.head = (f"{ctx.classifier}.weight", f"{ctx.classifier}.bias")
        self.warmup_rounds = -(-ctx.num_clients // ctx.train.participants)
        self.paths: np.ndarray | None = None
        self.streaks = np.zeros(ctx.num_clients, dtype=np.int64)  # participations in a row below tau, per client
        self.cluster = np.zeros(ctx.num_clients, dtype=np.int64)
        self.shared: NamedTensors = {}  # personal = "local": each cluster's layers below the classifier (K x ...)

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Warm-up slice with recorded classifier paths, then uniform participants on their clusters' models."""
        if rnd < self.warmup_rounds:
            participants = np.array_split(np.arange(self.ctx.num_clients), self.warmup_rounds)[rnd]
            path_floats = self.params.warmup_steps * sum(self.ctx.init_params[n].numel() for n in self.head)
            return Plan(
                participants,
                np.zeros(len(participants), dtype=np.int64),
                mu=self.params.mu,
                record=self.head,
                local_steps=self.params.warmup_steps,
                upload_floats=path_floats,
            )
        return self.uniform_plan(rng)

    def aggregate(self, rnd: int, result: TrainResult) -> None:
        """Collect warm-up paths and cluster after the last slice; afterwards migrate, then average per cluster."""
        if rnd < self.warmup_rounds:
            self._collect(rnd, result)
            return
        participants = result.plan.participants
        start = self.cluster[participants]
        weights = result.num_samples
        if self.params.migrate:
            target = self._migrate(result, start)
            weights = np.where(target == start, weights, 0)
        if self.params.personal == "shared":
            self.models = self.average(result, weights=weights)
            self.assignment = self.cluster.copy()
            return
        for n in self.head:
            self.models[n][torch.as_tensor(participants, device=self.models[n].device)] = result.params[n]
        self.shared = cluster_average(self.shared, {n: result.params[n] for n in self.shared}, start, weights)
        self._serve_clusters()

    def _migrate(self, result: TrainResult, start: np.ndarray) -> np.ndarray:
        """Eq. 6-9 on the participants' classifier updates (after ``confirm`` deviations in a row); their new clusters."""
        participants = result.plan.participants
        heads = {n: result.params[n] for n in self.head}
        updates = flat_updates(heads, {n: self.models[n] for n in self.head}, result.plan.start_models)
        scores = cluster_cosines(updates, start, self.num_clusters)
        own = scores[np.arange(len(start)), start]
        for cosine in own:
            self.events.measure("fedcm_own_cosine", cosine)
        streak = np.where(own < self.params.tau, self.streaks[participants] + 1, 0)
        target = np.where(streak >= self.params.confirm, migrations(scores, start, self.params.tau), start)
        self.streaks[participants] = np.where(target == start, streak, 0)
        self.cluster[participants] = target
        self.events.changes("migrate", participants, start, target)
        return target

    @property
    def num_clusters(self) -> int:
        """Clusters formed at the warm-up (migration moves clients between them, never adds one)."""
        return int(self.cluster.max()) + 1

    def _serve_clusters(self) -> None:
        """personal = "local": every client's bank model takes its cluster's shared layers (its classifier stays)."""
        index = torch.as_tensor(self.cluster, device=next(iter(self.models.values())).device)
        for n, layers in self.shared.items():
            self.models[n] = layers[index]

    def _collect(self, rnd: int, result: TrainResult) -> None:
        rows = torch.cat([result.path[n].reshape(len(result.plan.participants), -1) for n in self.head], dim=1)
        if self.paths is None:
            self.paths = np.zeros((self.ctx.num_clients, rows.shape[1]), dtype=np.float32)
        self.paths[result.plan.participants] = rows.cpu().numpy()
        if rnd == self.warmup_rounds - 1:
            if self.params.clustering == "modularity":
                self.cluster = modularity_local_moves(similarity_graph(path_similarity(self.paths)), self.ctx.seed)
            else:
                self.cluster = table2_clustering(self.paths, self.params, self.ctx.seed)
            self.events.clustering(self.cluster)
            self.paths = None
            if self.params.personal == "shared":
                self.models = replicate(self.ctx.init_params, self.num_clusters)
                self.assignment = self.cluster.copy()
                return
            self.models = replicate(self.ctx.init_params, self.ctx.num_clients)
            self.assignment = np.arange(self.ctx.num_clients)
            self.shared = replicate({n: p for n, p in self.ctx.init_params.items() if n not in self.head}, self.num_clusters)
