"""``oracle``: clusters equal the ground-truth groups at every round (an upper bound; not from a paper)."""

from __future__ import annotations

import numpy as np
import torch

from driftbench.errors import RunError
from driftbench.methods.base import ClientQueries, Method, Plan, ProxParams, replicate


class Oracle(Method):
    """One model per true group; a group first seen later starts from the shared initialisation."""

    name = "oracle"
    Params = ProxParams
    oracle = True

    def plan(self, rnd: int, clients: ClientQueries, rng: np.random.Generator) -> Plan:
        """Assign every client to its true group; sample participants uniformly."""
        truth = clients.ground_truth()
        if (truth < 0).any():
            raise RunError("oracle needs a trace with ground-truth groups for every client")
        missing = int(truth.max()) + 1 - self.num_models
        if missing > 0:
            fresh = replicate(self.ctx.init_params, missing)
            self.models = {n: torch.cat([m, fresh[n]]) for n, m in self.models.items()}
        self.assignment = truth
        return self.uniform_plan(rng)
