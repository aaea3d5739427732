"""``fedavg`` / ``fedprox``: one global model, sample-weighted averaging (McMahan 2017; Li 2020)."""

from __future__ import annotations

import numpy as np

from driftbench.methods.base import Method, ProxParams
from driftbench.methods.queries import ClientQueries
from driftbench.methods.rounds import Plan


class FedAvg(Method):
    """One global model; each round a uniform sample of clients trains it (FedProx when mu > 0 adds mu/2 ||w - w_global||^2)."""

    name = "fedavg"
    Params = ProxParams
    clustering = False

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Sample participants uniformly; all start from the global model."""
        return self.uniform_plan(rng)
