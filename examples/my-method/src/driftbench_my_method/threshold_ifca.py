"""``threshold-ifca``: IFCA (Ghosh et al., NeurIPS 2020) whose clients open a new cluster when no model fits them.

Each round the participants evaluate every cluster model and train the one with the lowest
loss, as in IFCA. Participants whose lowest loss exceeds ``threshold`` fit no model: from round
``warmup`` on, while fewer than ``max_clusters`` exist, they share one new cluster whose model
starts as a copy of the bank model with their lowest mean loss. Choice: one new cluster per
round, however many clients need it, so one drift event opens one cluster, not one per client.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from driftbench.config import require
from driftbench.methods import server_work
from driftbench.methods.base import Method
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, sample_participants


@dataclass(frozen=True)
class ThresholdParams:
    """FedProx's ``mu``, the loss above which clients open a cluster, the rounds before they may, the cluster cap."""

    mu: float = 0.0
    threshold: float = 1.0
    warmup: int = 20
    max_clusters: int = 8

    def __post_init__(self) -> None:
        require(self.mu >= 0, f"mu must be >= 0, got {self.mu}")
        require(self.threshold > 0, f"threshold must be > 0, got {self.threshold}")
        require(self.max_clusters >= 1, f"max_clusters must be >= 1, got {self.max_clusters}")


class ThresholdIFCA(Method):
    """IFCA that starts from one model and adds a cluster for the participants no model fits."""

    name = "threshold-ifca"
    Params = ThresholdParams

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Sample participants; each takes its lowest-loss model, or a new cluster when even that loss is too high."""
        participants = sample_participants(rng, self.ctx.num_clients, self.ctx.train.participants)
        losses = clients.losses(participants, np.arange(self.num_models), trains_one=True)
        server_work.charge(losses.size)  # each participant's lowest loss
        lowest = losses.min(axis=1)
        self.events.measure("lowest_loss_max", float(lowest.max()))
        before = self.assignment[participants]
        self.assignment[participants] = losses.argmin(axis=1)
        unfit = lowest > self.params.threshold
        created = np.zeros(0, dtype=np.int64)
        if rnd >= self.params.warmup and unfit.any() and self.num_models < self.params.max_clusters:
            created = np.array([self.open_cluster(participants[unfit], losses[unfit])])
        self.events.regrouping("assign", self.assignment, participants, before, created)
        return Plan(participants, self.assignment[participants], mu=self.params.mu)

    def open_cluster(self, clients: np.ndarray, losses: np.ndarray) -> int:
        """Copy the model these clients fit best into a new cluster, move them there; its index."""
        source = int(losses.mean(axis=0).argmin())
        self.models = {n: torch.cat([bank, bank[source : source + 1]]) for n, bank in self.models.items()}
        self.assignment[clients] = self.num_models - 1
        return self.num_models - 1
