"""``ifca``: K models; each participant evaluates all and trains the one with the lowest loss (Ghosh et al., NeurIPS 2020)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.methods import server_work as work
from driftbench.methods.base import Method
from driftbench.methods.clustering import ClusterCountParams, independent_inits
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan, sample_participants


@dataclass(frozen=True)
class IFCAParams(ClusterCountParams):
    """``k`` models, FedProx's ``mu``, and ``freeze_after``: the round from which no client moves (0: never)."""

    freeze_after: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.freeze_after >= 0, f"freeze_after must be >= 0 (0: never freeze), got {self.freeze_after}")


class IFCA(Method):
    """IFCA: participants download all K models, pick the lowest training loss, and train that model.

    The K models start from independent initialisations (each a shuffle of the shared one's
    entries), otherwise every loss ties. Clients not sampled keep the model they chose last
    (model 0 before their first round). Overhead per participant: K - 1 model downloads
    beyond FedAvg's one, K losses uploaded, K extra forward passes.
    ``freeze_after`` > 0 is CFLGT's protocol for its baselines (clustering completed in
    pre-training with every client involved, then no client moves); choice: at that round every
    client picks its model once more, and from then on no client evaluates or moves.
    """

    name = "ifca"
    Params = IFCAParams

    @property
    def reclusters(self) -> bool:
        """Only without a freeze: a frozen IFCA's partition is fixed by design."""
        return not self.params.freeze_after

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Sample participants; each picks the bank model with its lowest loss (every client at the freeze round)."""
        if rnd == 0:
            self.models = independent_inits(self.ctx.init_params, self.params.k, self.ctx.seed)
        participants = sample_participants(rng, self.ctx.num_clients, self.ctx.train.participants)
        freeze = self.params.freeze_after
        if freeze == 0 or rnd <= freeze:
            losses = self.choose(clients, participants, trains_one=True)
            if rnd == freeze > 0:
                rest = np.setdiff1d(np.arange(self.ctx.num_clients), participants)
                losses = np.concatenate([losses, self.choose(clients, rest, trains_one=False)])
            self.measure_choice(losses)
        return Plan(participants, self.assignment[participants], mu=self.params.mu)

    def choose(self, clients: ClientQueries, choosers: np.ndarray, trains_one: bool) -> np.ndarray:
        """``choosers`` evaluate every bank model and take the one with the lowest loss; returns their losses."""
        losses = clients.losses(choosers, np.arange(self.num_models), trains_one=trains_one)
        before = self.assignment[choosers]
        self.assignment[choosers] = best_models(losses)
        self.events.changes("assign", choosers, before, self.assignment[choosers])
        return losses

    def measure_choice(self, losses: np.ndarray) -> None:
        """Record the round's decision quantities: the mean gap between each participant's two lowest losses, models chosen."""
        if losses.shape[1] >= 2:
            lowest = np.sort(losses, axis=1)
            self.events.measure("loss_gap_mean", float((lowest[:, 1] - lowest[:, 0]).mean()))
        self.events.measure("models_chosen", len(np.unique(np.argmin(losses, axis=1))))


def best_models(losses: np.ndarray) -> np.ndarray:
    """Each row's lowest-loss model (the first on ties)."""
    work.charge(losses.size)
    best: np.ndarray = np.argmin(losses, axis=1).astype(np.int64)
    return best
