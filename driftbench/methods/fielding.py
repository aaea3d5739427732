"""``fielding``: per-client adjustment with selective global re-clustering (FIELDING, paper 003, sections 2.2-2.3, Alg. 1-3)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from driftbench.config import RECORDED_WHEN_SET, require
from driftbench.methods import server_work as work
from driftbench.methods.bank import replicate
from driftbench.methods.base import Method, ProxParams
from driftbench.methods.clustering import (
    KERNEL_CHUNK,
    any_cluster_wider_than,
    as_kernel_tensor,
    cluster_centers,
    kmeans_by_silhouette,
    nearest_center,
    pairwise_distances,
    per_cluster_participants,
    remix_models,
    unit_vectors,
)
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan

REPRESENTATIONS = ("label", "embedding", "gradient")
TRIGGERS = ("diameter", "center_shift", "every_drift")
SCOPES = ("drifted", "participants")  # which drifted clients report and move: all of them, or the round's sampled ones
# Distances on the scale Delta is set on (at most 2): L1 or Jensen-Shannon between label distributions,
# L2 between unit vectors (embeddings, gradients), as the paper's Table 2 measures drift.
DISTANCES_FOR = {"label": ("l1", "js"), "embedding": ("l2",), "gradient": ("l2",)}


@dataclass(frozen=True)
class FieldingParams(ProxParams):
    """Representation, distance, re-clustering trigger, adaptive threshold (c, m), K search of k-means and drift scope."""

    representation: str = "label"
    distance: str = "l1"
    trigger: str = "diameter"
    c: float = 0.1
    m: float = 2.0
    k_min: int = 2
    k_max: int = 10
    restarts: int = 1
    silhouette_sample: int = 1000
    scope: str = field(default="drifted", metadata={RECORDED_WHEN_SET: True})

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            self.representation in REPRESENTATIONS,
            f"representation must be one of {', '.join(REPRESENTATIONS)}, got {self.representation!r}",
        )
        allowed = DISTANCES_FOR[self.representation]
        require(
            self.distance in allowed,
            f"distance {self.distance!r} does not suit representation {self.representation!r}: use {' or '.join(allowed)}",
        )
        require(self.trigger in TRIGGERS, f"trigger must be one of {', '.join(TRIGGERS)}, got {self.trigger!r}")
        require(self.c > 0, f"c must be > 0, got {self.c}")
        require(self.m >= 1, f"m must be >= 1, got {self.m}")
        require(2 <= self.k_min <= self.k_max, f"need 2 <= k_min <= k_max, got {self.k_min}..{self.k_max}")
        require(self.restarts >= 1, f"restarts must be >= 1, got {self.restarts}")
        require(self.silhouette_sample >= 10, f"silhouette_sample must be >= 10, got {self.silhouette_sample}")
        require(self.scope in SCOPES, f"scope must be one of {', '.join(SCOPES)}, got {self.scope!r}")


def next_delta(delta: float, reclustered: bool, reclustered_before: bool, c: float, m: float) -> float:
    """FIELDING's threshold after a drift round: x m after re-clustering at two consecutive drift rounds, else max(c, delta-c)."""
    return m * delta if reclustered and reclustered_before else max(c, delta - c)


def largest_diameter(points: torch.Tensor, labels: np.ndarray, metric: str) -> float:
    """The largest distance between two points of one cluster (0 when every cluster has one point)."""
    widest = 0.0
    index = torch.as_tensor(labels, device=points.device)
    for c in np.unique(labels):
        members = points[index == int(c)]
        for i in range(0, len(members), KERNEL_CHUNK):
            widest = max(widest, float(pairwise_distances(members[i : i + KERNEL_CHUNK], members, metric).max()))
    return widest


def mean_embedding(features: torch.Tensor, probs: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
    """A client's embedding representation: its mean classifier-input feature, scaled to unit L2 norm."""
    mean = features.double().mean(0)
    unit: torch.Tensor = mean / mean.norm().clamp_min(1e-12)
    return unit.cpu().numpy()


class Fielding(Method):
    """FIELDING: drifted clients move to the nearest center; all clients are re-clustered when a cluster grows wider than Delta.

    - Drifted clients are ``ClientQueries.changed``: a client knows its own data changed and
      reports its new representation (label distribution, mean embedding or gradient).
    - Moves use the centers as they were before any move of the round, so the order in which
      drifted clients are handled does not matter.
    - Re-clustering covers all clients (not only participants): k-means on the stored
      representations, K in k_min..k_max by silhouette under the chosen distance (over a seeded
      sample of ``silhouette_sample`` clients when there are more); each new cluster's model
      is the mean of its members' previous cluster models.
    - Delta starts at c and is updated after every round with drifted clients (``next_delta``).
    - Participants: M/K per non-empty cluster; local training is FedProx with ``mu``.
    - ``trigger = "diameter"`` (default) is the paper's rule (two clients of one cluster farther
      apart than Delta), the rule its analysis covers; ``"center_shift"`` is the authors'
      released code: median centers, re-cluster when a center moves by more than a third of
      the mean distance between centers (Delta is then unused and logs no ``threshold`` events);
      ``"every_drift"`` is the baseline of the paper's Figure 2a, re-clustering all clients at
      every round with drifted clients (Delta is then unused and stays at c).
    - ``scope = "drifted"`` (default): every drifted client reports at once, sampled or not.
      ``"participants"`` is the baseline of the paper's Figure 2b: participants are drawn first
      and only the drifted ones among them report and move; a drifted client not sampled keeps
      its cluster and its old representation (which a global re-clustering then uses) until it
      is sampled, and reports then (the paper leaves open when such a client reports).
    - Embeddings and gradients are taken at bank model 0 when reported and are not refreshed
      later (the paper uses a separately trained, frozen shared model; driftbench has none). On
      ``label-swap`` a frozen copy of the initial model instead changed seed 0's final accuracy
      by 0.002 (0.809 vs 0.807): the moving probe is not what limits the gradient variant there.
    - Distances live on Delta's scale, at most 2 (the paper's Table 2): L1 or Jensen-Shannon
      between label distributions, L2 between unit-norm embeddings or gradients.
    - The authors' repository (SophiaLi06/FIELDING) could not be fetched for this comparison;
      the ``center_shift`` description above follows appendix C and an earlier reading.
    - diagnostics.csv records, at each drift round, fielding_delta, fielding_max_diameter (the
      widest cluster after the moves, which the trigger compares with Delta) and fielding_moved.
    """

    name = "fielding"
    Params = FieldingParams

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Cluster at round 0, handle the drifted clients that report, and draw M/K participants per cluster.

        Scope ``"drifted"`` handles this round's drifted clients before the draw; ``"participants"``
        draws first and handles the sampled clients that drifted since they last reported.
        """
        if rnd == 0:
            self.start(clients)
        elif self.params.scope == "drifted":
            self.handle_drift(clients, np.asarray(clients.changed))
        else:
            self.unreported[clients.changed] = True
        participants = per_cluster_participants(rng, self.assignment, self.ctx.train.participants)
        if self.params.scope == "participants":
            reporting = participants[self.unreported[participants]]
            self.unreported[reporting] = False
            self.handle_drift(clients, reporting)
        return Plan(participants, self.assignment[participants], mu=self.params.mu)

    def start(self, clients: ClientQueries) -> None:
        """Every client reports; k-means of all of them; one model per cluster; Delta = c."""
        self.representations = self.represent(clients, np.arange(self.ctx.num_clients))
        self.unreported = np.zeros(self.ctx.num_clients, dtype=bool)  # drifted since its last report (scope "participants")
        self.delta, self.reclustered_before = self.params.c, False
        self.assignment = self.global_clusters()
        self.events.clustering(self.assignment)
        self.models = replicate(self.ctx.init_params, int(self.assignment.max()) + 1)

    def represent(self, clients: ClientQueries, ids: np.ndarray) -> np.ndarray:
        """The reported representations of clients ``ids`` (rows)."""
        kind = self.params.representation
        if kind == "label":
            counts = clients.label_histograms(ids)
            distributions: np.ndarray = counts / np.maximum(counts.sum(1, keepdims=True), 1)
            return distributions
        if kind == "embedding":
            return clients.features(ids, 0, mean_embedding)
        grads = clients.gradients(ids, 0)
        return unit_vectors(grads)

    def global_clusters(self) -> np.ndarray:
        """k-means of all stored representations with K chosen by silhouette."""
        p = self.params
        return kmeans_by_silhouette(
            self.representations, p.k_min, p.k_max, self.ctx.seed, p.distance, p.restarts, p.silhouette_sample
        )

    def handle_drift(self, clients: ClientQueries, changed: np.ndarray) -> bool:
        """Move the reporting drifted clients ``changed``, re-cluster everyone if the trigger fires, update Delta.

        Returns whether it re-clustered; a round where no drifted client reports is no drift event.
        """
        if not len(changed):
            return False
        moved, points, centers = self.adjust(changed, self.represent(clients, changed))
        self.events.changes("move", changed, self.assignment[changed], moved[changed])
        reclustered = self.needs_reclustering(points, moved, centers)
        self.measure_drift(changed, moved, points)
        if reclustered:
            self.assignment = self.global_clusters()
            self.events.clustering(self.assignment)
            self.remix(moved, self.assignment, remix_models(self.models, moved, self.assignment))
        else:
            self.assignment = moved
        if self.params.trigger != "every_drift":  # there every drift event re-clusters: Delta would only grow
            self.set_delta(next_delta(self.delta, reclustered, self.reclustered_before, self.params.c, self.params.m))
        self.reclustered_before = reclustered
        return reclustered

    def measure_drift(self, changed: np.ndarray, moved: np.ndarray, points: torch.Tensor) -> None:
        """Log the trigger's inputs this drift round: Delta, the widest cluster after the moves, clients moved."""
        with work.paused():  # a record for the reader, not part of the method's server work
            self.events.measure("fielding_delta", self.delta)
            self.events.measure("fielding_max_diameter", largest_diameter(points, moved, self.params.distance))
        self.events.measure("fielding_moved", float((moved[changed] != self.assignment[changed]).sum()))

    def set_delta(self, delta: float) -> None:
        """Adopt the new Delta, logging a ``threshold`` event when it changed and is the trigger's threshold."""
        if delta != self.delta and self.params.trigger == "diameter":
            self.events.record("threshold", value=delta)
        self.delta = delta

    def adjust(self, changed: np.ndarray, reported: np.ndarray) -> tuple[np.ndarray, torch.Tensor, torch.Tensor]:
        """Store the drifted clients' reports and move each to the nearest center as it was before any move.

        Returns the moved assignment, all representations (kernel tensor) and the centers used.
        """
        reducer = "mean" if self.params.trigger == "diameter" else "median"
        centers = cluster_centers(as_kernel_tensor(self.representations), self.assignment, self.num_models, reducer)
        self.representations[changed] = reported
        points = as_kernel_tensor(self.representations)
        moved = self.assignment.copy()
        moved[changed] = nearest_center(points[changed], centers, self.params.distance)
        return moved, points, centers

    def needs_reclustering(self, points: torch.Tensor, moved: np.ndarray, centers: torch.Tensor) -> bool:
        """Trigger: a cluster wider than Delta (paper), a center moving > 1/3 of the mean center distance (code), or always."""
        metric = self.params.distance
        if self.params.trigger == "every_drift":
            return True
        if self.params.trigger == "diameter":
            return any_cluster_wider_than(points, moved, metric, self.delta)
        present = ~torch.isnan(centers).any(1)
        old = centers[present]
        if len(old) < 2:
            return False
        between = pairwise_distances(old, old, metric)
        limit = between.sum() / (len(old) * (len(old) - 1)) / 3
        new = cluster_centers(points, moved, len(centers), "median")[present]
        shift = pairwise_distances(old, torch.nan_to_num(new), metric).diagonal()
        return bool((shift[~torch.isnan(new).any(1)] > limit).any())
