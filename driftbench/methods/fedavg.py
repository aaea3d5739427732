"""``fedavg`` / ``fedprox``: one global model, sample-weighted averaging (McMahan 2017; Li 2020)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from driftbench.config import require
from driftbench.methods.base import ClientQueries, Method, Plan, sample_participants


@dataclass(frozen=True)
class FedAvgParams:
    """``mu`` > 0 adds FedProx's proximal term mu/2 ||w - w_global||^2 to the local loss."""

    mu: float = 0.0

    def __post_init__(self) -> None:
        require(self.mu >= 0, f"fedavg: mu must be >= 0, got {self.mu}")


class FedAvg(Method):
    """One global model; each round a uniform sample of clients trains it (FedProx when mu > 0)."""

    name = "fedavg"
    description = "one global model, sample-weighted averaging; FedProx with mu > 0"
    Params = FedAvgParams

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Sample participants uniformly; all start from the global model."""
        participants = sample_participants(rng, self.ctx.num_clients, self.ctx.train.participants)
        return Plan(participants, np.zeros(len(participants), dtype=np.int64), mu=self.params.mu)
